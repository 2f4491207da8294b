"""The HTTP API under 50 concurrent readers while the overseer runs a pipeline.

A throwaway PostgreSQL database (as benchmarks.server uses) holds one pipeline, `chain`, of M no-op
PYTHON tasks (default 30), each depending on the previous one. One real `etl-craft server` serves
the API on a free port. Measured twice, in the same run:

- baseline: a run of `chain` created over the API, with no other client;
- load: another run of `chain` created the same way while C clients (default 50, one connection
  each, httpx) list the pipeline's runs (`GET .../pipelines/chain/runs?limit=20`) back to back for
  S seconds (default 20).

Reported: the listings' latency (p50, p99, max) and throughput, any error status, and for each run
the overseer's dispatch delay, from the Engine DB: a task's predecessor attempt ENDED_AT -> its own
attempt CLAIMED_AT (the overseer's loop noticing the end and claiming the next task). The budgets of
the plan (listing p99 under 100 ms; no overseer step delayed more than 100 ms by the API: dispatch
p99 under load minus baseline p99) are reported with whether they were met, never asserted.
Results go to release/benchmarks/api.json.

    uv run python -m benchmarks.api [--clients 50] [--seconds 20] [--tasks 30]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import socket
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from benchmarks import machine
from benchmarks.server import (
    ETL_CRAFT,
    NOOP_SCRIPT,
    PG,
    RESULTS,
    _query,
    postgres_problem,
    summary,
    throwaway_database,
)

LISTING_BUDGET_MS = 100.0
STEP_DELAY_BUDGET_MS = 100.0


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _pipeline_sql(tasks: int) -> str:
    codes = [f"t{n:02d}" for n in range(tasks)]
    values = ", ".join(f"('{c}')" for c in codes)
    lines = [
        "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('chain', 'chain', 'FULL');",
        "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)\n"
        f"SELECT v.column1, 'ETL', p.PIPELINE_ID, 'PYTHON' FROM (VALUES {values}) v CROSS JOIN CFG_PIPELINES p;",
        "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)\n"
        "SELECT TASK_ID, 'SCRIPT_NAME', 'noop.py' FROM CFG_TASKS;",
    ]
    if tasks > 1:
        chain = ", ".join(f"('{codes[n]}', '{codes[n - 1]}')" for n in range(1, tasks))
        lines.append(
            "INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)\n"
            f"SELECT t.PIPELINE_ID, t.TASK_ID, u.TASK_ID, 'SUCCESS' FROM (VALUES {chain}) v\n"
            "JOIN CFG_TASKS t ON t.TASK_CODE = v.column1 JOIN CFG_TASKS u ON u.TASK_CODE = v.column2;"
        )
    return "\n".join(lines) + "\n"


def _project(folder: Path, database: str, port: int, tasks: int) -> dict[str, str]:
    (folder / "ingestion_scripts").mkdir()
    (folder / "migrations").mkdir()
    (folder / "ingestion_scripts" / "noop.py").write_text(NOOP_SCRIPT)
    (folder / "migrations" / "0001_chain.sql").write_text(_pipeline_sql(tasks))
    (folder / "craft-connector.yml").write_text(
        f"Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n  Api_address: 127.0.0.1:{port}\n"
        f"Engine:\n  jdbc_url: jdbc:postgresql://{PG['host']}:{PG['port']}/{database}\n"
        f"  schema: public\n  user: {PG['user']}\n"
    )
    return dict(os.environ, ETL_CRAFT_CONFIG=str(folder / "craft-connector.yml"))


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([ETL_CRAFT, *args], env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"etl-craft {' '.join(args)}: {done.stderr}")
    return done.stdout


def _create_run(base: str, token: str, key: str) -> int:
    response = httpx.post(
        f"{base}/pipelines/chain/runs", json={"run_key": key}, headers={"Authorization": f"Bearer {token}"}, timeout=60
    )
    response.raise_for_status()
    return int(response.json()["run"]["pipeline_run_id"])


def _wait_for_end(database: str, run_id: int, timeout: float = 600) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        [(status,)] = _query(database, "SELECT status FROM aud_pipelines_run_log WHERE pipeline_run_id = %s", (run_id,))
        if status not in ("QUEUED", "IN-PROGRESS"):
            return str(status)
        time.sleep(0.2)
    raise TimeoutError(f"run {run_id} did not end within {timeout} s")


def _dispatch_delays(database: str, run_id: int) -> list[float]:
    """Seconds from each attempt's end to the next task's claim, in task order."""
    rows = _query(
        database,
        "SELECT t.task_code, a.claimed_at, a.ended_at FROM aud_task_attempts a"
        " JOIN aud_task_run_log r ON r.task_run_id = a.task_run_id JOIN cfg_tasks t ON t.task_id = r.task_id"
        " WHERE r.pipeline_run_id = %s ORDER BY t.task_code, a.attempt_id",
        (run_id,),
    )
    return [(nxt[1] - prev[2]).total_seconds() for prev, nxt in itertools.pairwise(rows)]


async def _reader(client: httpx.AsyncClient, url: str, until: float, latencies: list[float], errors: list[int]) -> None:
    while time.monotonic() < until:
        started = time.perf_counter()
        response = await client.get(url)
        latencies.append(time.perf_counter() - started)
        if response.status_code != 200:
            errors.append(response.status_code)


async def _load(base: str, token: str, clients: int, seconds: float) -> tuple[list[float], list[int]]:
    latencies: list[float] = []
    errors: list[int] = []
    url = f"{base}/pipelines/chain/runs?limit=20"
    limits = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    headers = {"Authorization": f"Bearer {token}"}
    readers = [httpx.AsyncClient(limits=limits, headers=headers, timeout=30) for _ in range(clients)]
    # The clock starts once the clients exist: building one (its TLS context) takes a loaded machine
    # up to a few hundred milliseconds, and fifty of them once took the whole measured window.
    until = time.monotonic() + seconds
    try:
        await asyncio.gather(*(_reader(c, url, until, latencies, errors) for c in readers))
    finally:
        await asyncio.gather(*(c.aclose() for c in readers))
    return latencies, errors


def measure(clients: int, seconds: float, tasks: int) -> dict[str, Any]:
    with throwaway_database() as database, tempfile.TemporaryDirectory(prefix="etlc-bench-api-") as folder:
        port = _free_port()
        env = _project(Path(folder), database, port, tasks)
        _cli(env, "init-db")
        _cli(env, "migrate")
        viewer = _cli(env, "token", "create", "--name", "readers", "--role", "viewer").splitlines()[0]
        operator = _cli(env, "token", "create", "--name", "bench", "--role", "operator").splitlines()[0]
        base = f"http://127.0.0.1:{port}/api/v1/projects/default"
        log = (Path(folder) / "server.log").open("w")
        server = subprocess.Popen([ETL_CRAFT, "server"], env=env, stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    httpx.get(f"{base}/pipelines", headers={"Authorization": f"Bearer {viewer}"}).raise_for_status()
                    break
                except httpx.TransportError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
            quiet_run = _create_run(base, operator, "baseline")
            quiet_status = _wait_for_end(database, quiet_run)
            loaded_run = _create_run(base, operator, "under-load")
            latencies, errors = asyncio.run(_load(base, viewer, clients, seconds))
            loaded_status = _wait_for_end(database, loaded_run)
            quiet, loaded = _dispatch_delays(database, quiet_run), _dispatch_delays(database, loaded_run)
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(60)
            log.close()
    listing = summary(latencies)
    dispatch_quiet, dispatch_loaded = summary(quiet), summary(loaded)
    extra = None
    if dispatch_quiet["p99_ms"] is not None and dispatch_loaded["p99_ms"] is not None:
        extra = round(float(dispatch_loaded["p99_ms"]) - float(dispatch_quiet["p99_ms"]), 1)
    return {
        "listing": {**listing, "requests_per_second": round(len(latencies) / seconds, 1), "errors": len(errors)},
        "runs": {"baseline": quiet_status, "under_load": loaded_status},
        "dispatch_baseline": dispatch_quiet,
        "dispatch_under_load": dispatch_loaded,
        "dispatch_p99_added_by_load_ms": extra,
        "budgets": {
            "listing_p99_under_100_ms": listing["p99_ms"] is not None and float(listing["p99_ms"]) < LISTING_BUDGET_MS,
            "overseer_step_delay_under_100_ms": extra is not None and extra < STEP_DELAY_BUDGET_MS,
        },
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="benchmarks.api", description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50, help="concurrent readers, one connection each")
    parser.add_argument("--seconds", type=float, default=20.0, help="how long the readers read")
    parser.add_argument("--tasks", type=int, default=30, help="no-op tasks in the overseer's chain")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {
        "benchmark": "api",
        "recorded_at": datetime.now(UTC).isoformat(),
        "machine": machine(),
        "shape": {"clients": args.clients, "seconds": args.seconds, "tasks": args.tasks, "engine_db": "postgresql"},
    }
    problem = postgres_problem()
    if problem is not None:
        report.update(skipped=True, reason=problem)
    else:
        report.update(skipped=False, **measure(args.clients, args.seconds, args.tasks))
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "api.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
