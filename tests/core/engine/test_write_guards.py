"""Only etl-craft writes the Engine DB (S3.I.3): plain connections are refused, append-only rows stay put."""

from __future__ import annotations

import sqlite3

import psycopg
import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.enums import ActorKind
from etl_craft.engine.schema import tables as t
from etl_craft.engine.schema.tables import TABLE_SPECS
from tests.fixtures import postgres as pg
from tests.fixtures.seed import seed_every_table

TABLES = [spec.name for spec in TABLE_SPECS]
APPEND_ONLY = [
    "AUD_RUN_INTERVENTIONS",
    "AUD_TASK_DOCUMENTATION",
    "AUD_DEPENDENCY_CONSUMPTION",
    "SCHEMA_MIGRATIONS",
    "AUD_GATE_DECISIONS",
    "AUD_ACTIONS",
    "AUD_METADATA_CHANGES",
    "AUD_ALERT_DELIVERIES",
]


class Plain:
    """A connection from outside etl-craft: the sqlite3 module or plain psycopg."""

    def __init__(self, engine_db) -> None:
        self.dialect = engine_db.dialect.name
        if self.dialect == "sqlite":
            self.conn = sqlite3.connect(engine_db.file, isolation_level=None)
        else:
            dbname = engine_db.engine.url.database
            self.conn = psycopg.connect(pg.admin_dsn(dbname), autocommit=True)

    def refusal(self, statement: str) -> str:
        error_types = (sqlite3.Error,) if self.dialect == "sqlite" else (psycopg.Error,)
        with pytest.raises(error_types) as caught:
            self.conn.execute(statement)
        return str(caught.value)

    def close(self) -> None:
        self.conn.close()


@pytest.fixture
def seeded(engine_db):
    with engine_db.write() as conn:
        seed_every_table(conn)
    return engine_db


@pytest.fixture
def plain(seeded):
    connection = Plain(seeded)
    yield connection
    connection.close()


def _expected(table: str, dialect: str) -> str:
    return "function: etl_craft_actor" if dialect == "sqlite" else f"{table} is written only by etl-craft"


@pytest.mark.parametrize("table", TABLES)
def test_a_plain_connection_cannot_insert_update_or_delete(plain: Plain, table: str) -> None:
    last_column = next(s for s in TABLE_SPECS if s.name == table).columns[-1].name
    for statement in (
        f"INSERT INTO {table} DEFAULT VALUES",
        f"UPDATE {table} SET {last_column} = {last_column}",
        f"DELETE FROM {table}",
    ):
        assert _expected(table, plain.dialect) in plain.refusal(statement), statement


POSTGRES_ONLY = pytest.mark.parametrize(
    "dialect", [pytest.param("postgresql", marks=pytest.mark.postgres, id="postgres")]
)


@POSTGRES_ONLY
@pytest.mark.parametrize("table", TABLES)
def test_a_plain_connection_cannot_truncate_on_postgres(plain: Plain, table: str) -> None:
    message = plain.refusal(f"TRUNCATE {table} CASCADE")
    assert f"{table} is written only by etl-craft" in message


@POSTGRES_ONLY
def test_the_refusal_names_the_command_to_use_on_postgres(plain: Plain) -> None:
    assert "change runs with etl-craft run, mark, cancel or reopen" in plain.refusal("DELETE FROM AUD_TASK_RUN_LOG")
    assert "project migration (etl-craft migrate)" in plain.refusal("DELETE FROM CFG_TASKS")


def test_a_plain_connection_can_still_read(plain: Plain) -> None:
    rows = plain.conn.execute("SELECT PIPELINE_CODE FROM CFG_PIPELINES").fetchall()
    assert [tuple(r) for r in rows] == [("seed",)]


def test_the_engine_writes_every_table(seeded) -> None:
    with seeded.read() as conn:
        counts = {
            spec.name: conn.execute(sa.select(sa.func.count()).select_from(t.T[spec.name.lower()])).scalar()
            for spec in TABLE_SPECS
        }
    assert all(count >= 1 for count in counts.values()), counts


@pytest.mark.parametrize("table", APPEND_ONLY)
def test_append_only_rows_refuse_update_and_delete_even_from_the_engine(seeded, table: str) -> None:
    target = t.T[table.lower()]
    column = list(target.columns)[-1]
    for statement in (target.update().values({column.name: column}), target.delete()):
        with pytest.raises(sa.exc.DBAPIError) as caught, seeded.write() as conn:
            conn.execute(statement)
        assert f"{table} is append-only" in str(caught.value)
    with seeded.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(target)).scalar() >= 1


def test_an_ended_attempt_is_final_but_a_live_one_can_change(seeded) -> None:
    attempts = t.aud_task_attempts
    with pytest.raises(sa.exc.DBAPIError) as caught, seeded.write() as conn:
        conn.execute(attempts.update().values(status="FAILED"))
    assert "final" in str(caught.value)
    with seeded.write() as conn:
        task_run = conn.execute(sa.select(t.aud_task_run_log.c.task_run_id)).scalar_one()
        conn.execute(attempts.insert().values(task_run_id=task_run, attempt_number=2, status="QUEUED"))
        changed = conn.execute(
            attempts.update().where(attempts.c.attempt_number == 2).values(status="CLAIMED")
        ).rowcount
    assert changed == 1


def test_engine_rows_carry_the_acting_identity(engine_db) -> None:
    with acting_as(Actor("carol@ops", ActorKind.HUMAN)), engine_db.write() as conn:
        seed_every_table(conn)
    with engine_db.read() as conn:
        run = conn.execute(
            sa.select(t.aud_pipelines_run_log.c.started_by, t.aud_pipelines_run_log.c.started_by_kind)
        ).one()
        pipeline = conn.execute(sa.select(t.cfg_pipelines.c.created_by)).scalar_one()
        change = conn.execute(
            sa.select(t.aud_metadata_changes.c.actor, t.aud_metadata_changes.c.actor_kind).where(
                t.aud_metadata_changes.c.table_name == "CFG_PIPELINES"
            )
        ).one()
    assert tuple(run) == ("carol@ops", "HUMAN")
    assert pipeline == "carol@ops"
    assert tuple(change) == ("carol@ops", "HUMAN")
