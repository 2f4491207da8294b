"""Project migrations write metadata, nothing else: hostile files are refused before any statement
runs, and the same statements slipped past that check are refused by the Engine DB itself."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import sqlalchemy as sa

from etl_craft.core.enums import MigrationSource
from etl_craft.core.errors import MigrationError
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import migrations
from etl_craft.engine.schema import tables as t
from etl_craft.engine.schema.project_sql import check_project_migration
from tests.fixtures.catalog import read_catalog
from tests.fixtures.seed import seed_every_table

BENIGN = "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('benign', 'Benign', 'FULL');\n"
LATER = "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('later', 'Later', 'FULL');\n"

# name -> (statement, what the refusal names). {marker} is a file the statement would create.
HOSTILE = {
    "rewrite_run_history": ("UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'FAILED'", "UPDATE of AUD_PIPELINES_RUN_LOG"),
    "forge_a_run": (
        "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, RUN_KEY, TRIGGER_KIND)"
        " SELECT PIPELINE_ID, 'SUCCESS', 'forged', 'MANUAL' FROM CFG_PIPELINES",
        "INSERT of AUD_PIPELINES_RUN_LOG",
    ),
    "forge_a_pause": (
        "INSERT INTO AUD_PIPELINE_PAUSES (PIPELINE_ID, REASON, PAUSED_BY) SELECT PIPELINE_ID, 'x', 'me' FROM CFG_PIPELINES",
        "INSERT of AUD_PIPELINE_PAUSES",
    ),
    "drop_metadata": ("DROP TABLE CFG_TASK_PARAMETERS", "DROP TABLE"),
    "drop_a_guard": ("DROP TRIGGER tr_aud_actions_guard_delete", "DROP TRIGGER"),
    "erase_the_audit": ("DELETE FROM AUD_ACTIONS", "DELETE of AUD_ACTIONS"),
    "copy_to_program": ("COPY (SELECT 1) TO PROGRAM 'touch {marker}'", "COPY"),
    "create_function": ("CREATE FUNCTION evil() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$", "CREATE FUNCTION"),
    "attach_a_file": ("ATTACH DATABASE '{marker}' AS evil", "ATTACH DATABASE"),
    "writable_schema": ("PRAGMA writable_schema = ON", "PRAGMA"),
    "forget_migrations": ("DELETE FROM SCHEMA_MIGRATIONS", "DELETE of SCHEMA_MIGRATIONS"),
    "cte_writes_the_audit": (
        "WITH gone AS (DELETE FROM AUD_ACTIONS RETURNING 1)"
        " INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) SELECT 'x', 'x', 'FULL' FROM gone",
        "DELETE of AUD_ACTIONS",
    ),
    "change_the_marker": (
        "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE)"
        " VALUES (set_config('etl_craft.purpose', '', true), 'x', 'FULL')",
        "set_config()",
    ),
    "set_role": ("SET ROLE postgres", "SET ROLE"),
    "session_authorization": ("SET SESSION AUTHORIZATION postgres", "SET SESSION"),
    "do_block": ("DO $$ BEGIN DELETE FROM aud_actions; END $$", "DO"),
    "call": ("CALL cleanup()", "CALL"),
    "vacuum": ("VACUUM", "VACUUM"),
    "commit": ("COMMIT", "COMMIT"),
    "forge_a_token": (
        "INSERT INTO CFG_API_TOKENS (NAME, TOKEN_SHA256, ROLE, CREATED_BY, CREATED_AT)"
        " VALUES ('x', 'y', 'admin', 'me', CURRENT_TIMESTAMP)",
        "INSERT of CFG_API_TOKENS",
    ),
}


def _state(db: EngineDb) -> tuple[object, ...]:
    """Every row of every Engine DB table, the catalog (tables, constraints, indexes, triggers)."""
    with db.read() as conn:
        rows = {
            spec.name: [tuple(r) for r in conn.execute(sa.select(t.T[spec.name.lower()]).order_by(sa.text("1")))]
            for spec in t.TABLE_SPECS
        }
        catalog = read_catalog(conn, db.dialect.name)
        triggers = db.dialect.trigger_names(conn)
    return rows, catalog, triggers


@pytest.fixture
def seeded(engine_db: EngineDb) -> EngineDb:
    with engine_db.write() as conn:
        seed_every_table(conn)
    return engine_db


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_migration_is_refused_before_any_statement_runs(
    seeded: EngineDb, project, tmp_path: Path, name: str
) -> None:
    statement, named = HOSTILE[name]
    marker = tmp_path / "created-by-the-migration"
    folder = project.root / "migrations"
    folder.mkdir()
    (folder / "0001_hostile.sql").write_text(f"{BENIGN}\n-- and then\n{statement.format(marker=marker)};\n")
    (folder / "0002_later.sql").write_text(LATER)
    before = _state(seeded)
    with pytest.raises(MigrationError) as refused:
        migrations.migrate(seeded, folder)
    message = refused.value.message
    assert message.startswith(f"project migration {folder / '0001_hostile.sql'}, statement 2 (line 4)"), message
    assert named in message, message
    assert "expected INSERT, UPDATE or DELETE of CFG_ rows" in message
    assert _state(seeded) == before
    assert not marker.exists()


def _slip_past_the_check(db: EngineDb, sql: str) -> None:
    """Run a file through the migration runner's lower layer, as if the statement check had passed."""
    migration = migrations.MigrationFile(
        MigrationSource.PROJECT, "0001_slipped.sql", hashlib.sha256(sql.encode()).hexdigest(), sql
    )
    migrations._apply(db, migration)


