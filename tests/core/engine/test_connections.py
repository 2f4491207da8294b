"""What an Engine DB engine does with its pooled PostgreSQL connections: by default it pings before each
transaction and replaces a connection the server dropped unnoticed; a process that retries connection
errors itself (the overseer, a task process) opens its engine without the ping, sees one error, and the
next transaction connects afresh. A session keeps the marker (actor) its writes carry."""

from __future__ import annotations

import psycopg
import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.enums import ActorKind
from etl_craft.engine.database import EngineDb, open_engine_db, recording_migration
from etl_craft.engine.retry import TRANSIENT
from etl_craft.engine.schema import tables as t
from tests.fixtures import postgres as pg
from tests.fixtures.project import Project

pytestmark = pytest.mark.parametrize("dialect", [pytest.param("postgresql", marks=pytest.mark.postgres, id="postgres")])


def _backend(db: EngineDb) -> int:
    with db.read() as conn:
        return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def _drop_connections(database: str) -> None:
    with psycopg.connect(pg.admin_dsn(), autocommit=True) as admin:
        dropped = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchone()
    assert dropped is not None and dropped[0] >= 1


def test_an_engine_pings_a_pooled_connection_and_replaces_a_dropped_one(project: Project) -> None:
    db = open_engine_db(project.load())
    first = _backend(db)
    assert project.pg_database is not None
    _drop_connections(project.pg_database)
    assert _backend(db) != first
    db.dispose()


def test_an_engine_without_the_ping_fails_once_on_a_dropped_connection_then_connects_afresh(project: Project) -> None:
    db = open_engine_db(project.load(), ping=False)
    first = _backend(db)
    assert project.pg_database is not None
    _drop_connections(project.pg_database)
    with pytest.raises(TRANSIENT):
        _backend(db)
    assert _backend(db) != first
    db.dispose()


class _Markers:
    """The statements that set a session's marker, as the engine sends them."""

    def __init__(self, db: EngineDb) -> None:
        self.sent = 0
        sa.event.listen(db.engine, "before_cursor_execute", self._count)

    def _count(self, _conn, _cursor, statement: str, *_args) -> None:
        self.sent += "set_config('etl_craft.actor'" in statement


def _add_pipeline(db: EngineDb, code: str, actor: str) -> None:
    with acting_as(Actor(actor, ActorKind.HUMAN)), db.write() as conn:
        conn.execute(t.cfg_pipelines.insert().values(pipeline_code=code, pipeline_name=code, refresh_type="FULL"))


def _changes(db: EngineDb) -> dict[str, tuple[str, str | None]]:
    """By pipeline code: who created it, and in which migration (AUD_METADATA_CHANGES)."""
    with db.read() as conn:
        rows = conn.execute(
            sa.select(
                t.aud_metadata_changes.c.after_json, t.aud_metadata_changes.c.actor, t.aud_metadata_changes.c.migration
            ).where(t.aud_metadata_changes.c.table_name == "CFG_PIPELINES")
        ).all()
    return {row.after_json["PIPELINE_CODE"]: (row.actor, row.migration or None) for row in rows}


def test_a_session_keeps_its_marker_and_sets_it_again_only_when_it_may_have_changed(project: Project) -> None:
    db = open_engine_db(project.load(), ping=False)
    markers = _Markers(db)
    _add_pipeline(db, "first", "ann")
    backend = _backend(db)
    _add_pipeline(db, "second", "ann")
    assert (markers.sent, _backend(db)) == (1, backend)  # one session, one marker
    _add_pipeline(db, "third", "bob")  # another actor
    assert markers.sent == 2

    # A transaction that rolls back undoes the marker it set; the next write sets it again.
    with pytest.raises(ZeroDivisionError), acting_as(Actor("cat", ActorKind.HUMAN)), db.write():
        raise ZeroDivisionError
    _add_pipeline(db, "fourth", "cat")
    assert markers.sent == 4

    # A migration's marker lasts for its transaction only, and its SQL may change the session's settings.
    with acting_as(Actor("cat", ActorKind.HUMAN)), recording_migration("V2__more.sql"):
        with db.write() as conn:
            conn.execute(t.cfg_pipelines.insert().values(pipeline_code="fifth", pipeline_name="5", refresh_type="FULL"))
            conn.exec_driver_sql("SET etl_craft.actor = 'mallory'")
        with db.write() as conn:
            conn.execute(
                t.cfg_pipelines.insert().values(pipeline_code="fifth_b", pipeline_name="5", refresh_type="FULL")
            )
    _add_pipeline(db, "sixth", "cat")
    assert (markers.sent, _backend(db)) == (7, backend)
    assert _changes(db) == {
        "first": ("ann", None),
        "second": ("ann", None),
        "third": ("bob", None),
        "fourth": ("cat", None),
        "fifth": ("cat", "V2__more.sql"),
        "fifth_b": ("cat", "V2__more.sql"),
        "sixth": ("cat", None),
    }
    db.dispose()
