"""AUD_OVERSEERS: the history of `etl-craft server` processes.

The session lock the server holds is the source of leadership; these rows say who holds it (to name
the active overseer to a second one) and who held it before. A hard-killed overseer's row keeps no
STOPPED_AT: its heartbeat shows when it died.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine.schema import tables as t

overseers = t.aud_overseers


@dataclass(frozen=True)
class OverseerRow:
    overseer_id: int
    host: str
    pid: int
    version: str
    started_at: datetime
    heartbeat_at: datetime
    stopped_at: datetime | None
    started_by: str

    def describe(self) -> str:
        return (
            f"overseer {self.overseer_id} on {self.host} (pid {self.pid}, version {self.version}, "
            f"since {self.started_at:%Y-%m-%d %H:%M:%S}Z, last heartbeat {self.heartbeat_at:%H:%M:%S}Z)"
        )


def record_start(conn: sa.Connection, *, host: str, pid: int, version: str, actor: Actor, now: datetime) -> int:
    return int(
        conn.execute(
            overseers.insert()
            .values(
                host=host,
                pid=pid,
                version=version,
                started_at=now,
                heartbeat_at=now,
                started_by=actor.name,
                started_by_kind=actor.kind.value,
            )
            .returning(overseers.c.overseer_id)
        ).scalar_one()
    )


def heartbeat(conn: sa.Connection, overseer_id: int, now: datetime) -> None:
    result = conn.execute(
        overseers.update()
        .where(overseers.c.overseer_id == overseer_id, overseers.c.stopped_at.is_(None))
        .values(heartbeat_at=now)
    )
    if result.rowcount != 1:
        raise StaleTransitionError(
            f"overseer {overseer_id}",
            found="its row is stopped or gone",
            expected="a running overseer",
            remedy="restart etl-craft server",
        )


def record_stop(conn: sa.Connection, overseer_id: int, *, actor: Actor, now: datetime) -> None:
    conn.execute(
        overseers.update()
        .where(overseers.c.overseer_id == overseer_id, overseers.c.stopped_at.is_(None))
        .values(stopped_at=now, heartbeat_at=now, stopped_by=actor.name, stopped_by_kind=actor.kind.value)
    )


def latest_running(conn: sa.Connection) -> OverseerRow | None:
    """The newest overseer that never recorded a stop: the active one, when the lock is held."""
    row = conn.execute(
        sa.select(
            overseers.c.overseer_id,
            overseers.c.host,
            overseers.c.pid,
            overseers.c.version,
            overseers.c.started_at,
            overseers.c.heartbeat_at,
            overseers.c.stopped_at,
            overseers.c.started_by,
        )
        .where(overseers.c.stopped_at.is_(None))
        .order_by(overseers.c.overseer_id.desc())
        .limit(1)
    ).first()
    return OverseerRow(*row) if row else None
