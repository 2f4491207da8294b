"""The PostgreSQL queue (S5.C): offering attempts to a pool, workers registering, claiming,
heartbeating, draining and going.

Every status change is one guarded UPDATE whose row count is checked. Every write to AUD_WORKERS sets
UPDATED_AT (clones copy AUD_ tables incrementally by it). The claim is one UPDATE of the attempt
picked by a `FOR UPDATE SKIP LOCKED` sub-select that the partial index ix_attempt_pool_queue
serves (no OR in its predicate: only due attempts are ever offered). The heartbeat renews the
worker and every lease it holds in one statement and returns which attempts it still holds.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from etl_craft.core.enums import OWNED_ATTEMPT
from etl_craft.engine.dialects import for_connection
from etl_craft.engine.schema.tables import aud_pipelines_run_log as runs
from etl_craft.engine.schema.tables import aud_task_attempts as attempts
from etl_craft.engine.schema.tables import aud_task_run_log as task_runs
from etl_craft.engine.schema.tables import aud_workers as workers
from etl_craft.engine.schema.tables import cfg_pipelines as pipelines
from etl_craft.engine.schema.tables import cfg_pools as pools
from etl_craft.engine.transitions.common import announce, check_rowcount, found_attempt

LIVE_WORKER = ("ACTIVE", "DRAINING")


def queue_channel(pool: str) -> str:
    """The payload that wakes the workers of a pool (on the events channel: one LISTEN for all)."""
    return f"queue:{pool}"


@dataclass(frozen=True)
class Renewal:
    worker_status: str | None  # None: the worker row is GONE (or was never registered)
    attempts: tuple[int, ...]  # the attempts whose leases were renewed: those it still holds
    cancel_requested: frozenset[int] = frozenset()  # of those, the ones a cancel asked it to stop (S5.D)


def offer_attempt(
    conn: sa.Connection, attempt_id: int, *, pool: str, slot_kind: str, now: datetime, priority: int | None = None
) -> None:
    """Put a QUEUED (and due) attempt in a pool's queue, where a worker of the pool claims it. Its
    priority is its pipeline's CFG_PIPELINES.PRIORITY unless `priority` is given."""
    pipeline_priority = (
        sa.select(pipelines.c.priority)
        .select_from(
            task_runs.join(runs, runs.c.pipeline_run_id == task_runs.c.pipeline_run_id).join(
                pipelines, pipelines.c.pipeline_id == runs.c.pipeline_id
            )
        )
        .where(task_runs.c.task_run_id == attempts.c.task_run_id)
        .scalar_subquery()
    )
    result = conn.execute(
        attempts.update()
        .where(attempts.c.attempt_id == attempt_id, attempts.c.status == "QUEUED", attempts.c.pool.is_(None))
        .values(
            pool=pool, slot_kind=slot_kind, priority=pipeline_priority if priority is None else priority, queued_at=now
        )
    )
    check_rowcount(
        result, f"attempt {attempt_id}", "QUEUED and in no pool yet", lambda: found_attempt(conn, attempt_id)
    )
    announce(conn, queue_channel(pool))


def register_worker(
    conn: sa.Connection,
    *,
    owner_id: str,
    pool: str,
    host: str,
    pid: int,
    version: str,
    ingestion_slots: int,
    warehouse_slots: int,
    now: datetime,
) -> int:
    return int(
        conn.execute(
            workers.insert()
            .values(
                owner_id=owner_id,
                pool=pool,
                host=host,
                pid=pid,
                version=version,
                ingestion_slots=ingestion_slots,
                warehouse_slots=warehouse_slots,
                started_at=now,
                heartbeat_at=now,
                status="ACTIVE",
                updated_at=now,
            )
            .returning(workers.c.worker_id)
        ).scalar_one()
    )


@dataclass(frozen=True)
class ClaimLimits:
    """The limits a claim keeps (S5.E), besides the worker's own free slots: each run's
    CFG_PIPELINES.MAX_PARALLEL_TASKS (else `default_max_parallel`, Orchestration.Max_parallel_tasks),
    the pool's CFG_POOLS slots by kind, and the warehouse connection's Max_warehouse_queries."""

    default_max_parallel: int
    max_warehouse_queries: int | None = None


