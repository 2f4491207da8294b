"""`doctor`: every check that can be made without running anything, each OK, WARN or FAIL.

A failed configuration stops every other check; a failed Engine DB connection stops only the checks
that read the Engine DB, so the warehouse, the relay and the files are still reported.
"""

from __future__ import annotations

from collections.abc import Mapping

import sqlalchemy as sa

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.checks import FAIL, OK, WARN, CheckResult
from etl_craft.core.errors import EtlCraftError, MissingEngineDbError
from etl_craft.engine.database import EngineDb, open_engine_db
from etl_craft.services.context import load_configuration
from etl_craft.services.doctor import cloning, cluster, connections, engine_db, project
from etl_craft.services.doctor.report import DoctorReport

__all__ = ["FAIL", "OK", "WARN", "CheckResult", "DoctorReport", "run_checks"]


def _engine_checks(config: ConnectorConfig, include_schema: bool) -> tuple[list[CheckResult], EngineDb | None]:
    name = "Engine DB connection"
    try:
        db = open_engine_db(config)
    except MissingEngineDbError as error:
        if include_schema:
            return [CheckResult(name, FAIL, error.message)], None
        return [CheckResult(name, OK, f"{error.subject} does not exist yet; setup creates it")], None
    except EtlCraftError as error:
        return [CheckResult(name, FAIL, error.message)], None
    try:
        with db.read() as conn:
            conn.exec_driver_sql("SELECT 1")
    except EtlCraftError as error:  # an Engine DB that can't be used at all
        db.dispose()
        return [CheckResult(name, FAIL, error.message)], None
    except sa.exc.DBAPIError as error:
        db.dispose()
        return [CheckResult(name, FAIL, f"{db.display_url}: {error.orig}")], None
    results = [CheckResult(name, OK, f"{db.display_url} ({db.dialect.name})")]
    health = db.dialect.health_checks(db)
    results += health
    if any(check.status == FAIL for check in health):
        db.dispose()  # nothing more can be read from it
        return results, None
    if not db.dialect.shared_by_hosts and config.orchestration.mode == "remote":
        results.append(
            CheckResult(
                name,
                WARN,
                f"a {db.dialect.display_name} Engine DB in remote mode: every orchestrator worker must run on this "
                "machine; use PostgreSQL for remote mode",
            )
        )
    if include_schema:
        results += engine_db.schema_check(db, config)
        if not any(check.status == FAIL for check in results):
            results += cluster.queue_check(db) + cluster.budget_check(db, config)
    results += db.dialect.access_checks(db)
    return results, db


def run_checks(
    explicit_config: str | None,
    *,
    include_schema: bool = True,
    environ: Mapping[str, str] | None = None,
) -> DoctorReport:
    """Run every check in order; `include_schema=False` leaves out tables and migrations (setup)."""
    try:
        config = load_configuration(explicit_config, environ)
    except EtlCraftError as error:
        return DoctorReport((CheckResult("Configuration", FAIL, error.message),))
    results = [CheckResult("Configuration", OK, f"loaded {config.path}")]
    engine_results, db = _engine_checks(config, include_schema)
    results += engine_results
    try:
        results += project.settings_check(config)
        results += project.secrets_check(config)
        results += project.auth_check(config)
        results += project.files_check(config)
        results += connections.warehouse_check(config, db)
        results += connections.email_check(config)
        results += cloning.cloning_check(config, db)
        results += project.folders_check(config)
        results += project.gates_check(config)
    finally:
        if db is not None:
            db.dispose()
    return DoctorReport(tuple(results))
