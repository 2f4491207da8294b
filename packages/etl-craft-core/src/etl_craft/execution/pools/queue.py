"""The queue provider (S5.C): attempts wait in the PostgreSQL queue for the workers of a pool.

The caller queues the attempt (it is not claimed on this host); `submit` offers it to the pool, and
a worker (`etl-craft worker --pool NAME`) claims it with `FOR UPDATE SKIP LOCKED`, runs it in its own
task process and records its outcome, fenced by the worker's owner id. What this side knows of an
attempt is what the Engine DB says: live while QUEUED, CLAIMED or RUNNING, ended once terminal.
Capacity is the slots of the pool's live workers (at most its CFG_POOLS slots) less the attempts
queued or held in the pool.
"""

from __future__ import annotations

import multiprocessing.connection
from collections.abc import Sequence

import sqlalchemy as sa

from etl_craft.core.actor import current_actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import LIVE_ATTEMPT
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine import transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema.tables import aud_task_attempts as attempts
from etl_craft.engine.schema.tables import aud_workers as workers
from etl_craft.engine.schema.tables import cfg_pools as pools
from etl_craft.execution.pools.interface import (
    AttemptSpec,
    Capacity,
    ExecutionHandle,
    HandleState,
    HandleStatus,
    SlotKind,
)


class QueuePool:
    owner_claims = False  # the pool's workers claim its attempts

    def __init__(self, db: EngineDb, name: str) -> None:
        self.db, self.name = db, name

    def capacity(self) -> Capacity:
        with self.db.read() as conn:
            slots = conn.execute(
                sa.select(
                    sa.func.coalesce(sa.func.sum(workers.c.ingestion_slots), 0),
                    sa.func.coalesce(sa.func.sum(workers.c.warehouse_slots), 0),
                ).where(workers.c.pool == self.name, workers.c.status == "ACTIVE")
            ).one()
            taken: dict[str, int] = {
                kind: count
                for kind, count in conn.execute(
                    sa.select(attempts.c.slot_kind, sa.func.count())
                    .where(attempts.c.pool == self.name, attempts.c.status.in_(LIVE_ATTEMPT))
                    .group_by(attempts.c.slot_kind)
                )
            }
            capped = conn.execute(
                sa.select(pools.c.ingestion_slots, pools.c.warehouse_slots).where(
                    pools.c.pool_name == self.name, pools.c.active_flag == "Y"
                )
            ).one_or_none()
        # CFG_POOLS slots cap what the pool's workers offer (the claim counts the same limit).
        total = {SlotKind.INGESTION: int(slots[0]), SlotKind.WAREHOUSE: int(slots[1])}
        if capped is not None:
            for kind, cap in zip((SlotKind.INGESTION, SlotKind.WAREHOUSE), capped, strict=True):
                if cap is not None:
                    total[kind] = min(total[kind], cap)
        return Capacity(total, {k: max(0, n - int(taken.get(k.value, 0))) for k, n in total.items()})

    def submit(self, spec: AttemptSpec) -> ExecutionHandle:
        handle = ExecutionHandle(self.name, spec.attempt_id, spec.slot_kind)
        try:
            with self.db.write() as conn:
                transitions.offer_attempt(
                    conn,
                    spec.attempt_id,
                    pool=self.name,
                    slot_kind=spec.slot_kind.value,
                    now=utc_now(),
                )
        except StaleTransitionError:
            if self._pool_of(spec.attempt_id) != self.name:
                raise
        return handle  # offered now, or before: the same handle, nothing new

    def _pool_of(self, attempt_id: int) -> str | None:
        with self.db.read() as conn:
            return conn.execute(sa.select(attempts.c.pool).where(attempts.c.attempt_id == attempt_id)).scalar()

    def status(self, handle: ExecutionHandle) -> HandleStatus:
        with self.db.read() as conn:
            row = conn.execute(
                sa.select(attempts.c.status, attempts.c.exit_code, attempts.c.pool).where(
                    attempts.c.attempt_id == handle.attempt_id
                )
            ).one_or_none()
        if row is None or row.pool != self.name:
            return HandleStatus(
                handle, HandleState.UNKNOWN, detail=f"no attempt {handle.attempt_id} in pool {self.name}"
            )
        if row.status in LIVE_ATTEMPT:
            return HandleStatus(handle, HandleState.RUNNING, detail=row.status)
        return HandleStatus(handle, HandleState.EXITED, row.exit_code, detail=row.status)

    def cancel(self, handle: ExecutionHandle, grace_seconds: float) -> None:
        """A queued attempt ends CANCELLED at once; one a worker holds is asked to stop (S5.D): the
        worker stops its process at its next heartbeat and records CANCELLED with its acknowledgement."""
        del grace_seconds  # the worker gives its process its own grace
        try:
            with self.db.write() as conn:
                if transitions.request_cancel(conn, attempts.c.attempt_id == handle.attempt_id, now=utc_now()):
                    return
                transitions.cancel_attempt(
                    conn, handle.attempt_id, actor=current_actor(), reason=f"stopped in pool {self.name}", now=utc_now()
                )
        except StaleTransitionError:
            pass  # it ended first

    def reconcile(self) -> list[HandleStatus]:
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(attempts.c.attempt_id, attempts.c.slot_kind, attempts.c.status).where(
                    attempts.c.pool == self.name, attempts.c.status.in_(LIVE_ATTEMPT)
                )
            ).all()
        return [
            HandleStatus(
                ExecutionHandle(self.name, r.attempt_id, SlotKind(r.slot_kind)), HandleState.RUNNING, detail=r.status
            )
            for r in rows
        ]

    def wait(self, extra: Sequence[int], timeout: float) -> None:
        """Nothing of this pool runs here: wait on the caller's descriptors (its NOTIFY listener)."""
        multiprocessing.connection.wait(list(extra), timeout=max(0.0, timeout))
