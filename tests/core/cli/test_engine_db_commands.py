"""init-db, migrate, setup and doctor through the real CLI on both dialects."""

from __future__ import annotations

import getpass
import os
import socket
import stat
import uuid

import psycopg
import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from etl_craft.services.doctor import run_checks
from etl_craft.services.documents import document, plain
from tests.fixtures import postgres as pg
from tests.fixtures.cli import run_cli

ONE_PIPELINE = """\
INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('orders', 'Orders', 'FULL');
"""


def test_init_db_creates_the_engine_db_and_records_who_asked(empty_project) -> None:
    env = empty_project.env(ETL_CRAFT_ACTOR="erin@ci", ETL_CRAFT_ACTOR_KIND="orchestrator")
    result = run_cli("init-db", env=env)
    assert result.returncode == 0, result
    assert result.stdout.startswith("init-db: created the Engine DB at ")
    again = run_cli("init-db", "--format", "json", env=env)
    assert again.returncode == 0, again
    doc = again.json()
    assert doc["schema"] == "etl-craft/init-db/1"
    assert doc["created"] is False and doc["engine_migrations"] == [
        "0001_initial.sql",
        "0002_alert_deliveries.sql",
        "0003_project_sql_guards.sql",
        "0004_api_token_roles_and_last_use.sql",
        "0005_users.sql",
        "0006_cluster.sql",
        "0007_retention_indexes.sql",
        "0008_ui_sessions.sql",
        "0009_clone_watermarks.sql",
        "0010_pools.sql",
        "0011_cancel_requests.sql",
        "0012_definer_records.sql",
    ]
    db = empty_project.open_db()
    with db.read() as conn:
        actions = conn.execute(sa.select(t.aud_actions)).all()
    assert [(a.command, a.actor, a.actor_kind, a.outcome, a.exit_code) for a in actions] == [
        ("init-db", "erin@ci", "ORCHESTRATOR", "REQUESTED", None)
    ]
    assert actions[0].arguments == {"force": False}


def test_migrate_applies_project_files_and_defaults_the_actor_to_user_at_host(project) -> None:
    folder = project.root / "migrations"
    folder.mkdir()
    (folder / "0001_orders.sql").write_text(ONE_PIPELINE)
    env = {k: v for k, v in project.env().items() if not k.startswith("ETL_CRAFT_ACTOR")}
    result = run_cli("migrate", env=env)
    assert result.returncode == 0, result
    assert result.stdout.splitlines() == [
        "applying PROJECT migration 0001_orders.sql",
        "migrate: applied 0 ENGINE and 1 PROJECT migration(s)",
    ]
    nothing = run_cli("migrate", "--format", "json", env=env)
    assert (
        nothing.json()["project_applied"] == [] and nothing.json()["message"] == "the Engine DB is already up to date"
    )
    with project.open_db().read() as conn:
        pipeline = conn.execute(sa.select(t.cfg_pipelines)).one()
        actions = conn.execute(sa.select(t.aud_actions.c.command, t.aud_actions.c.actor)).all()
    expected_actor = f"{getpass.getuser()}@{socket.gethostname()}"
    assert pipeline.created_by == expected_actor
    assert [tuple(a) for a in actions] == [("migrate", expected_actor), ("migrate", expected_actor)]


def test_migrate_takes_the_folder_from_the_flag_or_the_environment(project) -> None:
    elsewhere = project.root / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "0001_orders.sql").write_text(ONE_PIPELINE)
    by_env = run_cli("migrate", env=project.env(ETL_CRAFT_MIGRATIONS_DIR=str(elsewhere)))
    assert by_env.returncode == 0 and "0001_orders.sql" in by_env.stdout
    missing = run_cli("migrate", "--migrations-dir", str(project.root / "missing"), env=project.env())
    assert missing.returncode == 13
    assert "--migrations-dir" in missing.stderr and "not a folder" in missing.stderr


def test_an_edited_migration_stops_migrate_with_exit_13_naming_the_file(project) -> None:
    folder = project.root / "migrations"
    folder.mkdir()
    (folder / "0001_orders.sql").write_text(ONE_PIPELINE)
    assert run_cli("migrate", env=project.env()).returncode == 0
    (folder / "0001_orders.sql").write_text(ONE_PIPELINE.replace("Orders", "All orders"))
    result = run_cli("migrate", env=project.env())
    assert result.returncode == 13
    assert "'0001_orders.sql' has changed since it was applied" in result.stderr


