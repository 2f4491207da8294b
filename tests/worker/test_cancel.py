"""Cancellation across the cluster (S5.D, S5.J) with real `etl-craft worker` processes: a cancel of a
run asks the worker holding an attempt to stop it; the worker stops the task process and records
CANCELLED with its acknowledgement; a worker that dies before acknowledging leaves nothing run twice."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, Started, TaskSpec, process_alive

pytestmark = pytest.mark.parametrize("dialect", ["postgresql"])


def _worker(harness: Harness, **env: str) -> Started:
    worker = harness.start("worker", "--pool", "etl", "--drain-seconds", "60", **env)
    harness.wait_until(
        lambda: any(w.pid == worker.pid and w.status == "ACTIVE" for w in harness.rows(t.aud_workers)),
        60,
        "the worker to register",
    )
    return worker


def _attempt(harness: Harness, attempt_id: int):  # type: ignore[no-untyped-def]
    (row,) = harness.rows(t.aud_task_attempts, t.aud_task_attempts.c.attempt_id == attempt_id)
    return row


def _live_attempts(harness: Harness) -> int:
    with harness.db.read() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count()).where(t.aud_task_attempts.c.status.in_(("QUEUED", "CLAIMED", "RUNNING")))
            ).scalar_one()
        )


def _cancel_running(harness: Harness, tmp_path: Path, code: str):  # type: ignore[no-untyped-def]
    """Pipeline `code` with one pool task held by a gate, RUNNING on a worker, then cancelled."""
    harness.pipeline(code, [TaskSpec("a", {"wait_for": str(tmp_path / "never")}, parameters={"POOL": "etl"})])
    run = harness.start("run", "--pipeline_code", code)
    running = harness.wait_for_attempt("a", "RUNNING")
    result = harness.cli("cancel", "--pipeline_code", code, "--reason", "wrong day")
    assert result.returncode == 0, result
    assert "1 attempt(s) asked to stop: their worker ends them CANCELLED: a (attempt 1)" in result.stdout
    return run, running


def test_a_cancel_reaches_the_owning_worker_which_stops_the_child_and_acknowledges(
    harness: Harness, tmp_path: Path
) -> None:
    worker = _worker(harness)
    run, running = _cancel_running(harness, tmp_path, "C")
    # Requested, not yet acknowledged: the attempt is still the worker's, its task run not ended.
    asked = _attempt(harness, running.attempt_id)
    (run_row,) = harness.runs()
    assert run_row.status == "CANCELLED"
    if asked.status == "RUNNING":
        assert asked.cancel_requested_at is not None and asked.cancel_acknowledged_at is None
        assert harness.task_runs(run_row.pipeline_run_id)["a"].status == "IN-PROGRESS"
    # Within one heartbeat (10 s) the worker stops the child and records the end.
    harness.wait_for_attempt("a", "CANCELLED", 40)
    ended = _attempt(harness, running.attempt_id)
    owner = next(w.owner_id for w in harness.rows(t.aud_workers) if w.pid == worker.pid)
    assert ended.owner_id == owner and not ended.retryable
    assert ended.cancel_requested_at <= ended.cancel_acknowledged_at == ended.ended_at
    assert ended.error_message.startswith(f"cancelled: worker {owner} stopped the task process (exit status ")
    assert not process_alive(running.pid)
    task_run = harness.task_runs(run_row.pipeline_run_id)["a"]
    assert (task_run.status, task_run.error_message) == ("CANCELLED", ended.error_message)
    assert _live_attempts(harness) == 0
    assert [a.attempt_id for a in harness.attempts("a")] == [running.attempt_id]  # nothing retried
    run.wait(60)
    worker.signal(signal.SIGTERM)
    assert worker.wait(60).returncode == 0


@pytest.mark.chaos
def test_a_lost_acknowledgement_is_reconciled_and_nothing_runs_twice(harness: Harness, tmp_path: Path) -> None:
    # The worker dies (as kill -9 would) after its child ended but before it records the cancel.
    worker = _worker(harness, ETL_CRAFT_FAULT="worker_before_cancel_ack:kill")
    run, running = _cancel_running(harness, tmp_path, "L")
    assert worker.wait(60).returncode == 137
    assert not process_alive(running.pid)
    held = _attempt(harness, running.attempt_id)
    assert (held.status, held.cancel_acknowledged_at) == ("RUNNING", None)
    assert held.cancel_requested_at is not None
    # The owner is verifiably gone: reconciliation fences the attempt LOST; the run was cancelled, so
    # nothing retries it, and a second worker claims nothing.
    second = _worker(harness)
    result = harness.cli("reconcile")
    assert result.returncode == 0, result
    assert "reconcile every pipeline: 1 attempt(s) lost" in result.stdout
    lost = _attempt(harness, running.attempt_id)
    assert lost.status == "LOST" and lost.cancel_acknowledged_at is None and lost.ended_at is not None
    assert lost.error_message.startswith(f"attempt 1 was lost: owner {held.owner_id} is gone: its process ")
    assert _live_attempts(harness) == 0
    assert [a.attempt_id for a in harness.attempts("a")] == [running.attempt_id]
    (run_row,) = harness.runs()
    assert run_row.status == "CANCELLED"
    run.wait(60)
    second.signal(signal.SIGTERM)
    assert second.wait(60).returncode == 0


def _sleeping(database: str) -> list[tuple[int, str]]:
    """The backends of `database` running the task's pg_sleep (pid, state)."""
    from etl_craft_warehouses.provision import PostgresProvision

    conn = PostgresProvision().connect(f"jdbc:postgresql://x/{database}")
    try:
        return conn.execute(
            "SELECT pid, state FROM pg_stat_activity WHERE datname = %s AND query LIKE %s AND pid <> pg_backend_pid()",
            (database, "%pg_sleep(600)%"),
        ).fetchall()
    finally:
        conn.close()


