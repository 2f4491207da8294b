"""doctor's Cloning line: the real state of the mirror, read from its state table in the warehouse
(the last clone, how long ago, its error), instead of a promise that cloning copies the tables."""

from __future__ import annotations

from datetime import timedelta

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.checks import FAIL, OK, WARN, CheckResult
from etl_craft.core.clock import as_utc, iso, utc_now
from etl_craft.core.errors import EtlCraftError
from etl_craft.engine.database import EngineDb
from etl_craft.services.cloning.mirror import CLONE_ROW, Mirror
from etl_craft.warehouse.dialect import load_dialect
from etl_craft.warehouse.session import WarehouseError

NAME = "Cloning"
TIMEOUT_SECONDS = 10.0


def cloning_check(config: ConnectorConfig, db: EngineDb | None) -> list[CheckResult]:
    settings = config.cloning
    if not settings.enabled or config.warehouse is None or db is None:
        return []
    dialect = load_dialect(config)
    path = dialect.storage_file()
    if path is not None and not path.exists():
        return [
            CheckResult(NAME, WARN, f"no clone yet: {path} does not exist; run etl-craft clone or etl-craft server")
        ]
    try:
        with dialect.session(db, lock_timeout=TIMEOUT_SECONDS) as session:
            rows = Mirror(dialect, session, config.warehouse.schema or dialect.default_schema).state_rows()
    except (WarehouseError, EtlCraftError) as error:
        return [CheckResult(NAME, WARN, f"state not read: {error}")]
    clone = next((r for r in rows if r[0] == CLONE_ROW), None)
    if clone is None:
        return [
            CheckResult(
                NAME, WARN, "no clone yet (Scope " + settings.scope + "); run etl-craft clone or etl-craft server"
            )
        ]
    _, _, cloned_at, copied, error = clone
    cloned_at = as_utc(cloned_at)
    age = utc_now() - cloned_at
    if error:
        return [CheckResult(NAME, FAIL, f"the last clone, at {iso(cloned_at)}, failed: {error}")]
    detail = (
        f"last clone {iso(cloned_at)} ({int(age.total_seconds() // 60)} min ago, {copied} row(s) copied), "
        f"{len(rows) - 1} table(s) mirrored, every {settings.every_minutes} min"
    )
    if age > 2 * timedelta(minutes=settings.every_minutes):
        return [CheckResult(NAME, WARN, f"lagging: {detail}; is etl-craft server running?")]
    return [CheckResult(NAME, OK, detail)]
