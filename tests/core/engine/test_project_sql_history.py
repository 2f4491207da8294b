"""The history a PostgreSQL project login can't write (ENGINE migration 0012): it holds no INSERT on
AUD_METADATA_CHANGES or SCHEMA_MIGRATIONS, so SQL that slipped past the statement check and reset the
purpose marker the guards read is still refused by the database; the metadata triggers record changes
with their owner's rights, and the runner records the file through etl_craft_record_project_migration."""

from __future__ import annotations

import hashlib

import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.enums import ActorKind
from etl_craft.core.errors import MigrationError
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t
from tests.core.engine.test_project_sql import (
    BENIGN,
    RESET_MARKER,
    RESTORE_MARKER,
    _other_login,
    _project_roles,
    _slip_past_the_check,
    _state,
)
from tests.fixtures.seed import seed_every_table

pytestmark = [pytest.mark.postgres, pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)]


@pytest.fixture
def seeded(engine_db: EngineDb) -> EngineDb:
    with engine_db.write() as conn:
        seed_every_table(conn)
    return engine_db


@pytest.mark.parametrize(
    ("statement", "table"),
    [
        (
            "INSERT INTO AUD_METADATA_CHANGES (ACTOR, ACTOR_KIND, TABLE_NAME, ROW_KEY, OPERATION, MIGRATION)"
            " VALUES ('someone else', 'HUMAN', 'CFG_PIPELINES', '1', 'DELETE', NULL)",
            "aud_metadata_changes",
        ),
        (
            "INSERT INTO SCHEMA_MIGRATIONS (SOURCE, VERSION, CHECKSUM) VALUES ('ENGINE', '9999_forged.sql', 'x')",
            "schema_migrations",
        ),
        (
            "INSERT INTO SCHEMA_MIGRATIONS (SOURCE, VERSION, CHECKSUM) VALUES ('PROJECT', '0099_forged.sql', 'x')",
            "schema_migrations",
        ),
    ],
    ids=["forge_a_metadata_change", "forge_an_engine_migration", "forge_a_project_migration"],
)
def test_history_written_behind_a_reset_marker_is_refused_by_the_database(
    seeded: EngineDb, statement: str, table: str
) -> None:
    before = _state(seeded)
    with pytest.raises(MigrationError) as refused:
        _slip_past_the_check(seeded, f"{BENIGN}{RESET_MARKER}{statement};\n{RESTORE_MARKER}")
    message = refused.value.message
    assert message.startswith("project migration '0001_slipped.sql' failed and was rolled back"), message
    assert f"permission denied for table {table}" in message, message
    assert _state(seeded) == before  # not even BENIGN, nor the file's record


def test_a_project_file_records_its_changes_and_itself_with_the_owners_rights(seeded: EngineDb) -> None:
    """The project login can't insert into either table, yet its CFG_ writes are recorded with the
    migration's actor, and the file as PROJECT with its checksum."""
    sql = (
        f"{BENIGN}UPDATE CFG_PIPELINES SET PIPELINE_NAME = 'Renamed' WHERE PIPELINE_CODE = 'benign';\n"
        "DELETE FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'benign';\n"
    )
    with seeded.read() as conn:
        before = conn.execute(sa.select(sa.func.max(t.aud_metadata_changes.c.change_id))).scalar() or 0
    with acting_as(Actor("deployer", ActorKind.HUMAN)):
        _slip_past_the_check(seeded, sql)
    with seeded.read() as conn:
        changes = conn.execute(
            sa.select(
                t.aud_metadata_changes.c.actor,
                t.aud_metadata_changes.c.actor_kind,
                t.aud_metadata_changes.c.table_name,
                t.aud_metadata_changes.c.operation,
                t.aud_metadata_changes.c.migration,
            )
            .where(t.aud_metadata_changes.c.change_id > before)
            .order_by(t.aud_metadata_changes.c.change_id)
        ).all()
        recorded = conn.execute(
            sa.select(t.schema_migrations.c.source, t.schema_migrations.c.checksum).where(
                t.schema_migrations.c.version == "0001_slipped.sql"
            )
        ).all()
        grants = conn.exec_driver_sql(
            "SELECT p.prosecdef, p.proconfig FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
            " WHERE n.nspname = current_schema() AND p.proname = 'etl_craft_record_change'"
        ).one()
        schema = conn.exec_driver_sql("SELECT current_schema()").scalar()
    assert [tuple(c) for c in changes] == [
        ("deployer", "HUMAN", "CFG_PIPELINES", op, "0001_slipped.sql") for op in ("INSERT", "UPDATE", "DELETE")
    ]
    assert [tuple(r) for r in recorded] == [("PROJECT", hashlib.sha256(sql.encode()).hexdigest())]
    assert grants.prosecdef is True
    assert grants.proconfig == [f"search_path=pg_catalog, {schema}, pg_temp"]


def test_a_login_that_may_not_grant_the_recording_function_refuses_the_file(seeded: EngineDb) -> None:
    """A CREATEROLE login holding the tables' and the schema's grant option but not the function's
    (it doesn't own it): the file is refused before it runs, naming the GRANT, and nothing is left."""
    with _other_login(seeded, "LOGIN CREATEROLE") as (login, other):
        with seeded.engine.connect() as raw:
            admin = raw.execution_options(isolation_level="AUTOCOMMIT")
            admin.exec_driver_sql(f"GRANT USAGE ON SCHEMA public TO {login} WITH GRANT OPTION")
            admin.exec_driver_sql(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {login} WITH GRANT OPTION")
            admin.exec_driver_sql(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {login} WITH GRANT OPTION")
            # PUBLIC may no longer run it, so the project role only has what the login can grant
            assert not admin.exec_driver_sql(
                "SELECT has_function_privilege(%s, 'etl_craft_record_project_migration(text, text)', 'EXECUTE')",
                (login,),
            ).scalar()
        before = _state(seeded)
        with pytest.raises(MigrationError) as refused:
            _slip_past_the_check(other, BENIGN)
        assert _state(seeded) == before
        with other.read() as conn:
            left = conn.exec_driver_sql("SELECT rolname FROM pg_roles WHERE rolname LIKE %s", (f"{login}_project_%",))
            assert left.all() == [], refused.value.message
    message = refused.value.message
    function = "public.etl_craft_record_project_migration(text, text)"
    assert f"login {login} can't grant the role project SQL runs as EXECUTE on function {function}" in message
    assert message.endswith(
        f"GRANT EXECUTE ON FUNCTION {function} TO {login} WITH GRANT OPTION; (or make it the function's owner)"
    )
    assert _project_roles(seeded) == []