# What each Engine DB itself refuses of project SQL (the statement check refuses all of HOSTILE).
# On PostgreSQL the guard triggers refuse writes to etl-craft's tables and the DDL event trigger (a
# superuser migrates here) refuses DDL; the SQLite authorizer refuses everything but metadata writes.
BY_THE_DATABASE = {
    "sqlite": [
        "rewrite_run_history",
        "forge_a_run",
        "forge_a_pause",
        "drop_metadata",
        "drop_a_guard",
        "erase_the_audit",
        "attach_a_file",
        "writable_schema",
        "forget_migrations",
        "forge_a_token",
    ],
    "postgresql": [
        "rewrite_run_history",
        "forge_a_run",
        "forge_a_pause",
        "drop_metadata",
        "erase_the_audit",
        "create_function",
        "forget_migrations",
        "cte_writes_the_audit",
        "forge_a_token",
    ],
}
PG_GUARD_TRIGGER = "DROP TRIGGER tr_aud_actions_guard ON AUD_ACTIONS"


def _database_cases() -> list[object]:
    return [
        pytest.param(dialect, name, marks=getattr(pytest.mark, "sqlite" if dialect == "sqlite" else "postgres"))
        for dialect, names in BY_THE_DATABASE.items()
        for name in names
    ]


@pytest.mark.parametrize(("dialect", "name"), _database_cases(), indirect=["dialect"])
def test_the_engine_db_refuses_what_slips_past_the_check(
    seeded: EngineDb, tmp_path: Path, dialect: str, name: str
) -> None:
    statement = HOSTILE[name][0].format(marker=tmp_path / "created")
    before = _state(seeded)
    with pytest.raises(MigrationError) as refused:
        _slip_past_the_check(seeded, f"{BENIGN}{statement};\n")
    assert "failed and was rolled back" in refused.value.message
    assert any(word in refused.value.message for word in ("not authorized", "written only by etl-craft", "refused"))
    assert _state(seeded) == before
    assert not (tmp_path / "created").exists()


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
@pytest.mark.parametrize(
    ("script", "found"),
    [
        (
            "SELECT set_config('etl_craft.purpose', '', true);\n"
            "UPDATE AUD_PIPELINES_RUN_LOG SET RUN_KEY = 'forged';\n"
            "SELECT set_config('etl_craft.purpose', 'project-sql', true);\n",
            "it wrote rows of AUD_PIPELINES_RUN_LOG, which only etl-craft writes",
        ),
        ("SELECT set_config('etl_craft.purpose', '', true);\n", "it changed the setting etl_craft.purpose to ''"),
    ],
    ids=["history_rewritten_behind_a_reset_marker", "marker_left_reset"],
)
def test_postgresql_judges_project_sql_by_what_it_did(seeded: EngineDb, script: str, found: str) -> None:
    """SQL can reset the purpose marker the guard triggers read; the transaction's own row counts and
    the marker, read again before it commits, still show it, and the whole file is rolled back."""
    before = _state(seeded)
    with pytest.raises(MigrationError) as refused:
        _slip_past_the_check(seeded, f"{BENIGN}{script}")
    message = refused.value.message
    assert message.startswith("project migration '0001_slipped.sql' failed and was rolled back"), message
    assert found in message, message
    assert _state(seeded) == before


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
def test_postgresql_refuses_dropping_a_guard_from_project_sql(seeded: EngineDb) -> None:
    before = _state(seeded)
    with pytest.raises(MigrationError) as refused:
        _slip_past_the_check(seeded, f"{PG_GUARD_TRIGGER};\n")
    assert "DROP TRIGGER refused: a project migration writes rows of the metadata tables only" in refused.value.message
    assert _state(seeded) == before


