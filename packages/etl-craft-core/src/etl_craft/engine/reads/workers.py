"""Reads of AUD_WORKERS: the worker agents of the queue pools, for their health view."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.engine.schema.tables import aud_workers


@dataclass(frozen=True)
class WorkerRow:
    worker_id: int
    owner_id: str
    pool: str
    host: str
    pid: int
    version: str
    ingestion_slots: int
    warehouse_slots: int
    started_at: datetime
    heartbeat_at: datetime
    status: str
    stopped_at: datetime | None
    status_reason: str | None


def workers_seen_since(conn: sa.Connection, since: datetime) -> list[WorkerRow]:
    """Live workers (ACTIVE, DRAINING) and those that stopped after `since`: never the whole history
    of a cluster whose workers come and go."""
    columns = [aud_workers.c[field] for field in WorkerRow.__dataclass_fields__]
    rows = conn.execute(
        sa.select(*columns)
        .where(sa.or_(aud_workers.c.status.in_(("ACTIVE", "DRAINING")), aud_workers.c.stopped_at >= since))
        .order_by(aud_workers.c.pool, aud_workers.c.worker_id)
    )
    return [WorkerRow(**row._mapping) for row in rows]
