"""doctor checks that connect: the warehouse (through its dialect) and the email relay (NOOP, no login).

Each gets a short timeout so an unreachable host fails the check instead of hanging doctor. Nothing
is created: a warehouse file that isn't there yet (a DuckDB file) is reported, not opened (opening
would create it).
"""

from __future__ import annotations

import os
import smtplib
import ssl

from etl_craft.config.model import ConnectorConfig, EmailSettings
from etl_craft.core.checks import FAIL, OK, WARN, CheckResult
from etl_craft.core.errors import EtlCraftError
from etl_craft.core.text import redact_url
from etl_craft.engine.database import EngineDb
from etl_craft.handlers.email_alert.relay import DEFAULT_PORTS
from etl_craft.warehouse.dialect import WarehouseDialect, load_dialect
from etl_craft.warehouse.session import Session, WarehouseError

TIMEOUT_SECONDS = 10.0


def _schema_present(dialect: WarehouseDialect, session: Session, schema: str) -> bool:
    query = f"SELECT 1 FROM information_schema.schemata WHERE lower(schema_name) = lower({dialect.placeholder})"
    return bool(session.rows(query, [schema]))


def warehouse_check(config: ConnectorConfig, db: EngineDb | None) -> list[CheckResult]:
    name = "Warehouse"
    profile = config.warehouse
    if profile is None:
        return []
    try:
        dialect = load_dialect(config)
    except EtlCraftError as error:
        return [CheckResult(name, FAIL, error.message)]
    path = dialect.storage_file()
    if path is not None and not path.exists():
        return [
            CheckResult(
                name,
                WARN,
                f"{dialect.display_name} file {path} does not exist yet; "
                "the first task that writes the warehouse creates it",
            )
        ]
    schema = profile.schema or "main"
    try:
        sessions = dialect.session(db, lock_timeout=TIMEOUT_SECONDS) if db is not None else dialect.open_session()
        with sessions as session:
            session.scalar("SELECT 1")
            present = _schema_present(dialect, session, schema)
    except WarehouseError as error:
        return [CheckResult(name, FAIL, f"{dialect.display_name} at {_shown(profile.jdbc_url)}: {error}")]
    except EtlCraftError as error:  # the writer lock of a single-writer warehouse, held by a running task
        return [CheckResult(name, WARN, f"not tried: {error.message}")]
    if not present:
        return [
            CheckResult(
                name,
                FAIL,
                f"{dialect.display_name} at {_shown(profile.jdbc_url)} has no schema {schema}; "
                f"create it (etl-craft creates no warehouse schema): CREATE SCHEMA {schema};",
            )
        ]
    return [CheckResult(name, OK, f"{dialect.display_name} at {_shown(profile.jdbc_url)}, schema {schema}")]


def _shown(url: str) -> str:
    return redact_url(url.removeprefix("jdbc:"))


def _tls_context(email: EmailSettings) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(email.ca_file) if email.ca_file else None)


def relay_problem(email: EmailSettings, timeout: float = TIMEOUT_SECONDS) -> tuple[str, str] | None:
    """(step, answer) where talking to the relay failed, or None once it answered NOOP. Never logs in."""
    assert email.host is not None
    port = email.port or DEFAULT_PORTS[email.tls_mode]
    step = "connect"
    client: smtplib.SMTP | None = None
    try:
        if email.tls_mode == "ssl":
            client = smtplib.SMTP_SSL(email.host, port, timeout=timeout, context=_tls_context(email))
        else:
            client = smtplib.SMTP(email.host, port, timeout=timeout)
        if email.tls_mode == "starttls":
            step = "start TLS"
            client.ehlo()
            if not client.has_extn("starttls"):
                return step, "the relay does not offer STARTTLS (use tls_mode ssl for port 465, or none)"
            client.starttls(context=_tls_context(email))
            client.ehlo()
        step = "NOOP"
        code, answer = client.noop()
        if code != 250:
            return step, f"{code} {answer.decode(errors='replace')}"
        return None
    except ssl.SSLCertVerificationError as error:
        return step, f"certificate not trusted: {error.verify_message}"
    except (OSError, smtplib.SMTPException) as error:
        return step, str(error) or type(error).__name__
    finally:
        if client is not None:
            try:
                client.quit()
            except (OSError, smtplib.SMTPException):
                client.close()


def email_check(config: ConnectorConfig) -> list[CheckResult]:
    email = config.orchestration.email
    name = "Email"
    if email is None:
        return []
    if email.transport == "sendmail":
        path = email.sendmail_path
        if path is None or not path.is_file() or not os.access(path, os.X_OK):
            return [
                CheckResult(
                    name,
                    FAIL,
                    f"sendmail {path} is not an executable file; install sendmail or correct sendmail_path",
                )
            ]
        return [CheckResult(name, OK, f"sendmail {path} is executable")]
    port = email.port or DEFAULT_PORTS[email.tls_mode]
    where = f"relay {email.host}:{port} (tls_mode {email.tls_mode})"
    problem = relay_problem(email)
    if problem is not None:
        step, answer = problem
        return [CheckResult(name, FAIL, f"{where}: {step} failed: {answer}")]
    if email.tls_mode == "none":
        security = "unencrypted"
    else:
        trust = f"ca_file {email.ca_file}" if email.ca_file else "the system trust store"
        security = (
            f"{'STARTTLS' if email.tls_mode == 'starttls' else 'implicit TLS'}, certificate verified against {trust}"
        )
    return [CheckResult(name, OK, f"{where} answered NOOP over {security}; no login tried")]
