"""doctor checks of the Engine DB: its tables and migrations (the dialect checks who else may write it)."""

from __future__ import annotations

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.checks import FAIL, OK, CheckResult
from etl_craft.core.errors import EtlCraftError
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import migrations


def _missing_guards(db: EngineDb) -> set[str]:
    with db.read() as conn:
        present = db.dialect.trigger_names(conn)
    return migrations.guard_trigger_names(db.dialect.name) - present


def schema_check(db: EngineDb, config: ConnectorConfig) -> list[CheckResult]:
    state = migrations.schema_state(db)
    name = "Engine DB tables and migrations"
    if not state.initialised:
        return [CheckResult(name, FAIL, "no etl-craft tables: create them with etl-craft init-db or etl-craft setup")]
    try:
        migrations.require_current(db)
    except EtlCraftError as error:
        return [CheckResult(name, FAIL, error.message)]
    missing = _missing_guards(db)
    if missing:
        shown = ", ".join(sorted(missing)[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        return [
            CheckResult(
                name,
                FAIL,
                f"{len(missing)} guard trigger(s) are missing ({shown}): the Engine DB no longer refuses writes "
                "that don't come through etl-craft, so its history may have been changed; restore it from a "
                f"backup, or recreate each trigger from its CREATE TRIGGER statement in the packaged schema.sql",
            )
        ]
    project_dir = config.project_dir / "migrations"
    detail = f"{len(state.applied_engine)} ENGINE migration(s) applied"
    if project_dir.is_dir():
        try:
            files = migrations.project_migrations(project_dir)
            with db.read() as conn:
                applied = {
                    r[0] for r in conn.exec_driver_sql("SELECT VERSION FROM SCHEMA_MIGRATIONS WHERE SOURCE = 'PROJECT'")
                }
        except EtlCraftError as error:
            return [CheckResult(name, FAIL, error.message)]
        pending = [f.version for f in files if f.version not in applied]
        if pending:
            return [
                CheckResult(
                    name,
                    FAIL,
                    f"{len(pending)} project migration(s) not applied: {', '.join(pending)}; "
                    "apply them with etl-craft migrate",
                )
            ]
        detail += f", {len(applied)} PROJECT migration(s) applied"
    return [CheckResult(name, OK, detail)]