def test_commands_refuse_an_engine_db_that_was_never_created(empty_project) -> None:
    result = run_cli("migrate", env=empty_project.env())
    # A SQLite file that isn't there is a configuration pointing nowhere (3); an empty PostgreSQL
    # schema is an Engine DB without tables (12). Neither is created.
    assert result.returncode == (3 if empty_project.dialect == "sqlite" else 12), result
    assert "etl-craft init-db" in result.stderr
    assert not (empty_project.root / "engine.db").exists()


def test_doctor_passes_on_a_current_engine_db(project) -> None:
    result = run_cli("doctor", env=project.env())
    assert result.returncode == 0, result
    lines = result.stdout.splitlines()
    assert lines[0] == f"[OK  ] Configuration: loaded {project.config_path}"
    assert lines[1].startswith("[OK  ] Engine DB connection: ")
    assert lines[2] in (
        f"[OK  ] Engine DB file: {project.root / 'engine.db'} reads whole and accepts writes",
        "[OK  ] Engine DB writable: the session accepts writes",
    )
    assert lines[3] == "[OK  ] Engine DB tables and migrations: 12 ENGINE migration(s) applied"
    assert lines[-1].endswith("0 failed")


def test_doctor_json_is_the_service_document(project) -> None:
    result = run_cli("doctor", "--format", "json", env=project.env())
    report = run_checks(None, environ=project.env())
    assert result.json() == plain(document("doctor", report))


def test_doctor_fails_on_an_engine_db_without_tables(empty_project) -> None:
    result = run_cli("doctor", env=empty_project.env())
    assert result.returncode == 1
    if empty_project.dialect == "sqlite":
        assert f"[FAIL] Engine DB connection: the Engine DB {empty_project.root / 'engine.db'}" in result.stdout
        assert "found no such file" in result.stdout and not (empty_project.root / "engine.db").exists()
    else:
        assert "[FAIL] Engine DB tables and migrations: no etl-craft tables" in result.stdout


def test_doctor_fails_on_pending_project_migrations(project) -> None:
    (project.root / "migrations").mkdir()
    (project.root / "migrations" / "0001_orders.sql").write_text(ONE_PIPELINE)
    result = run_cli("doctor", env=project.env())
    assert result.returncode == 1
    assert "1 project migration(s) not applied: 0001_orders.sql" in result.stdout


def test_doctor_reports_a_configuration_failure_and_stops(tmp_path) -> None:
    (tmp_path / "craft-connector.yml").write_text("Engine:\n  jdbc_url: jdbc:sqlite:e.db\n")
    result = run_cli("doctor", "--config", str(tmp_path / "craft-connector.yml"))
    assert result.returncode == 1
    assert result.stdout.splitlines()[0].startswith("[FAIL] Configuration: ")
    assert result.stdout.splitlines()[-1] == "0 ok, 0 warning(s), 1 failed"


@pytest.mark.sqlite
def test_doctor_warns_when_the_sqlite_file_is_writable_by_others(tmp_path) -> None:
    from tests.fixtures.project import Project

    project = Project(tmp_path, "sqlite")
    project.write_config()
    assert run_cli("init-db", env=project.env()).returncode == 0
    path = tmp_path / "engine.db"
    path.chmod(path.stat().st_mode | stat.S_IWGRP | stat.S_IWOTH)
    result = run_cli("doctor", env=project.env())
    assert result.returncode == 0
    assert f"[WARN] Engine DB file permissions: {path} is writable by group and others" in result.stdout
    assert f"chmod 600 {path}" in result.stdout


