"""The queue's claim keeps every limit of S5.E in its one statement (PostgreSQL: the queue needs it):
priority order, each run's MAX_PARALLEL_TASKS, the pool's CFG_POOLS slots by kind, the warehouse
connection's Max_warehouse_queries; a limit reached skips an attempt, never the ones behind it."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind
from etl_craft.engine import transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t
from etl_craft.engine.transitions.values import AttemptOutcome
from etl_craft.execution.run_loop.leases import lease_until
from tests.fixtures.seed import in_progress_run, pipeline_with_tasks

pytestmark = pytest.mark.parametrize("dialect", [pytest.param("postgresql", marks=pytest.mark.postgres)])
ACTOR = Actor("queue-limits@test", ActorKind.SYSTEM)
POOL = "limits"
DEFAULT = transitions.ClaimLimits(default_max_parallel=8)


def _queued(db: EngineDb, code: str, tasks: int, *, kind: str = "ingestion", **pipeline: object) -> dict[int, str]:
    """A pipeline of `tasks` tasks with `pipeline` settings, one IN-PROGRESS run, every attempt in the pool."""
    pipeline_id, task_ids = pipeline_with_tasks(db, code, [f"t{n}" for n in range(tasks)])
    if pipeline:
        with db.write() as conn:
            conn.execute(
                t.cfg_pipelines.update().where(t.cfg_pipelines.c.pipeline_id == pipeline_id).values(**pipeline)
            )
    now = utc_now()
    run_id = in_progress_run(db, pipeline_id, "overseer", now, lease_until(now))
    labels = {}
    with db.write() as conn:
        for task_code, task_id in task_ids.items():
            queued = transitions.queue_attempt(conn, pipeline_run_id=run_id, task_id=task_id, actor=ACTOR, now=now)
            transitions.offer_attempt(conn, queued.attempt_id, pool=POOL, slot_kind=kind, now=now)
            labels[queued.attempt_id] = f"{code}.{task_code}"
    return labels


def _claim(db: EngineDb, owner: str, limits: transitions.ClaimLimits = DEFAULT, kinds=("ingestion",)) -> int | None:
    now = utc_now()
    with acting_as(ACTOR), db.write() as conn:
        return transitions.claim_next(
            conn,
            pool=POOL,
            kinds=list(kinds),
            owner_id=owner,
            host="h",
            lease_until=lease_until(now),
            now=now,
            limits=limits,
        )


def _drain(db: EngineDb, owner: str, **kw: object) -> list[int]:
    claimed = []
    while (attempt_id := _claim(db, owner, **kw)) is not None:  # type: ignore[arg-type]
        claimed.append(attempt_id)
    return claimed


def _finish(db: EngineDb, attempt_id: int, owner: str) -> None:
    now = utc_now()
    with acting_as(ACTOR), db.write() as conn:
        transitions.start_attempt(conn, attempt_id, owner_id=owner, pid=1, process_start="x", log_path="l", now=now)
    with acting_as(ACTOR), db.write() as conn:
        transitions.finish_attempt(conn, attempt_id, owner_id=owner, outcome=AttemptOutcome("SUCCESS"), now=now)


def _statuses(db: EngineDb) -> dict[int, tuple[str, str | None, int]]:
    with db.read() as conn:
        rows = conn.execute(sa.select(t.aud_task_attempts).where(t.aud_task_attempts.c.pool == POOL)).all()
    return {r.attempt_id: (r.status, r.owner_id, r.priority) for r in rows}


def test_priority_run_limits_and_pool_slots_hold_and_a_full_run_skips_not_blocks(engine_db: EngineDb) -> None:
    with acting_as(ACTOR), engine_db.write() as conn:
        conn.execute(t.cfg_pools.insert().values(pool_name=POOL, ingestion_slots=4))
    low = _queued(engine_db, "LOW", 5, max_parallel_tasks=2)  # queued first: older
    high = _queued(engine_db, "HIGH", 3, priority=5)
    other = _queued(engine_db, "OTHER", 2)
    assert {a: p for a, (_s, _o, p) in _statuses(engine_db).items()} == {
        **dict.fromkeys(low, 0),
        **dict.fromkeys(high, 5),
        **dict.fromkeys(other, 0),
    }
    first = _drain(engine_db, "w1")
    # HIGH first, then the oldest of priority 0 (LOW) until the pool's 4 ingestion slots are full.
    assert first == [*sorted(high), min(low)]
    _finish(engine_db, first[0], "w1")
    _finish(engine_db, first[1], "w1")
    second = _drain(engine_db, "w1")
    # LOW takes its second and last slot (MAX_PARALLEL_TASKS 2); its third is skipped, not blocking OTHER.
    assert second == [sorted(low)[1], min(other)]
    statuses = _statuses(engine_db)
    assert sorted(a for a, (s, _o, _p) in statuses.items() if s == "CLAIMED") == sorted([first[2], first[3], *second])
    assert sorted(a for a, (s, _o, _p) in statuses.items() if s == "SUCCESS") == sorted(first[:2])
    assert all(o == "w1" for s, o, _p in statuses.values() if s != "QUEUED")


def test_concurrent_claims_never_pass_a_limit(engine_db: EngineDb) -> None:
    """Eight workers race for one run limited to 3: exactly 3 attempts are claimed, once each."""
    labels = _queued(engine_db, "RACE", 40, max_parallel_tasks=3)
    barrier = threading.Barrier(8)
    claimed: dict[str, list[int]] = {}

    def worker(name: str) -> None:
        barrier.wait()
        claimed[name] = _drain(engine_db, name)

    threads = [threading.Thread(target=worker, args=(f"w{n}",)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [a for got in claimed.values() for a in got]
    assert len(every) == 3 and len(set(every)) == 3
    statuses = _statuses(engine_db)
    assert sorted(a for a, (s, _o, _p) in statuses.items() if s == "CLAIMED") == sorted(every)
    assert sum(1 for s, _o, _p in statuses.values() if s == "QUEUED") == len(labels) - 3


def test_the_warehouse_connection_limit_holds_warehouse_attempts_only(engine_db: EngineDb) -> None:
    warehouse = _queued(engine_db, "WH", 3, kind="warehouse")
    ingestion = _queued(engine_db, "ING", 2)
    limits = transitions.ClaimLimits(default_max_parallel=8, max_warehouse_queries=1)
    claimed = _drain(engine_db, "w1", limits=limits, kinds=("warehouse", "ingestion"))
    assert claimed == [min(warehouse), *sorted(ingestion)]
    _finish(engine_db, claimed[0], "w1")
    assert _drain(engine_db, "w1", limits=limits, kinds=("warehouse", "ingestion")) == [sorted(warehouse)[1]]
