"""Project migrations write metadata, nothing else: hostile files are refused before any statement
runs, and the same statements slipped past that check are refused by the Engine DB itself."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import sqlalchemy as sa

from etl_craft.core.enums import MigrationSource
from etl_craft.core.errors import ExitCode, MigrationError
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
    assert any(
        word in refused.value.message
        for word in ("not authorized", "written only by etl-craft", "refused", "permission denied")
    ), refused.value.message
    assert _state(seeded) == before
    assert not (tmp_path / "created").exists()


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
@pytest.mark.parametrize(
    ("script", "found"),
    [
        (
            "SELECT set_config('etl_craft.purpose', '', true);\n"
            "SELECT etl_craft_record_project_migration('0099_forged.sql', 'x');\n"
            "SELECT set_config('etl_craft.purpose', 'project-sql', true);\n",
            "it wrote rows of SCHEMA_MIGRATIONS, which only etl-craft writes",
        ),
        ("SELECT set_config('etl_craft.purpose', '', true);\n", "it changed the setting etl_craft.purpose to ''"),
    ],
    ids=["history_recorded_behind_a_reset_marker", "marker_left_reset"],
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


RESET_MARKER = "SELECT set_config('etl_craft.purpose', '', true);\n"
RESTORE_MARKER = "SELECT set_config('etl_craft.purpose', 'project-sql', true);\n"


def _project_roles(db: EngineDb) -> list[str]:
    with db.read() as conn:
        query = "SELECT rolname FROM pg_roles WHERE rolname LIKE current_user || '_project_%%' ORDER BY 1"
        return list(conn.exec_driver_sql(query).scalars())


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
def test_project_sql_runs_on_a_login_of_its_own_that_is_dropped_after(seeded: EngineDb) -> None:
    """The engine's login here is a superuser; the file still runs as a role created for it, which
    can't log in once the migration is done (it is gone)."""
    # session_user is not on the statement check's list of functions: straight to the lower layer.
    _slip_past_the_check(
        seeded,
        "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, DESCRIPTION, REFRESH_TYPE)"
        " VALUES ('who', session_user, current_user, 'FULL');\n",
    )
    with seeded.read() as conn:
        row = conn.execute(
            sa.select(t.cfg_pipelines.c.pipeline_name, t.cfg_pipelines.c.description).where(
                t.cfg_pipelines.c.pipeline_code == "who"
            )
        ).one()
        attributes = conn.exec_driver_sql("SELECT rolsuper FROM pg_roles WHERE rolname = current_user").scalar()
        engine_role = conn.exec_driver_sql("SELECT current_user").scalar()
        recorded = conn.execute(
            sa.select(t.aud_metadata_changes.c.table_name, t.aud_metadata_changes.c.operation).where(
                t.aud_metadata_changes.c.migration == "0001_slipped.sql"
            )
        ).all()
        applied = conn.execute(
            sa.select(t.schema_migrations.c.version).where(t.schema_migrations.c.source == "PROJECT")
        ).scalars()
        assert list(applied) == ["0001_slipped.sql"]
    assert attributes is True  # the engine's own login could have done anything
    assert row.pipeline_name == row.description and row.pipeline_name.startswith(f"{engine_role}_project_")
    assert [tuple(r) for r in recorded] == [("CFG_PIPELINES", "INSERT")]
    assert _project_roles(seeded) == []


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
def test_reset_role_then_copy_to_program_is_refused_by_the_database(seeded: EngineDb, tmp_path: Path) -> None:
    """On the engine's superuser session, RESET ROLE would leave any role set for project SQL and
    COPY ... TO PROGRAM would run a shell command; on the project's own login RESET ROLE changes
    nothing and COPY is refused for lack of privilege."""
    before = _state(seeded)
    marker = tmp_path / "created"
    with pytest.raises(MigrationError) as refused:
        _slip_past_the_check(seeded, f"{BENIGN}RESET ROLE;\nCOPY (SELECT 1) TO PROGRAM 'touch {marker}';\n")
    message = refused.value.message
    assert message.startswith("project migration '0001_slipped.sql' failed and was rolled back"), message
    assert "must be superuser or have privileges of the pg_execute_server_program role" in message, message
    assert _state(seeded) == before and not marker.exists()
    assert _project_roles(seeded) == []


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
@pytest.mark.parametrize(
    ("statement", "found"),
    [
        ("TRUNCATE AUD_ACTIONS", "permission denied for table aud_actions"),
        ("TRUNCATE CFG_TASK_PARAMETERS", "permission denied for table cfg_task_parameters"),
        ("CREATE TABLE evil (a int)", "permission denied for schema"),
        ("ALTER TABLE CFG_PIPELINES ADD COLUMN evil int", "must be owner of table cfg_pipelines"),
        (PG_GUARD_TRIGGER, "must be owner of relation aud_actions"),
        ("DROP TABLE AUD_ACTIONS", "must be owner of table aud_actions"),
    ],
    ids=["truncate_history", "truncate_metadata", "create_table", "alter_table", "drop_trigger", "drop_table"],
)
def test_truncate_and_ddl_behind_a_reset_marker_are_refused_by_the_database(
    seeded: EngineDb, statement: str, found: str
) -> None:
    """With the marker the guards read reset, neither the DDL guard nor the row counters see TRUNCATE
    or DDL; the project login's privileges refuse them."""
    before = _state(seeded)
    with pytest.raises(MigrationError) as refused:
        _slip_past_the_check(seeded, f"{BENIGN}{RESET_MARKER}{statement};\n{RESTORE_MARKER}")
    assert found in refused.value.message, refused.value.message
    assert _state(seeded) == before


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
@pytest.mark.parametrize(
    "smuggled",
    ["COMMIT", "END", "ROLLBACK", "COMMIT AND CHAIN"],
)
def test_a_commit_mid_file_leaves_nothing_applied(seeded: EngineDb, smuggled: str) -> None:
    """The file runs in one DO block inside the migration's transaction, where PostgreSQL refuses
    transaction control: the statements before the COMMIT are rolled back with the rest."""
    before = _state(seeded)
    with pytest.raises(MigrationError) as refused:
        _slip_past_the_check(seeded, f"{BENIGN}{smuggled};\n{LATER}")
    assert _state(seeded) == before  # not even BENIGN, which ran before the COMMIT
    message = refused.value.message
    assert message.startswith("project migration '0001_slipped.sql' failed and was rolled back"), message
    assert "EXECUTE of transaction commands is not implemented" in message, message
    assert _project_roles(seeded) == []


