"""Reconciliation: attempts nobody can vouch for become LOST, and runs nobody holds become resumable.

An owner's claim ends when its lease expires, or at once when the owner is a process on this host
that is verifiably gone. A claimed or running attempt of such an owner is marked LOST (its side
effects are unknown) and its task run FAILED; if its task process still runs on this host it is
stopped. An owner on another host is given two lease periods before its attempts are declared lost.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import sqlalchemy as sa

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import OWNED_ATTEMPT, UNFINISHED_RUN
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine import reads, transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads import AttemptRow
from etl_craft.engine.schema.tables import aud_pipelines_run_log as runs
from etl_craft.engine.schema.tables import aud_task_attempts as attempts
from etl_craft.engine.schema.tables import aud_task_run_log as task_runs
from etl_craft.engine.schema.tables import aud_workers as workers
from etl_craft.execution.processes.identity import OwnerId, is_alive, signal_group
from etl_craft.execution.run_loop.leases import LEASE_SECONDS

log = logging.getLogger("etl_craft.reconcile")


@dataclass(frozen=True)
class LostAttempt:
    attempt_id: int
    task_run_id: int
    owner_id: str
    message: str
    stopped_process: bool


@dataclass(frozen=True)
class ReconcileReport:
    lost: tuple[LostAttempt, ...] = ()
    released_runs: tuple[int, ...] = ()
    live: int = 0  # claimed or running attempts whose owners still hold them
    notes: tuple[str, ...] = field(default=())


def _why_gone(owner_text: str | None, lease: datetime | None, now: datetime) -> str | None:
    """How the owner is known to be gone (the end of a sentence about it), or None while it may live.

    A dead process on this host is known at once, while its lease may still run: the reason then
    names the process, never a lease time that has not come yet.
    """
    owner = OwnerId.parse(owner_text or "")
    if owner is not None and owner.verifiably_dead():
        return f"is gone: its process {owner.pid} no longer runs on {owner.host}"
    if lease is None:
        return "holds it without a lease"
    grace = LEASE_SECONDS if owner is not None and owner.host != socket.gethostname() else 0
    if lease + timedelta(seconds=grace) < now:
        return f"stopped renewing its lease, which expired at {lease:%Y-%m-%d %H:%M:%S}Z"
    return None


def _lose(db: EngineDb, attempt: AttemptRow, why: str, now: datetime) -> LostAttempt | None:
    message = f"attempt {attempt.attempt_number} was lost: owner {attempt.owner_id} {why}"
    try:
        with db.write() as conn:
            transitions.lose_attempt(
                conn, attempt.attempt_id, expected_owner=attempt.owner_id or "", message=message, now=now
            )
    except StaleTransitionError:
        return None  # it ended or changed hands meanwhile
    stopped = False
    if attempt.host == socket.gethostname() and attempt.pid and is_alive(attempt.pid, attempt.process_start):
        # A task process whose supervisor is gone: nobody would record its outcome, so stop it. Only
        # after LOST is committed: stopped first, it could record its own FAILED before the fence.
        stopped = signal_group(attempt.pid, attempt.process_start, 15)
    log.warning("%s", message)
    return LostAttempt(attempt.attempt_id, attempt.task_run_id, attempt.owner_id or "", message, stopped)


def _release_abandoned_runs(db: EngineDb, now: datetime, pipeline_id: int | None) -> list[int]:
    query = sa.select(runs.c.pipeline_run_id, runs.c.owner_id, runs.c.lease_expires_at).where(
        runs.c.status.in_(UNFINISHED_RUN), runs.c.owner_id.is_not(None)
    )
    if pipeline_id is not None:
        query = query.where(runs.c.pipeline_id == pipeline_id)
    with db.read() as conn:
        candidates = conn.execute(query).all()
    released = []
    for run_id, owner, lease in candidates:
        if _why_gone(owner, lease, now) is None:
            continue
        with db.write() as conn:
            live = conn.execute(
                sa.select(sa.func.count())
                .select_from(attempts.join(task_runs, task_runs.c.task_run_id == attempts.c.task_run_id))
                .where(task_runs.c.pipeline_run_id == run_id, attempts.c.status.in_(OWNED_ATTEMPT))
            ).scalar_one()
            if live:
                continue
            try:
                transitions.release_run(conn, run_id, owner_id=owner)
            except StaleTransitionError:
                continue
        released.append(run_id)
    return released


# A worker heartbeats every WORKER_HEARTBEAT_SECONDS; after three missed heartbeats it is GONE.
WORKER_HEARTBEAT_SECONDS = 10
GONE_AFTER_SECONDS = 3 * WORKER_HEARTBEAT_SECONDS


def _gone_workers(db: EngineDb, owners: set[str], now: datetime) -> set[str]:
    """Where the Engine DB hosts the queue: the workers silent for three heartbeats become GONE (one
    statement), and of `owners`, those that are GONE: their attempts are lost without waiting for
    their leases."""
    if db.dialect.queue_refusal is not None:
        return set()
    with db.write() as conn:
        for owner in transitions.silent_workers_gone(
            conn, heartbeat_before=now - timedelta(seconds=GONE_AFTER_SECONDS), now=now
        ):
            log.warning("worker %s is GONE: it missed three heartbeats (%s s)", owner, GONE_AFTER_SECONDS)
        if not owners:
            return set()
        return set(
            conn.execute(
                sa.select(workers.c.owner_id).where(workers.c.owner_id.in_(sorted(owners)), workers.c.status == "GONE")
            ).scalars()
        )


def reconcile(db: EngineDb, *, pipeline_id: int | None = None, task_id: int | None = None) -> ReconcileReport:
    """Fence every expired or orphaned claim (optionally only of one pipeline, or one task of it)."""
    now = utc_now()
    with db.read() as conn:
        owned = reads.owned_attempts(conn, pipeline_id)
        if task_id is not None:
            ids = {
                r.task_run_id
                for r in conn.execute(sa.select(task_runs.c.task_run_id).where(task_runs.c.task_id == task_id))
            }
            owned = [a for a in owned if a.task_run_id in ids]
    gone = _gone_workers(db, {a.owner_id for a in owned if a.owner_id}, now)
    lost, live = [], 0
    for attempt in owned:
        if attempt.owner_id in gone:
            why: str | None = "is a worker that is GONE (it stopped or missed three heartbeats)"
        else:
            why = _why_gone(attempt.owner_id, attempt.lease_expires_at, now)
        if why is None:
            live += 1
            continue
        found = _lose(db, attempt, why, now)
        if found:
            lost.append(found)
    released = _release_abandoned_runs(db, now, pipeline_id) if task_id is None else []
    return ReconcileReport(tuple(lost), tuple(released), live)
