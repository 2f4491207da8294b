"""The time of the README's first command, demo part: `etl-craft demo` in a new folder, end to end.

Runs `etl-craft --format json demo` as a subprocess in an empty temporary folder (what a newcomer
runs, minus installing), and reports its wall time with where the time went, from the demo's own
JSON document: the runs (summed), the task runs inside them (summed), and the rest (writing the
project, setup, migrate, validate, reading the results). The baseline, measured in the same run,
is the start of a bare `etl-craft --version`, the cost every command pays before doing anything.
The acceptance budget is one minute on a 2-core machine; it is recorded, not asserted.

    uv run python -m benchmarks.demo [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from benchmarks import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "release" / "benchmarks"
ETL_CRAFT = str(Path(sys.executable).with_name("etl-craft"))
BUDGET_SECONDS = 60.0


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "ETL_CRAFT_CONFIG"}


def _cli_start(samples: int = 5) -> float:
    took = []
    for _ in range(samples):
        started = time.perf_counter()
        subprocess.run([ETL_CRAFT, "--version"], check=True, capture_output=True, env=_env())
        took.append(time.perf_counter() - started)
    return statistics.median(took)


def _one_demo() -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        done = subprocess.run(
            [ETL_CRAFT, "--format", "json", "demo"], cwd=tmp, env=_env(), capture_output=True, text=True, check=False
        )
        wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"etl-craft demo exited {done.returncode}:\n{done.stderr[-4000:]}")
    document = json.loads(done.stdout)
    runs = document["runs"]
    in_runs = sum(r["seconds"] or 0 for r in runs)
    in_tasks = sum(task["seconds"] or 0 for r in runs for task in r["tasks"])
    return {
        "wall_seconds": round(wall, 2),
        "demo_reported_seconds": document["seconds"],
        "runs": len(runs),
        "task_runs": sum(len(r["tasks"]) for r in runs),
        "seconds_in_runs": round(in_runs, 2),
        "seconds_in_task_runs": round(in_tasks, 2),
        "seconds_outside_runs": round(wall - in_runs, 2),
        "slowest_runs": sorted(
            ({"pipeline": r["pipeline_code"], "batch": r["batch"], "seconds": r["seconds"]} for r in runs),
            key=lambda r: -(r["seconds"] or 0),
        )[:3],
        "all_runs_success": all(r["status"] == "SUCCESS" for r in runs),
    }


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="benchmarks.demo")
    parser.add_argument("--rounds", type=int, default=1, help="how many times to run the demo (median reported)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    cli_start = _cli_start()
    rounds = [_one_demo() for _ in range(args.rounds)]
    median_wall = statistics.median(r["wall_seconds"] for r in rounds)
    report = {
        "benchmark": "demo",
        "recorded_at": datetime.now(UTC).isoformat(),
        "machine": machine(),
        "command": "etl-craft demo (the README's first command, after installing)",
        "rounds": rounds,
        "median_wall_seconds": median_wall,
        "baseline_cli_start_seconds": round(cli_start, 3),
        "ratios": {
            "wall_to_budget": round(median_wall / BUDGET_SECONDS, 3),
            "wall_to_cli_start": round(median_wall / cli_start, 1),
        },
        "budget_seconds": BUDGET_SECONDS,
        "seconds": round(time.perf_counter() - started, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "demo.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