@contextmanager
def _other_login(seeded: EngineDb, attributes: str) -> Iterator[tuple[str, EngineDb]]:
    """The Engine DB opened as a fresh login (trust authentication) with `attributes`."""
    login = f"pgl_other_{secrets.token_hex(4)}"
    with seeded.engine.connect() as raw:
        raw.execution_options(isolation_level="AUTOCOMMIT").exec_driver_sql(f"CREATE ROLE {login} {attributes}")
    other = EngineDb(
        engine=sa.create_engine(seeded.engine.url.set(username=login), poolclass=sa.pool.NullPool),
        dialect=seeded.dialect,
        profile=seeded.profile,
        display_url=seeded.display_url,
        schema=seeded.schema,
    )
    try:
        yield login, other
    finally:
        other.dispose()
        with seeded.engine.connect() as raw:
            admin = raw.execution_options(isolation_level="AUTOCOMMIT")
            admin.exec_driver_sql(f"DROP OWNED BY {login}")  # its grants, in this database only
            admin.exec_driver_sql(f"DROP ROLE {login}")


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
def test_a_login_without_createrole_refuses_project_migrations(seeded: EngineDb) -> None:
    """Without CREATEROLE the engine can't make the project login, so it refuses the file (exit
    status 13, MIGRATION) naming the remedy, and doctor says so beforehand."""
    from etl_craft.engine.dialects.postgresql import access

    before = _state(seeded)
    with _other_login(seeded, "LOGIN") as (login, plain):
        with pytest.raises(MigrationError) as refused:
            _slip_past_the_check(plain, BENIGN)
        (doctor,) = access.project_sql_check(plain)
    (doctor_as_superuser,) = access.project_sql_check(seeded)
    assert refused.value.exit_code is ExitCode.MIGRATION
    assert refused.value.message == (
        f"project migrations on {seeded.display_url}: login {login} can't create the role project SQL runs as: "
        "found no CREATEROLE attribute; expected a login for project SQL that may read the schema and write the "
        f"metadata tables only. Migrate as a login with CREATEROLE (ALTER ROLE {login} CREATEROLE;), "
        "as etl-craft setup --print-grants shows"
    )
    assert _state(seeded) == before
    assert (doctor.status, doctor.detail) == (
        "WARN",
        f"login {login} has no CREATEROLE, so etl-craft migrate refuses project migrations with it; "
        "migrate as the owner role of etl-craft setup --print-grants",
    )
    assert doctor_as_superuser.status == "OK"


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
def test_a_login_that_does_not_own_the_tables_refuses_project_migrations(seeded: EngineDb) -> None:
    """CREATEROLE but not the tables' owner: PostgreSQL would grant the project login nothing (with a
    warning), so the file is refused before it runs, naming the login, and the role is dropped."""
    before = _state(seeded)
    with _other_login(seeded, "LOGIN CREATEROLE") as (login, creator):
        with pytest.raises(MigrationError) as refused:
            _slip_past_the_check(creator, BENIGN)
        with creator.read() as conn:
            left = conn.exec_driver_sql("SELECT count(*) FROM pg_roles WHERE rolname LIKE %s", (f"{login}_project_%",))
            assert left.scalar() == 0, refused.value.message
    message = refused.value.message
    assert message.startswith(f"project migrations on {seeded.display_url}: login {login} can't grant "), message
    assert "found no grant option on the Engine DB's tables (the login doesn't own them)" in message, message
    assert message.endswith(
        "Migrate as the owner of the Engine DB's tables (the owner role of etl-craft setup --print-grants)"
    )
    assert _state(seeded) == before


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
def test_a_non_superuser_owner_migrates_once_it_may_grant_the_schema(seeded: EngineDb) -> None:
    """The setup of `setup --print-grants`: a CREATEROLE login holding the tables' grant option. On a
    schema PUBLIC can't use, it needs the schema's grant option too; without it the file is refused
    naming the GRANT, with it the file applies and is recorded, and the project role is gone after."""
    with _other_login(seeded, "LOGIN CREATEROLE") as (login, owner):
        with seeded.engine.connect() as raw:
            admin = raw.execution_options(isolation_level="AUTOCOMMIT")
            admin.exec_driver_sql("REVOKE USAGE ON SCHEMA public FROM PUBLIC")
            admin.exec_driver_sql(f"GRANT USAGE ON SCHEMA public TO {login}")
            admin.exec_driver_sql(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {login} WITH GRANT OPTION")
            admin.exec_driver_sql(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO {login} WITH GRANT OPTION")
            admin.exec_driver_sql(
                f"GRANT EXECUTE ON FUNCTION etl_craft_record_project_migration(text, text) TO {login} WITH GRANT OPTION"
            )
        before = _state(seeded)
        with pytest.raises(MigrationError) as refused:
            _slip_past_the_check(owner, BENIGN)
        assert _state(seeded) == before
        with seeded.engine.connect() as raw:
            admin = raw.execution_options(isolation_level="AUTOCOMMIT")
            admin.exec_driver_sql(f"GRANT USAGE ON SCHEMA public TO {login} WITH GRANT OPTION")
        _slip_past_the_check(owner, BENIGN)
        with owner.read() as conn:
            left = conn.exec_driver_sql("SELECT count(*) FROM pg_roles WHERE rolname LIKE %s", (f"{login}_project_%",))
            assert left.scalar() == 0
    message = refused.value.message
    assert f"could not be granted USAGE on schema public: found login {login} without the grant option" in message
    assert message.endswith(
        f"GRANT USAGE ON SCHEMA public TO {login} WITH GRANT OPTION; (or make it the schema's owner)"
    )
    with seeded.read() as conn:
        names = conn.execute(
            sa.select(t.cfg_pipelines.c.pipeline_name).where(t.cfg_pipelines.c.pipeline_code == "benign")
        )
        assert names.scalars().all() == ["Benign"]
        applied = conn.execute(
            sa.select(t.schema_migrations.c.version).where(t.schema_migrations.c.source == "PROJECT")
        )
        assert applied.scalars().all() == ["0001_slipped.sql"]


@pytest.mark.postgres
@pytest.mark.parametrize("dialect", ["postgresql"], indirect=True)
def test_a_failure_inside_the_block_names_the_line_of_the_file(seeded: EngineDb) -> None:
    """The file runs as one string inside a DO block; the server's message names the line of the
    file it points at, and does not quote the whole file back as context."""
    before = _state(seeded)
    with pytest.raises(MigrationError) as refused:
        _slip_past_the_check(seeded, f"{BENIGN}\n-- a comment\nUPDATE CFG_PIPELINES SET PIPELINE_NAME = 1 +;\n")
    message = refused.value.message
    assert 'found syntax error at or near ";" (line 4)' in message, message
    assert "CONTEXT" not in message and "Benign" not in message, message
    assert _state(seeded) == before
