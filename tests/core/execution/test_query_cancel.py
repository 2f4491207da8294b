"""A task process stopped with SIGTERM cancels its running warehouse statement (S5.D) on DuckDB, and
its log says so (PostgreSQL, through a worker: tests/worker/test_cancel.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.harness import Harness, TaskSpec, process_alive


@pytest.mark.parametrize("dialect", ["sqlite"])
def test_a_cancelled_local_attempt_interrupts_its_running_duckdb_statement(harness: Harness) -> None:
    warehouse = harness.root / "warehouse.duckdb"
    harness.project.extra_sections = f"Warehouse:\n  jdbc_url: jdbc:duckdb:{warehouse}\n"
    harness.project.write_config()
    select = "SELECT count(*) AS n FROM range(100000000000) AS t(x) WHERE x % 7 = 3"
    action = {"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.counted", "SOURCE_SQL": select}
    harness.pipeline("D", [TaskSpec("count", handler="SQL", parameters=action)])
    run = harness.start("run", "--pipeline_code", "D")
    running = harness.wait_for_attempt("count", "RUNNING")
    log = harness.wait_until(lambda: running.log_path and Path(running.log_path).read_text(), 30, "the attempt log")
    assert "started" in log
    result = harness.cli("cancel", "--pipeline_code", "D", "--reason", "too slow")
    assert result.returncode == 0, result
    # Stopped at once by the interrupt, well before the supervisor's SIGKILL (ten seconds later).
    harness.wait_until(lambda: not process_alive(running.pid), 8, "the task process to end on SIGTERM")
    (attempt,) = harness.attempts("count")
    assert attempt.status == "CANCELLED"
    text = Path(running.log_path).read_text()
    assert (
        "the task failed: stopped: the task process received SIGTERM; DuckDBDialect: the running warehouse "
        "statement was cancelled (DuckDB interrupt())" in text
    )
    run.wait(60)
