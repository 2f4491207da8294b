"""A burst of 1,000 ready tasks over 4 real `etl-craft worker` processes (S5.E, S5.J): every attempt
runs exactly once, no limit is ever passed, and the high-priority pipeline's tasks run first.

Slow (1,000 task processes): marker chaos, so it runs in the chaos nox session (CI: once), not in
the everyday run. Limits are checked from what the Engine DB recorded (each attempt's STARTED_AT and
ENDED_AT, which lie inside the time it held its slot), doubles from each task's own side effect (a
file counting its calls)."""

from __future__ import annotations

import signal
from collections import defaultdict
from pathlib import Path

import pytest

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind
from etl_craft.engine import transitions
from etl_craft.engine.schema import tables as t
from etl_craft.execution.run_loop.leases import lease_until
from tests.fixtures.harness import Harness, TaskSpec, pipeline_sql
from tests.fixtures.seed import in_progress_run

pytestmark = [pytest.mark.chaos, pytest.mark.parametrize("dialect", ["postgresql"])]
ACTOR = Actor("burst@test", ActorKind.SYSTEM)
POOL = "burst"
POOL_SLOTS = 6  # CFG_POOLS: fewer than the 4 workers x 2 slots, so the pool's own limit binds
LOW_LIMIT = 2  # MAX_PARALLEL_TASKS of each low-priority pipeline
PIPELINES = [("HIGH", 100, 10, None)] + [(f"LOW{n}", 100, 0, LOW_LIMIT) for n in range(9)]  # 1,000 tasks


def _project(harness: Harness, calls: Path) -> None:
    sql = [f"INSERT INTO CFG_POOLS (POOL_NAME, INGESTION_SLOTS, WAREHOUSE_SLOTS) VALUES ('{POOL}', {POOL_SLOTS}, 0);"]
    for code, tasks, priority, limit in PIPELINES:
        specs = [
            TaskSpec(f"t{n}", {"rows_by_call": [1], "calls": str(calls / f"{code}.t{n}")}, parameters={"POOL": POOL})
            for n in range(tasks)
        ]
        sql.append(pipeline_sql(code, specs, []))
        sql.append(
            f"UPDATE CFG_PIPELINES SET PRIORITY = {priority}, MAX_PARALLEL_TASKS = {limit or 'NULL'}"
            f" WHERE PIPELINE_CODE = '{code}';"
        )
    harness.migrate("\n".join(sql) + "\n")


def _queue_everything(harness: Harness) -> dict[int, str]:
    """One IN-PROGRESS run per pipeline, every task's attempt offered to the pool, as the overseer does.
    HIGH's last: its attempts are the newest, so only their priority can put them first."""
    runs = {}
    now = utc_now()
    for pipeline in sorted(harness.rows(t.cfg_pipelines), key=lambda p: p.pipeline_code == "HIGH"):
        runs[in_progress_run(harness.db, pipeline.pipeline_id, "burst-overseer", now, lease_until(now))] = (
            pipeline.pipeline_code
        )
    with acting_as(ACTOR), harness.db.write() as conn:
        for run_id, code in runs.items():
            pipeline_id = next(p.pipeline_id for p in harness.rows(t.cfg_pipelines) if p.pipeline_code == code)
            for task in harness.rows(t.cfg_tasks, t.cfg_tasks.c.pipeline_id == pipeline_id):
                queued = transitions.queue_attempt(
                    conn, pipeline_run_id=run_id, task_id=task.task_id, actor=ACTOR, now=now
                )
                transitions.offer_attempt(conn, queued.attempt_id, pool=POOL, slot_kind="ingestion", now=now)
    return runs


def _most_at_once(intervals: list[tuple[object, object]]) -> int:
    """The most intervals open at one instant (an end before a start at the same instant)."""
    events = sorted([(s, 1) for s, _e in intervals] + [(e, -1) for _s, e in intervals], key=lambda x: (x[0], x[1]))
    most = current = 0
    for _at, step in events:
        current += step
        most = max(most, current)
    return most


def test_a_burst_of_1000_tasks_over_4_workers_keeps_every_limit_and_priority(harness: Harness, tmp_path: Path) -> None:
    calls = tmp_path / "calls"
    calls.mkdir()
    _project(harness, calls)
    runs = _queue_everything(harness)
    workers = [
        harness.start("worker", "--pool", POOL, "--ingestion-slots", "2", "--warehouse-slots", "1") for _ in range(4)
    ]
    harness.wait_until(
        lambda: all(a.status not in ("QUEUED", "CLAIMED", "RUNNING") for a in harness.rows(t.aud_task_attempts)),
        900,
        "every attempt to end",
    )
    for worker in workers:
        worker.signal(signal.SIGTERM)
    for worker in workers:
        assert worker.wait(120).returncode == 0

    attempts = harness.rows(t.aud_task_attempts)
    task_runs = {r.task_run_id: r for r in harness.rows(t.aud_task_run_log)}
    # Nothing lost, nothing doubled: one SUCCESS attempt per task run, each task's script ran once.
    assert len(attempts) == 1000 == len(task_runs)
    assert {a.status for a in attempts} == {"SUCCESS"}
    assert {r.status for r in task_runs.values()} == {"SUCCESS"}
    counts = {f.name: f.read_text() for f in calls.iterdir()}
    assert len(counts) == 1000 and set(counts.values()) == {"1"}
    owners = {w.owner_id for w in harness.rows(t.aud_workers)}
    assert len(owners) == 4 and {a.owner_id for a in attempts} <= owners
    assert len({a.owner_id for a in attempts}) == 4  # the burst was shared

    by_run: dict[str, list[tuple[object, object]]] = defaultdict(list)
    for a in attempts:
        by_run[runs[task_runs[a.task_run_id].pipeline_run_id]].append((a.started_at, a.ended_at))
    every = [span for spans in by_run.values() for span in spans]
    assert _most_at_once(every) <= POOL_SLOTS
    for code, _tasks, _priority, limit in PIPELINES:
        assert _most_at_once(by_run[code]) <= (limit or 8), code

    # The high-priority pipeline first: no low-priority attempt started before the last high one
    # except those that took a slot in the instants the last high ones were being claimed.
    last_high = max(start for start, _end in by_run["HIGH"])
    early_low = [s for code, spans in by_run.items() if code != "HIGH" for s, _e in spans if s < last_high]
    assert len(early_low) <= POOL_SLOTS, len(early_low)