def _held(*where: Callable[[sa.Alias], sa.ColumnElement[bool]], in_run: Any = None) -> sa.ScalarSelect[int]:
    """How many attempts matching `where` (and of run `in_run`) are CLAIMED or RUNNING."""
    held = attempts.alias("held")
    query = sa.select(sa.func.count()).select_from(held).where(held.c.status.in_(OWNED_ATTEMPT))
    if in_run is not None:
        held_run = task_runs.alias("held_run")
        query = query.join(held_run, held_run.c.task_run_id == held.c.task_run_id).where(
            held_run.c.pipeline_run_id == in_run
        )
    return query.where(*[rule(held) for rule in where]).scalar_subquery()


def _within_limits(q: sa.Alias, run_id: Any, limits: ClaimLimits, pool: str) -> list[Any]:
    """The claim's limit predicates on candidate `q` of the run `run_id`; no OR (a NULL limit reads
    as one more than what is held, which always passes)."""
    per_run = (
        sa.select(sa.func.coalesce(pipelines.c.max_parallel_tasks, limits.default_max_parallel))
        .select_from(pipelines.join(runs, runs.c.pipeline_id == pipelines.c.pipeline_id))
        .where(runs.c.pipeline_run_id == run_id)
        .scalar_subquery()
    )
    in_pool = _held(lambda h: h.c.pool == pool, lambda h: h.c.slot_kind == q.c.slot_kind)
    pool_slots = (
        sa.select(sa.case((q.c.slot_kind == "ingestion", pools.c.ingestion_slots), else_=pools.c.warehouse_slots))
        .where(pools.c.pool_name == pool, pools.c.active_flag == "Y")
        .scalar_subquery()
    )
    rules: list[Any] = [_held(in_run=run_id) < per_run, in_pool < sa.func.coalesce(pool_slots, in_pool + 1)]
    if limits.max_warehouse_queries is not None:
        on_connection = _held(lambda h: h.c.slot_kind == "warehouse")
        rules.append(
            sa.case((q.c.slot_kind == "warehouse", on_connection < limits.max_warehouse_queries), else_=sa.true())
        )
    return rules


def claim_next(
    conn: sa.Connection,
    *,
    pool: str,
    kinds: Sequence[str],
    owner_id: str,
    host: str,
    lease_until: datetime,
    now: datetime,
    limits: ClaimLimits,
) -> int | None:
    """Claim the pool's next queued attempt of one of `kinds` (highest priority, then oldest) that
    every limit allows, for this worker, or None when there is none nobody else is claiming. A
    limit reached skips that attempt, never the others: the sub-select looks further down the
    queue. Claims are serialized (the dialect's claim lock) so concurrent ones cannot pass a limit
    together; the limits are counted in the claim's own statement, after the lock."""
    for_connection(conn).serialize_claims(conn)
    q = attempts.alias("q")
    q_run = task_runs.alias("q_run")
    picked = (
        sa.select(q.c.attempt_id)
        .join_from(q, q_run, q_run.c.task_run_id == q.c.task_run_id)
        .where(
            q.c.status == "QUEUED",
            q.c.pool == pool,
            q.c.slot_kind.in_(list(kinds)),
            *_within_limits(q, q_run.c.pipeline_run_id, limits, pool),
        )
        .order_by(q.c.priority.desc(), q.c.queued_at, q.c.attempt_id)
        .limit(1)
        .with_for_update(skip_locked=True, of=q)
        .scalar_subquery()
    )
    return conn.execute(
        attempts.update()
        .where(attempts.c.attempt_id == picked, attempts.c.status == "QUEUED")
        .values(
            status="CLAIMED",
            owner_id=owner_id,
            host=host,
            claimed_at=now,
            heartbeat_at=now,
            lease_expires_at=lease_until,
        )
        .returning(attempts.c.attempt_id)
    ).scalar_one_or_none()


