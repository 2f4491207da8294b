"""The health of the worker agents that run attempts: AUD_WORKERS, with each heartbeat's age.

In local mode the process that claims an attempt (`etl-craft server` or a foreground `etl-craft run`)
starts its task process itself, and worker agents run the attempts of tasks whose POOL names a queue
pool (PostgreSQL Engine DB only); in remote mode the external orchestrator runs every attempt.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from etl_craft.core.clock import as_utc, utc_now
from etl_craft.engine.reads.workers import workers_seen_since
from etl_craft.services.context import OperationContext

RUNNERS = {
    "local": "attempts run as task processes of the etl-craft process that claimed them (etl-craft server, "
    "or a foreground etl-craft run), and on the worker agents listed here for tasks whose POOL names a "
    "queue pool",
    "remote": "attempts run where the external orchestrator runs each task's etl-craft command",
}
# Workers that stopped within this window are listed beside the live ones, so a worker that just went
# GONE is visible; older ones stay in AUD_WORKERS only.
RECENTLY_STOPPED = timedelta(hours=24)


@dataclass(frozen=True)
class WorkerView:
    pool: str
    host: str
    pid: int
    owner_id: str
    version: str
    status: str  # ACTIVE, DRAINING or GONE
    ingestion_slots: int
    warehouse_slots: int
    started_at: datetime
    heartbeat_at: datetime
    heartbeat_age_seconds: float
    stopped_at: datetime | None
    status_reason: str | None


@dataclass(frozen=True)
class WorkersView:
    mode: str  # Orchestration.Mode of the serving process
    workers: tuple[WorkerView, ...]
    attempts_run_by: str


def worker_health(ctx: OperationContext) -> WorkersView:
    now = utc_now()
    with ctx.db.read() as conn:
        rows = workers_seen_since(conn, now - RECENTLY_STOPPED)
    workers = tuple(
        WorkerView(
            pool=row.pool,
            host=row.host,
            pid=row.pid,
            owner_id=row.owner_id,
            version=row.version,
            status=row.status,
            ingestion_slots=row.ingestion_slots,
            warehouse_slots=row.warehouse_slots,
            started_at=row.started_at,
            heartbeat_at=row.heartbeat_at,
            heartbeat_age_seconds=round(max(0.0, (now - as_utc(row.heartbeat_at)).total_seconds()), 3),
            stopped_at=row.stopped_at,
            status_reason=row.status_reason,
        )
        for row in rows
    )
    mode = ctx.config.orchestration.mode
    return WorkersView(mode=mode, workers=workers, attempts_run_by=RUNNERS[mode])
