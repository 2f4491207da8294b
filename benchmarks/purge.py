"""Purge of synthetic history on PostgreSQL, while a concurrent run keeps stepping (S6.A).

An Engine DB gets N attempt rows 500 days old (10 attempts per task run, 10 task runs per run, one
pipeline of 10 tasks), so the default Retention removes every attempt, task run and run but the
newest. Meanwhile a thread plays a run of another pipeline: each step is one engine write
transaction (a task run and its attempt inserted, the attempt ended). The step latency is measured
before the purge (the baseline, same process, same database) and during it. The budget: the full
size (1,000,000 attempts) purges within 5 minutes, and the run's steps are not blocked (the p99
step during the purge stays under one second). Results go to release/benchmarks/purge.json.

    uv run python -m benchmarks.purge [--attempts 200000] [--full]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import psycopg
import sqlalchemy as sa

from benchmarks import machine
from benchmarks.merge import PG
from etl_craft.config.loader import load_config
from etl_craft.config.model import RetentionSettings
from etl_craft.core.clock import utc_now
from etl_craft.engine.database import EngineDb, open_engine_db
from etl_craft.engine.schema import migrations
from etl_craft.engine.schema import tables as t
from etl_craft.services.purge import purge

FULL_ATTEMPTS = 1_000_000
BUDGET_SECONDS = 300.0
STEP_BUDGET_SECONDS = 1.0
OUT = Path(__file__).resolve().parents[1] / "release" / "benchmarks" / "purge.json"


def _open(root: Path, database: str) -> EngineDb:
    config = root / "craft-connector.yml"
    config.write_text(
        "Orchestration:\n  Mode: local\n"
        f"Engine:\n  jdbc_url: jdbc:postgresql://{PG['host']}:{PG['port']}/{database}\n"
        f"  schema: public\n  user: {PG['user']}\n",
        encoding="utf-8",
    )
    return open_engine_db(load_config(config), create=True)


def _generate(db: EngineDb, attempts: int) -> dict[str, int]:
    """The synthetic history, written in set statements on an engine connection (the guards need it)."""
    runs = max(1, attempts // 100)
    old = utc_now() - timedelta(days=500)
    with db.write() as conn:
        pipeline = conn.execute(
            t.cfg_pipelines.insert()
            .values(pipeline_code="history", pipeline_name="history", refresh_type="FULL")
            .returning(t.cfg_pipelines.c.pipeline_id)
        ).scalar_one()
        conn.execute(
            sa.text(
                "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER) "
                "SELECT 't' || g, 'ETL', :p, 'PYTHON' FROM generate_series(1, 10) g"
            ),
            {"p": pipeline},
        )
        conn.execute(
            sa.text(
                "INSERT INTO AUD_PIPELINES_RUN_LOG (PIPELINE_ID, STATUS, START_DATE, END_DATE) "
                "SELECT :p, 'SUCCESS', :old + g * interval '1 minute', :old + g * interval '1 minute' "
                "FROM generate_series(1, :runs) g"
            ),
            {"p": pipeline, "old": old, "runs": runs},
        )
        conn.execute(
            sa.text(
                "INSERT INTO AUD_TASK_RUN_LOG (TASK_ID, PIPELINE_RUN_ID, STATUS, START_DATE) "
                "SELECT k.TASK_ID, r.PIPELINE_RUN_ID, 'SUCCESS', r.START_DATE "
                "FROM AUD_PIPELINES_RUN_LOG r CROSS JOIN CFG_TASKS k WHERE r.PIPELINE_ID = :p AND k.PIPELINE_ID = :p"
            ),
            {"p": pipeline},
        )
        conn.execute(
            sa.text(
                "INSERT INTO AUD_TASK_ATTEMPTS (TASK_RUN_ID, ATTEMPT_NUMBER, STATUS, ENDED_AT, TASK_LOG) "
                "SELECT tr.TASK_RUN_ID, n, CASE WHEN n = 10 THEN 'SUCCESS' ELSE 'FAILED' END, tr.START_DATE, "
                "repeat('x', 200) FROM AUD_TASK_RUN_LOG tr CROSS JOIN generate_series(1, 10) n"
            )
        )
    with db.read() as conn:
        counts = {
            table.name.upper(): conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for table in (t.aud_pipelines_run_log, t.aud_task_run_log, t.aud_task_attempts)
        }
    with psycopg.connect(**PG, dbname=db.engine.url.database, autocommit=True) as raw:
        raw.execute("VACUUM ANALYZE")
    return counts


class ConcurrentRun:
    """A run of another pipeline that steps continuously; each step's latency is recorded."""

    def __init__(self, db: EngineDb) -> None:
        self.db = db
        with db.write() as conn:
            pipeline = conn.execute(
                t.cfg_pipelines.insert()
                .values(pipeline_code="live", pipeline_name="live", refresh_type="FULL")
                .returning(t.cfg_pipelines.c.pipeline_id)
            ).scalar_one()
            self.run_id = conn.execute(
                t.aud_pipelines_run_log.insert()
                .values(pipeline_id=pipeline, status="IN-PROGRESS")
                .returning(t.aud_pipelines_run_log.c.pipeline_run_id)
            ).scalar_one()
            self.pipeline = pipeline
        self.steps = 0
        self.latencies: list[float] = []
        self.stop = threading.Event()

    def step(self) -> None:
        self.steps += 1
        started = time.perf_counter()
        with self.db.write() as conn:
            task = conn.execute(
                t.cfg_tasks.insert()
                .values(task_code=f"s{self.steps}", task_type="ETL", pipeline_id=self.pipeline, handler="PYTHON")
                .returning(t.cfg_tasks.c.task_id)
            ).scalar_one()
            task_run = conn.execute(
                t.aud_task_run_log.insert()
                .values(task_id=task, pipeline_run_id=self.run_id, status="IN-PROGRESS")
                .returning(t.aud_task_run_log.c.task_run_id)
            ).scalar_one()
            attempt = conn.execute(
                t.aud_task_attempts.insert()
                .values(task_run_id=task_run, attempt_number=1, status="RUNNING", started_at=utc_now())
                .returning(t.aud_task_attempts.c.attempt_id)
            ).scalar_one()
            conn.execute(
                t.aud_task_attempts.update()
                .where(t.aud_task_attempts.c.attempt_id == attempt, t.aud_task_attempts.c.status == "RUNNING")
                .values(status="SUCCESS", ended_at=utc_now())
            )
        self.latencies.append(time.perf_counter() - started)

    def run_until_stopped(self) -> None:
        while not self.stop.is_set():
            self.step()
            time.sleep(0.05)

    def window(self, count: int) -> list[float]:
        """The latencies recorded from step `count` on."""
        return self.latencies[count:]


