"""The overseer restarts while workers run (S5.J): a server killed with SIGKILL mid-run and started
again finds the run, leaves the attempt its worker still holds alone, and nothing is lost or doubled."""

from __future__ import annotations

import os
import signal
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, Started, TaskSpec
from tests.server.overseer_fixtures import Clock, schedule, start_server, stop_server

pytestmark = [pytest.mark.chaos, pytest.mark.parametrize("dialect", ["postgresql"])]


def _worker(harness: Harness) -> Started:
    worker = harness.start("worker", "--pool", "etl", "--ingestion-slots", "2", "--drain-seconds", "60")
    harness.wait_until(
        lambda: any(w.pid == worker.pid and w.status == "ACTIVE" for w in harness.rows(t.aud_workers)),
        60,
        "the worker to register",
    )
    return worker


def test_an_overseer_killed_and_restarted_mid_run_loses_and_doubles_nothing(harness: Harness, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    calls = tmp_path / "calls"
    held = TaskSpec(
        "held", {"wait_for": str(gate), "calls": str(calls), "rows_by_call": [1]}, parameters={"POOL": "etl"}
    )
    after = TaskSpec("after", {"touch": str(tmp_path / "after")}, parameters={"POOL": "etl"})
    harness.pipeline("R", [held, after], [("after", "held", "SUCCESS")])
    schedule(harness, "R", "0 * * * *", start=date(2026, 5, 1))
    worker = _worker(harness)
    clock = Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 30, tzinfo=UTC))
    first = start_server(harness, clock)
    running = harness.wait_for_attempt("held", "RUNNING", 120)
    os.kill(first.pid, signal.SIGKILL)
    assert first.wait(30).returncode == -signal.SIGKILL
    second = start_server(harness, clock)
    gate.write_text("go")
    harness.wait_until(lambda: [r for r in harness.runs() if r.status == "SUCCESS"], 180, "the run to end")
    stop_server(second)
    (run,) = harness.runs()
    owner = next(w.owner_id for w in harness.rows(t.aud_workers) if w.pid == worker.pid)
    attempts = {a.task_code: a for a in harness.attempts()}
    # One attempt per task, both the worker's; the one running through the restart was never fenced.
    assert [(a.task_code, a.attempt_number) for a in harness.attempts()] == [("held", 1), ("after", 1)]
    assert attempts["held"].attempt_id == running.attempt_id
    assert all(a.status == "SUCCESS" and a.owner_id == owner for a in attempts.values())
    assert calls.read_text() == "1"  # the script ran once
    assert (tmp_path / "after").read_text() == str(run.pipeline_run_id)
    assert {code: r.status for code, r in harness.task_runs(run.pipeline_run_id).items()} == {
        "held": "SUCCESS",
        "after": "SUCCESS",
    }
    with harness.db.read() as conn:
        live = conn.execute(
            sa.select(sa.func.count()).where(t.aud_task_attempts.c.status.in_(("QUEUED", "CLAIMED", "RUNNING")))
        ).scalar_one()
    assert live == 0
    worker.signal(signal.SIGTERM)
    assert worker.wait(60).returncode == 0