def renew_worker(conn: sa.Connection, *, owner_id: str, lease_until: datetime, now: datetime) -> Renewal:
    """One statement: the worker's heartbeat and the lease of every attempt it still holds (only
    while the worker is ACTIVE or DRAINING); returns which those are."""
    beat = (
        workers.update()
        .where(workers.c.owner_id == owner_id, workers.c.status.in_(LIVE_WORKER))
        .values(heartbeat_at=now, updated_at=now)
        .returning(workers.c.status)
        .cte("beat")
    )
    renewed = (
        attempts.update()
        .where(
            attempts.c.owner_id == owner_id,
            attempts.c.status.in_(OWNED_ATTEMPT),
            sa.exists(sa.select(beat.c.status)),
        )
        .values(lease_expires_at=lease_until, heartbeat_at=now)
        .returning(attempts.c.attempt_id, attempts.c.cancel_requested_at)
        .cte("renewed")
    )
    one = sa.select(sa.literal(1).label("one")).subquery("one")
    rows = conn.execute(
        sa.select(
            sa.select(beat.c.status).scalar_subquery().label("worker_status"),
            renewed.c.attempt_id,
            renewed.c.cancel_requested_at,
        ).select_from(one.outerjoin(renewed, sa.true()))
    ).all()
    status = rows[0].worker_status if rows else None
    held = [r for r in rows if r.attempt_id is not None]
    return Renewal(
        status,
        tuple(r.attempt_id for r in held),
        frozenset(r.attempt_id for r in held if r.cancel_requested_at is not None),
    )


def request_cancel(conn: sa.Connection, of: sa.ColumnElement[bool], *, now: datetime) -> list[int]:
    """Ask the workers holding these attempts (CLAIMED or RUNNING in a queue pool) to stop them
    (S5.D): CANCEL_REQUESTED_AT is set once and the status stays; the worker sees the request at its
    next heartbeat, stops the task process and records CANCELLED with its acknowledgement
    (acknowledge_cancel). Returns the ids asked, now or before."""
    asked = (
        attempts.update()
        .where(of, attempts.c.pool.is_not(None), attempts.c.status.in_(OWNED_ATTEMPT))
        .values(cancel_requested_at=sa.func.coalesce(attempts.c.cancel_requested_at, now))
        .returning(attempts.c.attempt_id)
    )
    return list(conn.execute(asked).scalars().all())


def drain_worker(conn: sa.Connection, *, owner_id: str, now: datetime) -> None:
    """ACTIVE -> DRAINING: it claims nothing new and finishes what it holds."""
    result = conn.execute(
        workers.update()
        .where(workers.c.owner_id == owner_id, workers.c.status == "ACTIVE")
        .values(status="DRAINING", updated_at=now, status_reason="SIGTERM: draining")
    )
    check_rowcount(result, f"worker {owner_id}", "ACTIVE", "not ACTIVE (already draining or gone)")


def worker_gone(conn: sa.Connection, *, owner_id: str, reason: str, now: datetime) -> bool:
    """ACTIVE or DRAINING -> GONE; False when it was GONE already."""
    result = conn.execute(
        workers.update()
        .where(workers.c.owner_id == owner_id, workers.c.status.in_(LIVE_WORKER))
        .values(status="GONE", stopped_at=now, updated_at=now, status_reason=reason)
    )
    return result.rowcount == 1


def silent_workers_gone(conn: sa.Connection, *, heartbeat_before: datetime, now: datetime) -> list[str]:
    """Every live worker whose heartbeat is older than `heartbeat_before` becomes GONE, in one
    statement; returns their owner ids (their attempts' leases then run out and reconciliation
    records them LOST)."""
    return list(
        conn.execute(
            workers.update()
            .where(workers.c.status.in_(LIVE_WORKER), workers.c.heartbeat_at < heartbeat_before)
            .values(status="GONE", stopped_at=now, updated_at=now, status_reason="missed three heartbeats")
            .returning(workers.c.owner_id)
        ).scalars()
    )