def _summary(latencies: list[float]) -> dict[str, float]:
    ordered = sorted(latencies)
    return {
        "steps": len(ordered),
        "p50_ms": round(statistics.median(ordered) * 1000, 2),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000, 2),
        "max_ms": round(ordered[-1] * 1000, 2),
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.purge", description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=200_000, help="synthetic attempt rows (default 200,000)")
    parser.add_argument("--full", action="store_true", help=f"the full size: {FULL_ATTEMPTS:,} attempt rows")
    args = parser.parse_args(argv)
    attempts = FULL_ATTEMPTS if args.full else args.attempts
    database = f"etlc_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(**PG, dbname="postgres", autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database}")
    try:
        with tempfile.TemporaryDirectory() as folder:
            db = _open(Path(folder), database)
            migrations.init_db(db)
            started = time.perf_counter()
            generated = _generate(db, attempts)
            generate_seconds = time.perf_counter() - started
            live = ConcurrentRun(db)
            for _ in range(40):  # the baseline: the same steps with no purge running
                live.step()
                time.sleep(0.05)
            baseline = _summary(live.latencies)
            during_from = len(live.latencies)
            thread = threading.Thread(target=live.run_until_stopped, daemon=True)
            thread.start()
            started = time.perf_counter()
            counts = purge(db, RetentionSettings(), utc_now())
            removed, transactions = counts.removed, counts.transactions
            purge_seconds = time.perf_counter() - started
            live.stop.set()
            thread.join()
            during = _summary(live.window(during_from))
            db.dispose()
    finally:
        with psycopg.connect(**PG, dbname="postgres", autocommit=True) as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")
    projected = purge_seconds * FULL_ATTEMPTS / max(1, generated["AUD_TASK_ATTEMPTS"])
    report = {
        "benchmark": "purge",
        "machine": machine(),
        "note": "run on the shared 2-CPU development machine while other helpers ran tests (loaded)",
        "generated": generated,
        "generate_seconds": round(generate_seconds, 1),
        "removed": removed,
        "transactions": transactions,
        "purge_seconds": round(purge_seconds, 1),
        "attempt_rows_per_second": round(generated["AUD_TASK_ATTEMPTS"] / purge_seconds),
        "projected_seconds_for_1000000_attempts": round(projected, 1),
        "budget_seconds": BUDGET_SECONDS,
        "within_budget": projected <= BUDGET_SECONDS,
        "concurrent_run_steps": {"baseline": baseline, "during_purge": during},
        "steps_within_budget": during["p99_ms"] <= STEP_BUDGET_SECONDS * 1000,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
