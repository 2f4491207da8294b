"""doctor on the cluster: queue pools refused on SQLite, the Engine DB connection budget on PostgreSQL."""

from __future__ import annotations

import pytest

from etl_craft.core.clock import utc_now
from etl_craft.engine import transitions
from etl_craft.services.doctor import run_checks
from tests.fixtures.harness import Harness, TaskSpec


def _line(harness: Harness, name: str) -> str:
    report = run_checks(None, environ=harness.env())
    found = [c.line for c in report.checks if c.name == name]
    assert len(found) == 1, "\n".join(report.lines)
    return found[0]


@pytest.mark.parametrize("dialect", ["sqlite"])
def test_doctor_fails_a_task_naming_a_queue_pool_on_sqlite(harness: Harness) -> None:
    harness.pipeline("Q", [TaskSpec("a", parameters={"POOL": "etl"}), TaskSpec("b", parameters={"POOL": "local"})])
    line = _line(harness, "Queue pools")
    assert line.startswith("[FAIL] Queue pools: 1 task(s) name a queue pool: Q.a (POOL etl)"), line
    assert "the queue and its workers need a PostgreSQL Engine DB" in line
    result = harness.cli("doctor")
    assert result.returncode != 0


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_doctor_reports_the_connection_budget_and_warns_past_80_percent(harness: Harness) -> None:
    line = _line(harness, "Engine DB connection budget")
    assert line.startswith("[OK  ] Engine DB connection budget: up to "), line
    assert "local pool 16 task process(es), 0 live worker(s) 0" in line
    with harness.db.write() as conn:
        transitions.register_worker(
            conn,
            owner_id="elsewhere:1:1:0000",
            pool="etl",
            host="elsewhere",
            pid=1,
            version="test",
            ingestion_slots=4,
            warehouse_slots=2000,
            now=utc_now(),
        )
    line = _line(harness, "Engine DB connection budget")
    assert line.startswith("[WARN] Engine DB connection budget: up to "), line
    assert "1 live worker(s) 2006 (2 each plus one per slot)" in line and "over 80% of max_connections" in line
