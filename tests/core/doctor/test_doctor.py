"""doctor against real services: PostgreSQL and DuckDB warehouses, an aiosmtpd relay, files on disk."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller

from etl_craft.services.doctor import DoctorReport, run_checks
from etl_craft.services.documents import document, plain
from tests.fixtures.cli import run_cli
from tests.fixtures.project import Project
from tests.fixtures.relays import Relay, free_port, start_relay
from tests.fixtures.warehouse import Warehouse, shared_warehouse, warehouse

__all__ = ["shared_warehouse", "start_relay", "warehouse"]


@pytest.fixture
def local(tmp_path: Path) -> Iterator[Project]:
    """A project on a SQLite Engine DB: the checks below are about everything else."""
    from etl_craft.engine.schema import migrations

    project = Project(tmp_path, "sqlite")
    project.write_config()
    migrations.init_db(project.open_db(create=True))
    yield project
    project.close()


def configure(project: Project, *, orchestration: str = "", sections: str = "") -> None:
    project.orchestration = "  Mode: local\n" + orchestration
    project.extra_sections = sections
    project.write_config()


def checks(project: Project, **env: str) -> DoctorReport:
    return run_checks(None, environ=project.env(**env))


def line(report: DoctorReport, name: str) -> str:
    found = [c.line for c in report.checks if c.name == name]
    assert len(found) == 1, "\n".join(report.lines)
    return found[0]


# --- warehouses ----------------------------------------------------------------------------------


def test_the_warehouse_is_connected_and_its_schema_found(local: Project, warehouse: Warehouse) -> None:
    section = warehouse.section() + (f"  schema: {warehouse.schema}\n" if warehouse.kind == "duckdb" else "")
    if warehouse.kind == "postgres":
        section = section.replace("schema: public", f"schema: {warehouse.schema}")
    configure(local, sections=section)
    report = checks(local)
    assert report.failed == 0, "\n".join(report.lines)
    name = {"duckdb": "DuckDB", "postgres": "PostgreSQL", "trino": "Trino", "databricks": "Databricks"}[warehouse.kind]
    assert line(report, "Warehouse").startswith(f"[OK  ] Warehouse: {name} at ")
    assert line(report, "Warehouse").endswith(f", schema {warehouse.schema}")
    configure(local, sections=section.replace(f"schema: {warehouse.schema}", "schema: nowhere"))
    missing = line(checks(local), "Warehouse")
    assert missing.startswith("[FAIL] Warehouse: ") and "has no schema nowhere" in missing
    assert missing.endswith("CREATE SCHEMA nowhere;")


def test_a_duckdb_file_that_does_not_exist_is_reported_and_not_created(local: Project) -> None:
    configure(local, sections="Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n")
    found = line(checks(local), "Warehouse")
    path = local.root / "warehouse.duckdb"
    assert (
        found
        == f"[WARN] Warehouse: DuckDB file {path} does not exist yet; the first task that writes the warehouse creates it"
    )
    assert not path.exists()


@pytest.mark.warehouse_postgres
def test_an_unreachable_warehouse_fails(local: Project) -> None:
    configure(local, sections="Warehouse:\n  jdbc_url: jdbc:postgresql://127.0.0.1:1/nothing\n  schema: public\n")
    found = line(checks(local), "Warehouse")
    assert found.startswith("[FAIL] Warehouse: PostgreSQL at postgresql://127.0.0.1:1/nothing: OperationalError")


# --- the email relay -----------------------------------------------------------------------------


class _Quiet:
    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        return "250 OK"


@pytest.fixture
def plain_relay() -> Iterator[int]:
    """A relay without TLS (tls_mode none), on a free port."""
    port = free_port()
    controller = Controller(_Quiet(), hostname="127.0.0.1", port=port)
    controller.start()
    yield port
    controller.stop()


def email(host: str, port: int, tls_mode: str, extra: str = "") -> str:
    return (
        f"  Email:\n    host: {host}\n    port: {port}\n    tls_mode: {tls_mode}\n"
        f"    from_address: etl@example.com\n{extra}"
    )


def test_a_plain_relay_answers_noop_and_starttls_against_it_fails(local: Project, plain_relay: int) -> None:
    configure(local, orchestration=email("127.0.0.1", plain_relay, "none"))
    assert line(checks(local), "Email") == (
        f"[OK  ] Email: relay 127.0.0.1:{plain_relay} (tls_mode none) answered NOOP over unencrypted; no login tried"
    )
    configure(local, orchestration=email("127.0.0.1", plain_relay, "starttls"))
    assert line(checks(local), "Email") == (
        f"[FAIL] Email: relay 127.0.0.1:{plain_relay} (tls_mode starttls): start TLS failed: "
        "the relay does not offer STARTTLS (use tls_mode ssl for port 465, or none)"
    )


@pytest.mark.parametrize("tls_mode", ["starttls", "ssl"])
def test_tls_relays_are_verified_against_ca_file_without_logging_in(
    local: Project, start_relay: Any, tls_mode: str
) -> None:
    relay: Relay = start_relay(tls_mode, ["localhost"])
    configure(local, orchestration=relay.email_section(tls_mode, login=False))
    found = line(checks(local), "Email")
    kind = "STARTTLS" if tls_mode == "starttls" else "implicit TLS"
    assert found == (
        f"[OK  ] Email: relay localhost:{relay.port} (tls_mode {tls_mode}) answered NOOP over {kind}, "
        f"certificate verified against ca_file {relay.certificates.ca_file}; no login tried"
    )
    assert relay.mailbox.logins == [] and relay.received == []
    configure(local, orchestration=relay.email_section(tls_mode, ca_file=False, login=False))
    untrusted = line(checks(local), "Email")
    assert untrusted.startswith(f"[FAIL] Email: relay localhost:{relay.port} (tls_mode {tls_mode}): ")
    assert "certificate not trusted: unable to get local issuer certificate" in untrusted


def test_a_certificate_for_another_host_is_refused(local: Project, start_relay: Any) -> None:
    relay: Relay = start_relay("starttls", ["mail.example.org"])
    configure(local, orchestration=relay.email_section("starttls", login=False))
    found = line(checks(local), "Email")
    assert found.startswith(f"[FAIL] Email: relay localhost:{relay.port} (tls_mode starttls): start TLS failed: ")
    assert "certificate not trusted: Hostname mismatch" in found


def test_an_unreachable_relay_fails_at_connect(local: Project) -> None:
    port = free_port()
    configure(local, orchestration=email("127.0.0.1", port, "none"))
    found = line(checks(local), "Email")
    assert found.startswith(f"[FAIL] Email: relay 127.0.0.1:{port} (tls_mode none): connect failed: ")
    assert "Connection refused" in found


def test_a_login_over_tls_mode_none_is_refused(local: Project, plain_relay: int) -> None:
    extra = "    auth_mode: password\n    user: alerts\n    secret: SMTP_SECRET\n"
    configure(local, orchestration=email("127.0.0.1", plain_relay, "none", extra))
    report = checks(local, SMTP_SECRET="not-shown-anywhere")
    assert report.checks[0].status == "FAIL" and len(report.checks) == 1
    assert "auth_mode password would send the login unencrypted" in report.checks[0].detail
    assert "not-shown-anywhere" not in "\n".join(report.lines)


def test_sendmail_must_be_executable(local: Project, tmp_path: Path) -> None:
    program = tmp_path / "sendmail"
    program.write_text("#!/bin/sh\nexit 0\n")
    section = f"  Email:\n    transport: sendmail\n    from_address: etl@example.com\n    sendmail_path: {program}\n"
    configure(local, orchestration=section)
    assert (
        line(checks(local), "Email")
        == f"[FAIL] Email: sendmail {program} is not an executable file; install sendmail or correct sendmail_path"
    )
    program.chmod(0o755)
    assert line(checks(local), "Email") == f"[OK  ] Email: sendmail {program} is executable"


# --- files, settings, secrets, folders, gates ----------------------------------------------------


def test_configured_files_are_checked_at_their_resolved_path_from_any_folder(local: Project, tmp_path: Path) -> None:
    (local.root / "certs").mkdir()
    (local.root / "certs" / "ca.pem").write_text("not really a certificate")
    warehouse = (
        "Warehouse:\n  jdbc_url: jdbc:postgresql://127.0.0.1:1/w?sslrootcert=certs/ca.pem\n  schema: public\n"
        "  user: etl\n  auth_mode: key_file\n  key_file: certs/client.key\n"
    )
    configure(local, sections=warehouse)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    result = run_cli("doctor", "--config", str(local.config_path), cwd=elsewhere, env=local.env())
    assert result.returncode == 1, result
    assert f"[FAIL] Files: Warehouse.key_file: {local.root / 'certs' / 'client.key'} does not exist" in result.stdout
    assert (
        f"[OK  ] Files: Warehouse.jdbc_url sslrootcert: {local.root / 'certs' / 'ca.pem'} is readable" in result.stdout
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_an_unreadable_file_fails(local: Project) -> None:  # pragma: no cover - CI runs as root
    key = local.root / "client.key"
    key.write_text("x")
    key.chmod(0)
    configure(
        local,
        sections="Warehouse:\n  jdbc_url: jdbc:postgresql://127.0.0.1:1/w\n  schema: public\n  user: e\n  auth_mode: key_file\n  key_file: client.key\n",
    )
    assert "can't be read by this user" in line(checks(local), "Files")


def test_settings_that_look_like_unset_variables_warn_and_secrets_are_named_not_shown(local: Project) -> None:
    configure(
        local,
        orchestration="  Name: ORCHESTRATOR_NAME\n  Dependency_gates: warn\n",
        sections="Warehouse:\n  jdbc_url: jdbc:postgresql://127.0.0.1:1/w\n  schema: public\n  user: etl\n  secret: WAREHOUSE_SECRET\n",
    )
    report = checks(local, WAREHOUSE_SECRET="s3cr3t-value")
    assert line(report, "Settings") == (
        "[WARN] Settings: Orchestration.Name is 'ORCHESTRATOR_NAME', used as written because no variable "
        "ORCHESTRATOR_NAME is set; set ORCHESTRATOR_NAME if it names a variable, or ignore this if the text is meant"
    )
    assert line(report, "Secrets") == (
        "[OK  ] Secrets: 1 secret variable(s) set in the environment: WAREHOUSE_SECRET (Warehouse.secret)"
    )
    assert line(report, "Auth") == "[OK  ] Auth: Engine: a file, no login; Warehouse: password as etl"
    assert line(report, "Dependency gates").startswith(
        "[WARN] Dependency gates: Orchestration.Dependency_gates is warn"
    )
    assert "s3cr3t-value" not in "\n".join(report.lines)


def test_a_log_dir_that_is_a_file_fails_the_project_folders(local: Project) -> None:
    (local.root / "logs").write_text("not a folder")
    (local.root / "sql_files").mkdir()
    report = checks(local)
    assert (
        line(report, "Project folders")
        == f"[FAIL] Project folders: Orchestration.Log_dir: {local.root / 'logs'} is not a folder"
    )
    (local.root / "logs").unlink()
    assert line(checks(local), "Project folders") == (
        f"[OK  ] Project folders: in {local.root}: sql_files/ present; ingestion_scripts/, migrations/ absent; "
        f"logs go to {local.root / 'logs'}"
    )


def test_sqlite_in_remote_mode_warns(local: Project) -> None:
    local.orchestration = "  Mode: remote\n"
    local.write_config()
    warned = [c.line for c in checks(local).checks if c.status == "WARN"]
    assert any("a SQLite Engine DB in remote mode" in w for w in warned)


def test_doctor_json_is_the_service_document_with_every_check(project: Project, plain_relay: int) -> None:
    configure(project, orchestration=email("127.0.0.1", plain_relay, "none"))
    result = run_cli("doctor", "--format", "json", env=project.env())
    assert result.returncode == 0, result
    doc = result.json()
    assert doc == plain(document("doctor", checks(project)))
    assert [c["name"] for c in doc["checks"]][:2] == ["Configuration", "Engine DB connection"]
    assert {"Settings", "Secrets", "Auth", "Email", "Project folders", "Dependency gates"} <= {
        c["name"] for c in doc["checks"]
    }
