"""`etl-craft worker` as a real process against a real Engine DB: what it refuses, how it registers,
claims and runs the attempts of its pool, drains on SIGTERM, and what its death leaves behind."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest
import sqlalchemy as sa

from etl_craft.engine.database import writing_for
from etl_craft.engine.schema import migrations
from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, Started, TaskSpec, process_alive

# What AUD_WORKERS.VERSION records after the core release: the last ENGINE migration it ships.
LAST_MIGRATION = migrations.packaged_migrations("postgresql")[-1].version.removesuffix(".sql")


def _worker(harness: Harness, *args: str) -> Started:
    worker = harness.start("worker", "--pool", "etl", "--drain-seconds", "60", *args)
    harness.wait_until(
        lambda: any(w.pid == worker.pid and w.status == "ACTIVE" for w in harness.rows(t.aud_workers)),
        60,
        "the worker to register",
    )
    return worker


def _row(harness: Harness, worker: Started):  # type: ignore[no-untyped-def]
    return next(w for w in harness.rows(t.aud_workers) if w.pid == worker.pid)


@pytest.mark.parametrize("dialect", ["sqlite"])
def test_a_worker_on_a_sqlite_engine_db_refuses_to_start_naming_postgresql(harness: Harness) -> None:
    result = harness.cli("worker", "--pool", "etl", timeout=60)
    assert result.returncode == 3, result
    assert "error: etl-craft worker: found a SQLite Engine DB" in result.stderr
    assert "expected a PostgreSQL Engine DB" in result.stderr
    assert harness.rows(t.aud_workers) == []


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_worker_of_another_schema_version_refuses_to_start(harness: Harness) -> None:
    # The Engine DB as an older release left it: this worker's last ENGINE migration is not applied.
    with writing_for("retention"), harness.db.write() as conn:
        conn.execute(t.schema_migrations.delete().where(t.schema_migrations.c.version == "0006_cluster.sql"))
    result = harness.cli("worker", "--pool", "etl", timeout=60)
    assert result.returncode == 13, result
    assert f"error: etl-craft worker 0.1.0+{LAST_MIGRATION}" in result.stderr
    assert "0006_cluster.sql" in result.stderr and "pip install etl-craft-worker" in result.stderr
    assert harness.rows(t.aud_workers) == []


@pytest.mark.parametrize("dialect", ["sqlite"])
def test_a_task_whose_pool_is_a_queue_pool_fails_on_sqlite_naming_postgresql(harness: Harness) -> None:
    harness.pipeline("Q", [TaskSpec("a", parameters={"POOL": "etl"})])
    result = harness.cli("run", "--pipeline_code", "Q")
    assert result.returncode != 0, result
    (attempt,) = harness.attempts("a")
    assert attempt.status == "FAILED" and not attempt.retryable
    assert attempt.error_message.startswith("could not start the task process: pool etl: found a SQLite Engine DB")
    assert attempt.pool is None


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_worker_runs_its_pools_attempts_and_drains_on_sigterm(harness: Harness, tmp_path: Path) -> None:
    marks = [tmp_path / f"{code}.done" for code in ("a", "b", "c")]
    harness.pipeline(
        "Q",
        [
            TaskSpec("a", {"touch": str(marks[0])}, parameters={"POOL": "etl"}),
            TaskSpec("b", {"touch": str(marks[1])}, parameters={"POOL": "etl"}),
            TaskSpec("c", {"touch": str(marks[2])}),  # no POOL: the local pool of `run`
        ],
        [("b", "a", "SUCCESS")],
    )
    worker = _worker(harness, "--ingestion-slots", "2", "--warehouse-slots", "1")
    result = harness.cli("run", "--pipeline_code", "Q")
    assert result.returncode == 0, result
    assert "Q.a: attempt 1 queued in pool etl" in result.stdout
    (run,) = harness.runs()
    assert run.status == "SUCCESS"
    assert all(m.read_text() == str(run.pipeline_run_id) for m in marks)
    row = _row(harness, worker)
    by_task = {a.task_code: a for a in harness.attempts()}
    assert {code: (a.status, a.pool, a.slot_kind) for code, a in by_task.items()} == {
        "a": ("SUCCESS", "etl", "ingestion"),
        "b": ("SUCCESS", "etl", "ingestion"),
        "c": ("SUCCESS", None, None),
    }
    assert by_task["a"].owner_id == row.owner_id == by_task["b"].owner_id
    assert by_task["c"].owner_id != row.owner_id
    assert (row.pool, row.status, row.ingestion_slots, row.warehouse_slots) == ("etl", "ACTIVE", 2, 1)
    assert row.version == f"0.1.0+{LAST_MIGRATION}" and row.updated_at >= row.started_at
    # Its attempts' logs are where a local attempt's would be, beside the project.
    log = harness.root / "logs" / "Q" / f"run-{run.pipeline_run_id}" / "a.attempt-1.log"
    assert log.exists()

    worker.signal(signal.SIGTERM)
    ended = worker.wait(60)
    assert ended.returncode == 0, ended
    row = _row(harness, worker)
    assert (row.status, row.status_reason) == ("GONE", "drained")
    assert row.stopped_at is not None and row.updated_at == row.stopped_at


@pytest.mark.chaos
@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_draining_worker_finishes_its_attempt_and_claims_nothing_new(harness: Harness, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    harness.pipeline(
        "D",
        [
            TaskSpec("slow", {"wait_for": str(gate)}, parameters={"POOL": "etl"}),
            TaskSpec("after", {}, parameters={"POOL": "etl"}),
        ],
        [("after", "slow", "SUCCESS")],
    )
    worker = _worker(harness)
    run = harness.start("run", "--pipeline_code", "D")
    harness.wait_for_attempt("slow", "RUNNING")
    worker.signal(signal.SIGTERM)
    harness.wait_until(lambda: _row(harness, worker).status == "DRAINING", 60, "the worker to drain")
    gate.write_text("go")
    ended = worker.wait(90)
    assert ended.returncode == 0, ended
    (slow,) = harness.attempts("slow")
    assert slow.status == "SUCCESS" and slow.owner_id == _row(harness, worker).owner_id
    # The draining worker took nothing new, and with no ACTIVE worker the pool has no slot: the next
    # task is not even queued until another worker registers.
    assert _row(harness, worker).status == "GONE"
    assert harness.attempts("after") == []
    second = _worker(harness)
    assert run.wait(120).returncode == 0
    (after,) = harness.attempts("after")
    assert after.status == "SUCCESS" and after.owner_id == _row(harness, second).owner_id
    second.signal(signal.SIGTERM)
    assert second.wait(60).returncode == 0


@pytest.mark.chaos
@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_worker_killed_with_sigkill_loses_its_attempt_which_another_worker_retries(
    harness: Harness, tmp_path: Path
) -> None:
    gate = tmp_path / "go"
    counter = tmp_path / "calls"
    harness.pipeline(
        "K",
        [
            TaskSpec(
                "t",
                {"wait_for": str(gate), "rows_by_call": [1, 2], "calls": str(counter)},
                parameters={"POOL": "etl", "RETRIES": "1", "RETRY_DELAY_SECONDS": "0"},
            )
        ],
    )
    first = _worker(harness)
    run = harness.start("run", "--pipeline_code", "K")
    running = harness.wait_for_attempt("t", "RUNNING")
    os.kill(first.pid, signal.SIGKILL)
    first.wait(30)
    # The run's supervisor finds the owner verifiably gone (same host) and fences the attempt LOST,
    # stopping its orphaned task process; the retry waits for a worker.
    harness.wait_for_attempt("t", "LOST", 90)
    second = _worker(harness)
    gate.write_text("go")
    assert run.wait(180).returncode == 0
    lost, retried = harness.attempts("t")
    assert (lost.attempt_id, lost.status) == (running.attempt_id, "LOST")
    assert "was lost: owner " in lost.error_message
    assert retried.status == "SUCCESS" and retried.owner_id == _row(harness, second).owner_id
    # Both attempts started the script; only the retry got past the gate (the lost one was stopped).
    assert counter.read_text() == "2"
    with harness.db.read() as conn:
        live = conn.execute(
            sa.select(sa.func.count()).where(t.aud_task_attempts.c.status.in_(("QUEUED", "CLAIMED", "RUNNING")))
        ).scalar_one()
    assert live == 0
    second.signal(signal.SIGTERM)
    assert second.wait(60).returncode == 0


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_the_server_queues_pool_tasks_for_two_workers_and_runs_the_rest_itself(
    harness: Harness, tmp_path: Path
) -> None:
    from datetime import UTC, date, datetime

    from tests.server.overseer_fixtures import Clock, schedule, start_server, stop_server

    tasks = [TaskSpec(f"q{n}", {"touch": str(tmp_path / f"q{n}")}, parameters={"POOL": "etl"}) for n in range(4)]
    harness.pipeline("S", [*tasks, TaskSpec("own", {"touch": str(tmp_path / "own")})])
    schedule(harness, "S", "0 * * * *", start=date(2026, 5, 1))
    workers = [_worker(harness, "--ingestion-slots", "1"), _worker(harness, "--ingestion-slots", "1")]
    server = start_server(harness, Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 30, tzinfo=UTC)))
    harness.wait_until(lambda: [r for r in harness.runs() if r.status == "SUCCESS"], 120, "the tick's run to end")
    stop_server(server)
    (run,) = harness.runs()
    owners = {_row(harness, w).owner_id for w in workers}
    by_task = {a.task_code: a for a in harness.attempts()}
    assert sorted(by_task) == ["own", "q0", "q1", "q2", "q3"]
    assert all(by_task[f"q{n}"].status == "SUCCESS" and by_task[f"q{n}"].owner_id in owners for n in range(4))
    assert by_task["own"].status == "SUCCESS" and by_task["own"].owner_id not in owners and by_task["own"].pool is None
    assert all((tmp_path / name).read_text() == str(run.pipeline_run_id) for name in by_task)
    for worker in workers:
        worker.signal(signal.SIGTERM)
        assert worker.wait(60).returncode == 0


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_worker_times_out_an_attempt_past_its_task_timeout(harness: Harness, tmp_path: Path) -> None:
    harness.pipeline(
        "T",
        [
            TaskSpec(
                "stuck", {"wait_for": str(tmp_path / "never")}, parameters={"POOL": "etl", "TASK_TIMEOUT_SECONDS": "2"}
            )
        ],
    )
    worker = _worker(harness)
    result = harness.cli("run", "--pipeline_code", "T")
    assert result.returncode != 0, result
    (attempt,) = harness.attempts("stuck")
    assert attempt.status == "TIMED_OUT" and attempt.owner_id == _row(harness, worker).owner_id
    assert attempt.error_message == "timed out after 2 s (TASK_TIMEOUT_SECONDS); the task process was stopped"
    harness.wait_until(lambda: not process_alive(attempt.pid), 30, "the task process to be stopped")
    (run,) = harness.runs()
    assert run.status == "FAILED"
    worker.signal(signal.SIGTERM)
    assert worker.wait(60).returncode == 0


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_worker_health_lists_a_live_worker_then_the_one_that_stopped(harness: Harness) -> None:
    from etl_craft.core.actor import current_actor
    from etl_craft.services.context import OperationContext
    from etl_craft.services.doctor.workers import worker_health

    ctx = OperationContext(config=harness.project.load(), db=harness.db, actor=current_actor())
    assert worker_health(ctx).workers == ()
    worker = _worker(harness, "--ingestion-slots", "2", "--warehouse-slots", "3")
    (live,) = worker_health(ctx).workers
    registered = _row(harness, worker)
    assert (live.pool, live.pid, live.owner_id, live.status) == ("etl", worker.pid, registered.owner_id, "ACTIVE")
    assert (live.ingestion_slots, live.warehouse_slots, live.stopped_at) == (2, 3, None)
    assert 0 <= live.heartbeat_age_seconds < 60
    worker.signal(signal.SIGTERM)
    assert worker.wait(120).returncode == 0
    (stopped,) = worker_health(ctx).workers  # stopped within the last day: still shown, with why
    assert stopped.pid == worker.pid and stopped.status == _row(harness, worker).status != "ACTIVE"
    assert stopped.stopped_at is not None


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_worker_masks_a_crashed_attempts_log_file_and_task_log(harness: Harness) -> None:
    # The crash writes the sensitive values straight into the log file, past the task process's
    # masking pipe, then SIGKILLs itself: the worker that records the end masks them, as `run` does.
    from tests.core.redaction.test_scan import API_KEY, API_TOKEN, PASSWORD, SCRIPT, task

    (harness.root / "ingestion_scripts" / "leaky.py").write_text(SCRIPT)
    crashed = task("crashed", "crash")
    crashed.parameters["POOL"] = "etl"
    harness.pipeline("p", [crashed])
    _worker(harness, "--ingestion-slots", "1")
    ran = harness.cli("run", "--pipeline_code", "p")
    assert ran.returncode == 1, ran
    (attempt,) = harness.attempts("crashed")
    assert (attempt.status, attempt.pool, attempt.owner_id) == ("FAILED", "etl", _row_of_pool(harness).owner_id)
    assert "before recording an outcome" in attempt.error_message
    stored = harness.task_runs()["crashed"].task_log
    written = Path(attempt.log_path).read_text()
    assert "straight into the file: *** *** ***" in stored and "straight into the file: *** *** ***" in written
    for secret in (API_TOKEN, API_KEY, PASSWORD):
        assert secret not in stored and secret not in written and secret not in (attempt.task_log or "")


def _row_of_pool(harness: Harness):  # type: ignore[no-untyped-def]
    (row,) = harness.rows(t.aud_workers)
    return row


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_worker_copies_its_attempts_logs_to_the_store(harness: Harness, tmp_path: Path) -> None:
    store = tmp_path / "store"
    harness.project.extra_sections = f"Logs:\n  Store: file://{store}\n"
    harness.project.write_config()
    harness.pipeline("Q", [TaskSpec("a", {"print": ["from the worker"]}, parameters={"POOL": "etl"})])
    _worker(harness, "--ingestion-slots", "1")
    result = harness.cli("run", "--pipeline_code", "Q")
    assert result.returncode == 0, result
    (attempt,) = harness.attempts("a")
    stored = store / "Q" / f"run-{harness.runs()[0].pipeline_run_id}" / "a.attempt-1.log"
    # The worker copies the file once it has reaped the task process, just after the outcome.
    harness.wait_until(stored.exists, 30, "the worker to copy the log to Logs.Store")
    written = Path(attempt.log_path).read_text()
    assert "from the worker" in written and stored.read_text() == written
