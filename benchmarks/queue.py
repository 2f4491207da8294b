"""The PostgreSQL queue's claim + complete throughput, as a ratio to a bare SKIP LOCKED loop.

A throwaway PostgreSQL database (127.0.0.1:5432, user postgres, as the tests use) gets an Engine DB
and N queued attempts in pool `bench` (P pipelines x T no-op tasks, one IN-PROGRESS run each). Then
W worker processes with S slots each (default 4 x 8: one thread per slot) drain the queue with what
etl-craft runs per attempt, minus the task process itself: `transitions.claim_next` (the worker's
claim on the partial index), then `start_attempt` and `finish_attempt` (what a no-op task process
records), each in its own transaction; every worker renews its heartbeat and leases once a second
(`renew_worker`, one statement).

The baseline, in the same run and database, is the same number of rows in a bare table with a
partial index on its queued rows, drained by the same W x S threads with one `UPDATE ... WHERE id =
(SELECT ... FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING` and one `UPDATE ... SET status` per row.
Reported: both throughputs (attempts per second) and their ratio (target: at least 0.5), never
asserted.

Usage: uv run python -m benchmarks.queue [--pipelines 20] [--tasks 100] [--workers 4] [--slots 8]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg

from benchmarks import machine
from benchmarks.server import PG, _write_project, postgres_problem, throwaway_database

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "release" / "benchmarks"
ETL_CRAFT = str(Path(sys.executable).with_name("etl-craft"))
POOL = "bench"

BARE_TABLE = """
CREATE TABLE bench_bare (id BIGSERIAL PRIMARY KEY, status TEXT NOT NULL, owner TEXT, queued_at TIMESTAMPTZ NOT NULL);
CREATE INDEX bench_bare_queued ON bench_bare (queued_at) WHERE status = 'QUEUED';
"""
BARE_CLAIM = (
    "UPDATE bench_bare SET status = 'CLAIMED', owner = %s WHERE id = (SELECT id FROM bench_bare"
    " WHERE status = 'QUEUED' ORDER BY queued_at, id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING id"
)
BARE_DONE = "UPDATE bench_bare SET status = 'DONE' WHERE id = %s"


def _queue_attempts(config_path: Path) -> int:
    """One IN-PROGRESS run per pipeline and one queued attempt per task, offered to the pool."""
    from etl_craft.config.loader import load_config
    from etl_craft.core.actor import Actor, acting_as
    from etl_craft.core.clock import utc_now
    from etl_craft.core.enums import ActorKind, RunStatus, TriggerKind
    from etl_craft.engine import transitions
    from etl_craft.engine.database import open_engine_db
    from etl_craft.engine.schema import tables as t

    actor = Actor("benchmark", ActorKind.HUMAN)
    db = open_engine_db(load_config(config_path, os.environ))
    count = 0
    with acting_as(actor):
        with db.read() as conn:
            tasks = conn.execute(
                t.cfg_tasks.select()
                .with_only_columns(t.cfg_tasks.c.pipeline_id, t.cfg_tasks.c.task_id)
                .join(t.cfg_pipelines, t.cfg_pipelines.c.pipeline_id == t.cfg_tasks.c.pipeline_id)
                .where(t.cfg_pipelines.c.pipeline_code != "warmup")
                .order_by(t.cfg_tasks.c.task_id)
            ).all()
        runs: dict[int, int] = {}
        with db.write() as conn:
            for pipeline_id, task_id in tasks:
                now = utc_now()
                if pipeline_id not in runs:
                    runs[pipeline_id] = transitions.create_run(
                        conn,
                        pipeline_id=pipeline_id,
                        status=RunStatus.IN_PROGRESS,
                        trigger_kind=TriggerKind.MANUAL,
                        actor=actor,
                        now=now,
                    )
                queued = transitions.queue_attempt(
                    conn, pipeline_run_id=runs[pipeline_id], task_id=task_id, actor=actor, now=now
                )
                transitions.offer_attempt(conn, queued.attempt_id, pool=POOL, slot_kind="ingestion", now=now)
                count += 1
    db.dispose()
    return count


def _queue_worker(
    config_path: str, slots: int, ready: multiprocessing.synchronize.Event, go: multiprocessing.synchronize.Event
) -> None:
    from etl_craft.config.loader import load_config
    from etl_craft.core.actor import Actor, acting_as
    from etl_craft.core.clock import utc_now
    from etl_craft.core.enums import ActorKind
    from etl_craft.engine import transitions
    from etl_craft.engine.database import open_engine_db
    from etl_craft.engine.transitions.values import AttemptOutcome
    from etl_craft.execution.processes.identity import my_owner_id
    from etl_craft.execution.run_loop.leases import lease_until

    config = load_config(Path(config_path), os.environ)
    db = open_engine_db(config)
    owner = f"{my_owner_id()}"
    actor = Actor("benchmark worker", ActorKind.WORKER)
    # The limits a worker's claim counts (each run's Max_parallel_tasks) cost what they cost here too.
    limits = transitions.ClaimLimits(config.orchestration.max_parallel_tasks)
    with acting_as(actor), db.write() as conn:
        transitions.register_worker(
            conn,
            owner_id=owner,
            pool=POOL,
            host="bench",
            pid=os.getpid(),
            version="bench",
            ingestion_slots=slots,
            warehouse_slots=0,
            now=utc_now(),
        )
    done = threading.Event()

    def slot() -> None:
        with acting_as(actor):
            while True:
                now = utc_now()
                with db.write() as conn:
                    attempt_id = transitions.claim_next(
                        conn,
                        pool=POOL,
                        kinds=["ingestion"],
                        owner_id=owner,
                        host="bench",
                        lease_until=lease_until(now),
                        now=now,
                        limits=limits,
                    )
                if attempt_id is None:
                    return
                with db.write() as conn:
                    transitions.start_attempt(
                        conn,
                        attempt_id,
                        owner_id=owner,
                        pid=os.getpid(),
                        process_start="bench",
                        log_path="-",
                        now=utc_now(),
                    )
                with db.write() as conn:
                    transitions.finish_attempt(
                        conn, attempt_id, owner_id=owner, outcome=AttemptOutcome("SUCCESS"), now=utc_now()
                    )

    def heartbeat() -> None:
        with acting_as(actor):
            while not done.wait(1.0):
                now = utc_now()
                with db.write() as conn:
                    transitions.renew_worker(conn, owner_id=owner, lease_until=lease_until(now), now=now)

    ready.set()
    go.wait()
    beat = threading.Thread(target=heartbeat, daemon=True)
    beat.start()
    threads = [threading.Thread(target=slot) for _ in range(slots)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    done.set()
    db.dispose()


def _bare_worker(
    database: str, slots: int, ready: multiprocessing.synchronize.Event, go: multiprocessing.synchronize.Event
) -> None:
    def slot(n: int) -> None:
        with psycopg.connect(**PG, dbname=database, autocommit=True) as conn:
            while True:
                row = conn.execute(BARE_CLAIM, (f"{os.getpid()}:{n}",)).fetchone()
                if row is None:
                    return
                conn.execute(BARE_DONE, (row[0],))

    ready.set()
    go.wait()
    threads = [threading.Thread(target=slot, args=(n,)) for n in range(slots)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def _drain(target: object, args: tuple[object, ...], workers: int) -> float:
    """Start the workers, wait until each is ready, release them together; the wall time to drain."""
    context = multiprocessing.get_context("spawn")
    go = context.Event()
    readies = [context.Event() for _ in range(workers)]
    processes = [context.Process(target=target, args=(*args, ready, go)) for ready in readies]
    for process in processes:
        process.start()
    for ready in readies:
        ready.wait(120)
    started = time.perf_counter()
    go.set()
    for process in processes:
        process.join()
        assert process.exitcode == 0, f"a benchmark worker exited with {process.exitcode}"
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.queue", description=__doc__.splitlines()[0])
    parser.add_argument("--pipelines", type=int, default=20)
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--slots", type=int, default=8)
    args = parser.parse_args(argv)
    report: dict[str, object] = {
        "benchmark": "queue",
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "workers": args.workers,
        "slots_per_worker": args.slots,
    }
    load, cpus = os.getloadavg()[0], os.cpu_count() or 1
    if load > cpus:
        report["note"] = (
            f"the machine was loaded (1-minute load {load:.1f} on {cpus} CPUs, other jobs running): both loops ran "
            "under it, so the ratio is the figure to read, not the absolute rates"
        )
    problem = postgres_problem()
    if problem:
        report["skipped"] = problem
    else:
        with throwaway_database() as database, tempfile.TemporaryDirectory() as folder:
            env = _write_project(Path(folder), database, args.pipelines, args.tasks)
            for command in (["init-db"], ["migrate"]):
                subprocess.run([ETL_CRAFT, *command], env=env, check=True, capture_output=True)
            config = Path(env["ETL_CRAFT_CONFIG"])
            os.environ["ETL_CRAFT_CONFIG"] = str(config)
            attempts = _queue_attempts(config)
            with psycopg.connect(**PG, dbname=database, autocommit=True) as conn:
                conn.execute(BARE_TABLE)
                conn.execute(
                    "INSERT INTO bench_bare (status, queued_at) SELECT 'QUEUED', clock_timestamp()"
                    " FROM generate_series(1, %s)",
                    (attempts,),
                )
                conn.execute("ANALYZE")
            queue_seconds = _drain(_queue_worker, (str(config), args.slots), args.workers)
            bare_seconds = _drain(_bare_worker, (database, args.slots), args.workers)
            with psycopg.connect(**PG, dbname=database, autocommit=True) as conn:
                succeeded = conn.execute(
                    "SELECT count(*) FROM aud_task_attempts WHERE status = 'SUCCESS' AND pool = %s", (POOL,)
                ).fetchone()
                bare_done = conn.execute("SELECT count(*) FROM bench_bare WHERE status = 'DONE'").fetchone()
            queue_rate = attempts / queue_seconds
            bare_rate = attempts / bare_seconds
            report.update(
                {
                    "attempts": attempts,
                    "queue": {
                        "seconds": round(queue_seconds, 2),
                        "per_second": round(queue_rate, 1),
                        "succeeded": succeeded[0] if succeeded else None,
                    },
                    "bare_skip_locked": {
                        "seconds": round(bare_seconds, 2),
                        "per_second": round(bare_rate, 1),
                        "done": bare_done[0] if bare_done else None,
                    },
                    "ratio": round(queue_rate / bare_rate, 3),
                    "target_ratio": 0.5,
                    "met": queue_rate / bare_rate >= 0.5,
                }
            )
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "queue.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
