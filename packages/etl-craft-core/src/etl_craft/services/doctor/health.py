"""The health of a serving process: its version, and whether its Engine DB answers and is current.
The API's `/api/v1/health` returns it (a down Engine DB never gets here: the API answers 503)."""

from __future__ import annotations

from dataclasses import dataclass

from etl_craft import __version__
from etl_craft.engine.schema import migrations
from etl_craft.services.context import OperationContext


@dataclass(frozen=True)
class HealthView:
    status: str  # ok, or degraded when the Engine DB answers but its schema is not current
    version: str
    engine_db: str  # dialect and address, never a credential
    schema_current: bool


def engine_db_health(ctx: OperationContext) -> HealthView:
    state = migrations.schema_state(ctx.db)
    current = state.current
    where = f"{ctx.db.dialect.name} {ctx.db.display_url}"
    return HealthView("ok" if current else "degraded", __version__, where, current)
