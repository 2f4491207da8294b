"""Orchestration overhead of a chain of no-op PYTHON tasks on a SQLite Engine DB.

Reports, for a chain of N tasks (each depending on the previous one):
- overhead per task: from the end of one attempt (ENDED_AT) to the start of the next (STARTED_AT);
- the task process's memory (peak RSS, proportional and private set) and its start cost;
- as the baseline measured in the same run: a cold `python` that imports the task process modules
  (what every task would pay without the fork server), its import time and peak memory.

Usage: uv run python -m benchmarks.task_chain [--tasks 20]
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

from benchmarks import machine

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "release" / "benchmarks"
ETL_CRAFT = str(Path(sys.executable).with_name("etl-craft"))

PROBE_SCRIPT = """\
from etl_craft.scripting import ScriptResult


def _kb(path, field):
    with open(path) as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def run(task):
    return ScriptResult(row_count=0, variables={
        "PEAK_RSS_KB": _kb("/proc/self/status", "VmHWM"),
        "PSS_KB": _kb("/proc/self/smaps_rollup", "Pss"),
        "PRIVATE_KB": _kb("/proc/self/smaps_rollup", "Private_Dirty") + _kb("/proc/self/smaps_rollup", "Private_Clean"),
    })
"""

COLD_IMPORT = """\
import time
started = time.perf_counter()
import etl_craft.execution.processes.task_process
import etl_craft.handlers.python_script
took = time.perf_counter() - started
with open("/proc/self/status") as fh:
    peak = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
print(took, peak)
"""


def _project(folder: Path, tasks: int) -> dict[str, str]:
    (folder / "ingestion_scripts").mkdir()
    (folder / "migrations").mkdir()
    (folder / "ingestion_scripts" / "probe.py").write_text(PROBE_SCRIPT)
    (folder / "craft-connector.yml").write_text(
        "Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n"
        "Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n  schema: main\n"
    )
    codes = [f"t{n:02d}" for n in range(tasks)]
    values = ", ".join(f"('{c}')" for c in codes)
    deps = ", ".join(f"('{codes[n]}', '{codes[n - 1]}')" for n in range(1, tasks))
    (folder / "migrations" / "0001_chain.sql").write_text(
        "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('chain', 'Chain', 'FULL');\n"
        "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)\n"
        f"SELECT v.column1, 'ETL', p.PIPELINE_ID, 'PYTHON' FROM (VALUES {values}) v\n"
        "LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'chain';\n"
        "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)\n"
        "SELECT TASK_ID, 'SCRIPT_NAME', 'probe.py' FROM CFG_TASKS;\n"
        "INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)\n"
        f"SELECT t.PIPELINE_ID, t.TASK_ID, u.TASK_ID, 'SUCCESS' FROM (VALUES {deps}) v\n"
        "JOIN CFG_TASKS t ON t.TASK_CODE = v.column1 JOIN CFG_TASKS u ON u.TASK_CODE = v.column2;\n"
    )
    return dict(os.environ, ETL_CRAFT_CONFIG=str(folder / "craft-connector.yml"))


def _variables(task_log: str) -> dict[str, int]:
    found = {}
    for line in task_log.splitlines():
        name, sep, value = line.partition(" = ")
        if sep and name in ("PEAK_RSS_KB", "PSS_KB", "PRIVATE_KB"):
            found[name] = int(value)
    return found


def _measure_chain(tasks: int) -> dict[str, object]:
    import sqlite3

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = _project(folder, tasks)
        for command in (["setup"], ["run", "--pipeline_code", "chain"]):
            subprocess.run([ETL_CRAFT, *command], env=env, cwd=folder, check=True, capture_output=True)
        db = sqlite3.connect(folder / "engine.db")
        rows = db.execute(
            "SELECT a.CLAIMED_AT, a.STARTED_AT, a.ENDED_AT, a.TASK_LOG FROM AUD_TASK_ATTEMPTS a ORDER BY a.ATTEMPT_ID"
        ).fetchall()
        db.close()
    parse = datetime.fromisoformat
    gaps = [(parse(rows[i][1]) - parse(rows[i - 1][2])).total_seconds() * 1000 for i in range(1, len(rows))]
    starts = [(parse(r[1]) - parse(r[0])).total_seconds() * 1000 for r in rows]
    memory = [_variables(r[3] or "") for r in rows]
    return {
        "tasks": len(rows),
        "overhead_ms_per_task": {"mean": statistics.fmean(gaps), "median": statistics.median(gaps), "max": max(gaps)},
        "claim_to_running_ms": {"median": statistics.median(starts), "first": starts[0]},
        "task_process_peak_rss_mb": statistics.median(m["PEAK_RSS_KB"] for m in memory) / 1024,
        "task_process_pss_mb": statistics.median(m["PSS_KB"] for m in memory) / 1024,
        "task_process_private_mb": statistics.median(m["PRIVATE_KB"] for m in memory) / 1024,
    }


def _measure_cold_start(samples: int = 5) -> dict[str, float]:
    imports, peaks = [], []
    for _ in range(samples):
        out = subprocess.run([sys.executable, "-c", COLD_IMPORT], capture_output=True, text=True, check=True).stdout
        took, peak = out.split()
        imports.append(float(took) * 1000)
        peaks.append(int(peak) / 1024)
    return {"import_ms": statistics.median(imports), "peak_rss_mb": statistics.median(peaks)}


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="benchmarks.task_chain")
    parser.add_argument("--tasks", type=int, default=20)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    chain = _measure_chain(args.tasks)
    cold = _measure_cold_start()
    report = {
        "benchmark": "task_chain",
        "recorded_at": datetime.now(UTC).isoformat(),
        "machine": machine(),
        "chain": chain,
        "baseline_cold_task_process": cold,
        "ratios": {
            "task_private_memory_to_cold_process": chain["task_process_private_mb"] / cold["peak_rss_mb"],  # type: ignore[operator]
        },
        "plan_reference": {"overhead_ms_per_task": 240, "task_process_mb": 42},
        "seconds": round(time.perf_counter() - started, 1),
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "task_chain.json").write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