def test_project_sql_may_write_metadata_and_read_anything(seeded: EngineDb, project) -> None:
    """The legitimate shapes stay allowed: CTEs and sub-selects reading AUD_ tables, pure functions,
    upserts; the changes are recorded in AUD_METADATA_CHANGES by the triggers, as before."""
    folder = project.root / "migrations"
    folder.mkdir()
    (folder / "0001_ok.sql").write_text(
        "WITH seen AS (SELECT COUNT(*) AS n FROM AUD_ACTIONS)\n"
        "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE)\n"
        "SELECT 'p' || CAST(n AS VARCHAR), upper(coalesce(NULL, 'name')), 'FULL' FROM seen;\n"
        "UPDATE CFG_PIPELINES SET DESCRIPTION = (SELECT MAX(STATUS) FROM AUD_PIPELINES_RUN_LOG)"
        " WHERE PIPELINE_CODE LIKE 'p%';\n"
        "DELETE FROM CFG_TASK_PARAMETERS WHERE TASK_ID NOT IN (SELECT TASK_ID FROM CFG_TASKS);\n"
    )
    result = migrations.migrate(seeded, folder)
    assert result.project_applied == ("0001_ok.sql",)
    with seeded.read() as conn:
        names = conn.execute(sa.select(t.cfg_pipelines.c.pipeline_name).where(t.cfg_pipelines.c.pipeline_code == "p1"))
        changes = conn.execute(
            sa.select(t.aud_metadata_changes.c.table_name, t.aud_metadata_changes.c.operation).where(
                t.aud_metadata_changes.c.migration == "0001_ok.sql"
            )
        ).all()
    assert names.scalars().all() == ["NAME"]
    assert [tuple(c) for c in changes] == [("CFG_PIPELINES", "INSERT"), ("CFG_PIPELINES", "UPDATE")]


@pytest.mark.unit
@pytest.mark.parametrize("dialect", ["sqlite", "postgres"])
def test_a_statement_that_cannot_be_read_is_refused_with_its_line(dialect: str) -> None:
    sql = f"{BENIGN}\n\nINSERT INTO CFG_PIPELINES VALUES ('unterminated);\n"
    with pytest.raises(MigrationError) as refused:
        check_project_migration(sql, dialect, "0009_broken.sql")
    assert refused.value.message.startswith("project migration 0009_broken.sql")
    assert "cannot read as SQL" in refused.value.message or "cannot check" in refused.value.message


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
def test_project_sql_runs_as_the_migrator_role_where_it_is_set_up(seeded: EngineDb, tmp_path: Path) -> None:
    """With the role of `setup --print-grants` in place, project SQL runs as it, so its privileges
    refuse even what no trigger sees (COPY ... TO PROGRAM, here from a superuser's session)."""
    from etl_craft.engine.dialects.postgresql import access

    statements = [
        s for s in access.grant_statements("public") if access.MIGRATOR_ROLE in s and "etl_craft_owner" not in s
    ]
    with seeded.engine.connect() as raw:
        conn = raw.execution_options(isolation_level="AUTOCOMMIT")
        conn.exec_driver_sql(
            "DO $$ BEGIN CREATE ROLE etl_craft_migrator NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$"
        )
        for statement in statements[1:]:  # the role exists (roles are the whole server's)
            conn.exec_driver_sql(statement.split("  --")[0])
    before = _state(seeded)
    marker = tmp_path / "created"
    with pytest.raises(MigrationError) as refused:
        _slip_past_the_check(seeded, f"{BENIGN}COPY (SELECT 1) TO PROGRAM 'touch {marker}';\n")
    assert "must be superuser or have privileges of the pg_execute_server_program role" in refused.value.message
    assert _state(seeded) == before and not marker.exists()
    folder = tmp_path / "migrations"
    folder.mkdir()
    (folder / "0001_ok.sql").write_text(BENIGN)
    assert migrations.migrate(seeded, folder).project_applied == ("0001_ok.sql",)
    with seeded.read() as conn:
        recorded = conn.execute(
            sa.select(t.aud_metadata_changes.c.table_name).where(t.aud_metadata_changes.c.migration == "0001_ok.sql")
        ).scalars()
        assert list(recorded) == ["CFG_PIPELINES"]