def test_a_cancelled_attempts_running_postgresql_statement_is_cancelled_in_the_warehouse(
    harness: Harness, tmp_path: Path
) -> None:
    from etl_craft_warehouses.provision import PostgresProvision

    provision = PostgresProvision()
    with provision.warehouse(tmp_path) as url:
        database = url.rsplit("/", 1)[1]
        harness.project.extra_sections = provision.section(url)
        harness.project.write_config()
        select = "SELECT 1 AS slept FROM (SELECT pg_sleep(600)) AS s"
        action = {"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "public.slept", "SOURCE_SQL": select, "POOL": "etl"}
        harness.pipeline("W", [TaskSpec("sleep", handler="SQL", parameters=action)])
        worker = _worker(harness)
        run = harness.start("run", "--pipeline_code", "W")
        running = harness.wait_for_attempt("sleep", "RUNNING")
        harness.wait_until(lambda: [s for s in _sleeping(database) if s[1] == "active"], 60, "the pg_sleep to run")
        result = harness.cli("cancel", "--pipeline_code", "W", "--reason", "too slow")
        assert result.returncode == 0, result
        harness.wait_for_attempt("sleep", "CANCELLED", 40)
        # The worker stopped the task process, and the process cancelled its statement first: the
        # server no longer runs it (without the cancel it would sleep on after the process ended).
        harness.wait_until(lambda: not process_alive(running.pid), 30, "the task process to end")
        harness.wait_until(lambda: not _sleeping(database), 30, "the warehouse statement to end")
        ended = _attempt(harness, running.attempt_id)
        assert ended.cancel_acknowledged_at is not None and not ended.retryable
        # The attempt's log says the statement was cancelled, not only that its process was stopped.
        assert "stopped: the task process received SIGTERM; PostgresDialect: the running warehouse statement " in (
            ended.task_log
        )
        assert "was cancelled (a cancel request for backend " in ended.task_log
        assert provision.connect(url).execute("SELECT to_regclass('public.slept')").fetchone() == (None,)
        run.wait(60)
        worker.signal(signal.SIGTERM)
        assert worker.wait(60).returncode == 0