@pytest.mark.postgres
def test_doctor_reports_another_login_that_can_write_with_the_revoke(tmp_path) -> None:
    from tests.fixtures.project import Project

    pg.require_postgres()
    role, group = f"etlc_intruder_{uuid.uuid4().hex[:8]}", f"etlc_group_{uuid.uuid4().hex[:8]}"
    with pg.throwaway_database() as name:
        project = Project(tmp_path, "postgresql", name)
        project.write_config()
        assert run_cli("init-db", env=project.env()).returncode == 0
        with psycopg.connect(pg.admin_dsn(name), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {role} LOGIN")
            conn.execute(f"CREATE ROLE {group} NOLOGIN")
            conn.execute(f"GRANT {group} TO {role}")
            conn.execute(f"GRANT INSERT ON cfg_tasks TO {role}")
            conn.execute(f"GRANT DELETE ON aud_task_run_log TO {group}")
        try:
            result = run_cli("doctor", env=project.env())
        finally:
            with psycopg.connect(pg.admin_dsn(name), autocommit=True) as conn:
                conn.execute(f"REVOKE ALL ON ALL TABLES IN SCHEMA public FROM {role}, {group}")
                conn.execute(f"DROP ROLE {role}")
                conn.execute(f"DROP ROLE {group}")
    assert result.returncode == 1, result
    assert (
        f"login {role} can INSERT public.CFG_TASKS (granted to {role}); REVOKE INSERT ON public.CFG_TASKS FROM {role};"
        in result.stdout
    )
    assert (
        f"login {role} can DELETE public.AUD_TASK_RUN_LOG (granted to {group}); REVOKE DELETE ON public.AUD_TASK_RUN_LOG FROM {group};"
        in result.stdout
    )


def test_setup_creates_then_migrates_and_is_idempotent(empty_project) -> None:
    (empty_project.root / "migrations").mkdir()
    (empty_project.root / "migrations" / "0001_orders.sql").write_text(ONE_PIPELINE)
    first = run_cli("setup", env=empty_project.env())
    assert first.returncode == 0, first
    assert "applying PROJECT migration 0001_orders.sql" in first.stdout
    assert first.stdout.splitlines()[-1].startswith("setup: created the Engine DB at ")
    second = run_cli("setup", env=empty_project.env())
    assert second.returncode == 0
    assert second.stdout.splitlines()[-1] == "setup: the Engine DB is already up to date"
    with empty_project.open_db().read() as conn:
        assert conn.execute(sa.select(t.cfg_pipelines.c.pipeline_code)).scalars().all() == ["orders"]


def test_setup_changes_nothing_when_a_check_fails(tmp_path) -> None:
    (tmp_path / "craft-connector.yml").write_text(
        "Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n"
        "Engine:\n  jdbc_url: jdbc:postgresql://127.0.0.1:1/nothing\n  schema: x\n"
    )
    result = run_cli("setup", "--config", str(tmp_path / "craft-connector.yml"))
    assert result.returncode == 1
    assert "[FAIL] Engine DB connection" in result.stdout
    assert result.stdout.splitlines()[-1] == "setup: a check failed, so nothing was changed"


def test_print_grants_prints_roles_or_file_advice(project, dialect: str) -> None:
    result = run_cli("setup", "--print-grants", env=project.env())
    assert result.returncode == 0, result
    if dialect == "postgresql":
        assert "CREATE ROLE etl_craft_owner LOGIN CREATEROLE;" in result.stdout
        assert (
            "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO etl_craft_engine;" in result.stdout
        )
        assert "GRANT SELECT ON ALL TABLES IN SCHEMA public TO etl_craft_reader;" in result.stdout
    else:
        assert f"chmod 600 {project.root / 'engine.db'}" in result.stdout


@pytest.mark.postgres
def test_a_missing_postgres_schema_stops_with_the_create_schema_to_run(tmp_path) -> None:
    from tests.fixtures.project import Project

    pg.require_postgres()
    with pg.throwaway_database() as name:
        project = Project(tmp_path, "postgresql", name)
        project.write_config()
        project.config_path.write_text(project.config_path.read_text().replace("schema: public", "schema: etl_craft"))
        result = run_cli("init-db", env=project.env())
    assert result.returncode == 3
    assert "schema 'etl_craft', which does not exist" in result.stderr
    assert "CREATE SCHEMA etl_craft;" in result.stderr
    assert "password" not in result.stderr.lower() or "***" in result.stderr


def test_logged_engine_urls_never_hold_a_password(tmp_path) -> None:
    (tmp_path / ".env").write_text("ENGINE_SECRET=hunter2-very-secret\n")
    (tmp_path / "craft-connector.yml").write_text(
        "Secrets:\n  Source_type: file\n  Path: .env\nOrchestration:\n  Mode: local\n"
        "Engine:\n  jdbc_url: jdbc:postgresql://127.0.0.1:1/nothing?sslmode=disable\n  schema: x\n"
        "  user: u\n  auth_mode: password\n  secret: ENGINE_SECRET\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "ENGINE_SECRET"}
    result = run_cli("doctor", "--config", str(tmp_path / "craft-connector.yml"), "--log-level", "DEBUG", env=env)
    assert result.returncode == 1
    assert "postgresql://u@127.0.0.1:1/nothing" in result.stdout
    assert "hunter2" not in result.stdout + result.stderr
