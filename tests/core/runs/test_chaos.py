"""Crashes and races through the real CLI (marker `chaos`; `nox -s chaos` repeats them).

Each scenario asserts the final Engine DB state: no attempt left claimed or running, every run ended
correctly, no task run twice where only one attempt may run, and nothing changed by a stale owner.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from etl_craft.engine.schema import tables as t
from etl_craft.execution.processes.identity import descendants
from tests.fixtures.harness import Harness, TaskSpec, process_alive

pytestmark = pytest.mark.chaos

PARENT_POINTS = ["after_claim", "after_mkdir", "after_spawn", "after_child_exit", "before_finalize"]
CHILD_POINTS = ["child_start", "child_before_outcome", "child_in_outcome_transaction", "child_after_outcome"]


def _no_live_attempts(harness: Harness) -> None:
    assert [a for a in harness.attempts() if a.status in ("QUEUED", "CLAIMED", "RUNNING")] == []


def test_b1_two_task_runs_at_once_run_exactly_one_attempt(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"sleep": 3, "rows": 4})])
    assert harness.cli("run", "--pipeline_code", "p", "--init-only").returncode == 0
    first = harness.start("run", "--pipeline_code", "p", "--task_code", "a")
    second = harness.start("run", "--pipeline_code", "p", "--task_code", "a")
    results = [first.wait(60), second.wait(60)]
    assert all(r.returncode == 0 for r in results), [str(r) for r in results]
    attempts = harness.attempts("a")
    assert [(a.attempt_number, a.status) for a in attempts] == [(1, "SUCCESS")]
    assert harness.task_runs()["a"].rows_written == 4


def test_two_pipeline_runs_at_once_give_one_supervisor(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"sleep": 3}), TaskSpec("b")], [("b", "a", "SUCCESS")])
    first = harness.start("run", "--pipeline_code", "p")
    second = harness.start("run", "--pipeline_code", "p")
    results = sorted([first.wait(60), second.wait(60)], key=lambda r: r.returncode)
    assert [r.returncode for r in results] == [0, 22], [str(r) for r in results]
    assert "changed nothing" in results[1].stdout
    runs = harness.runs()
    assert [(r.status, r.owner_id) for r in runs] == [("SUCCESS", None)]
    assert [(a.task_code, a.attempt_number, a.status) for a in harness.attempts()] == [
        ("a", 1, "SUCCESS"),
        ("b", 1, "SUCCESS"),
    ]


@pytest.mark.parametrize("point", PARENT_POINTS)
def test_kill_9_of_the_parent_then_the_next_run_reconciles_and_finishes(harness: Harness, point: str) -> None:
    harness.pipeline("p", [TaskSpec("a", {"rows": 2}), TaskSpec("b", {"rows": 3})], [("b", "a", "SUCCESS")])
    crashed = harness.cli("run", "--pipeline_code", "p", ETL_CRAFT_FAULT=f"{point}:kill")
    assert crashed.returncode == 137, str(crashed)
    run = harness.runs()[0]
    assert run.status == "IN-PROGRESS"
    resumed = harness.cli("run", "--pipeline_code", "p")
    assert resumed.returncode == 0, str(resumed)
    runs = harness.runs()
    assert [(r.status, r.owner_id) for r in runs] == [("SUCCESS", None)]
    tasks = harness.task_runs()
    assert {code: (r.status, r.rows_written) for code, r in tasks.items()} == {"a": ("SUCCESS", 2), "b": ("SUCCESS", 3)}
    _no_live_attempts(harness)
    for attempt in harness.attempts():
        if attempt.status == "LOST":
            assert attempt.error_message.startswith(f"attempt {attempt.attempt_number} was lost: owner ")
        else:
            assert attempt.status == "SUCCESS" or point == "after_mkdir", attempt
        assert attempt.pid is None or not process_alive(attempt.pid)


@pytest.mark.parametrize("point", CHILD_POINTS)
def test_kill_9_of_the_child_leaves_the_attempt_ended(harness: Harness, point: str) -> None:
    harness.pipeline("p", [TaskSpec("a", {"rows": 2, "offset": 2})])
    result = harness.cli("run", "--pipeline_code", "p", ETL_CRAFT_FAULT=f"{point}:kill")
    attempt = harness.attempts("a")[0]
    if point == "child_after_outcome":
        assert (result.returncode, attempt.status) == (0, "SUCCESS")
        assert [o.offset_value for o in harness.rows(t.aud_task_offset_tracker)] == ["2"]
    else:
        assert result.returncode == 1, str(result)
        assert attempt.status == "FAILED"
        assert attempt.error_message == "the task process exited with status 137 before recording an outcome"
        assert harness.rows(t.aud_task_offset_tracker) == []
    _no_live_attempts(harness)
    assert harness.runs()[0].status in ("SUCCESS", "FAILED")


def test_b8_a_zombie_attempt_finishing_after_a_newer_one_changes_nothing(harness: Harness) -> None:
    calls = harness.root / "calls"
    harness.pipeline("p", [TaskSpec("a", {"rows_by_call": [111, 222], "calls": str(calls), "stubborn": 8})])
    started = harness.start("run", "--pipeline_code", "p")
    zombie = harness.wait_for_attempt("a", "RUNNING")
    started.process.kill()  # kill -9 of the supervisor: its child keeps running, unsupervised
    started.wait(30)
    reconciled = harness.cli("reconcile", "--pipeline_code", "p")
    assert reconciled.returncode == 0, str(reconciled)
    lost = harness.attempts("a")[0]
    assert lost.status == "LOST"
    harness.migrate(
        "UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = REPLACE(PARAMETER_VALUE, '\"stubborn\": 8', '\"stubborn\": 0');\n"
    )
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    harness.wait_until(lambda: not process_alive(zombie.pid), 30, "the zombie to finish")
    task_run = harness.task_runs()["a"]
    assert (task_run.status, task_run.rows_written, task_run.attempt_count) == ("SUCCESS", 222, 2)
    assert "SOURCE_COUNT = 222" in task_run.task_log
    assert [o.offset_value for o in harness.rows(t.aud_task_offset_tracker)] == ["222"]
    attempts = harness.attempts("a")
    assert [(a.attempt_number, a.status, a.rows_written) for a in attempts] == [(1, "LOST", None), (2, "SUCCESS", 222)]
    assert "the outcome was not recorded" in Path(zombie.log_path).read_text()


def test_b24_a_pipeline_run_never_ends_a_run_whose_task_another_process_runs(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("slow", {"sleep": 6}), TaskSpec("other")])
    assert harness.cli("run", "--pipeline_code", "p", "--init-only").returncode == 0
    task = harness.start("run", "--pipeline_code", "p", "--task_code", "slow")
    harness.wait_for_attempt("slow", "RUNNING")
    whole = harness.cli("run", "--pipeline_code", "p")
    assert task.wait(60).returncode == 0
    assert whole.returncode == 0, str(whole)
    run = harness.runs()[0]
    assert run.status == "SUCCESS"
    assert {c: r.status for c, r in harness.task_runs().items()} == {"slow": "SUCCESS", "other": "SUCCESS"}
    assert [a.attempt_number for a in harness.attempts("slow")] == [1]


def test_w1_a_second_supervisor_leaves_a_live_one_alone(harness: Harness) -> None:
    # Long enough for a loaded machine to start the second command while the first still runs.
    harness.pipeline("p", [TaskSpec("slow", {"sleep": 15})])
    first = harness.start("run", "--pipeline_code", "p")
    harness.wait_for_attempt("slow", "RUNNING")
    owner = harness.runs()[0].owner_id
    second = harness.cli("run", "--pipeline_code", "p")
    assert second.returncode == 22 and "another process supervises the run" in second.stdout
    assert owner in second.stdout
    assert harness.runs()[0].owner_id == owner
    assert first.wait(60).returncode == 0


def test_sigterm_leaves_no_descendant_alive(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"sleep": 60}), TaskSpec("b", {"sleep": 60})])
    started = harness.start("run", "--pipeline_code", "p")
    harness.wait_until(lambda: len([a for a in harness.attempts() if a.status == "RUNNING"]) == 2, 60, "two tasks")
    family = descendants(started.pid)
    started.signal(signal.SIGTERM)
    assert started.wait(60).returncode == 22
    # The task processes are stopped before the parent exits; its fork server follows it out.
    harness.wait_until(lambda: not any(process_alive(pid) for pid in family), 15, "every descendant to end")
    assert {a.status for a in harness.attempts()} == {"FAILED"}


@pytest.mark.parametrize("dialect", [pytest.param("postgresql", marks=pytest.mark.postgres, id="postgres")])
def test_b27_an_engine_db_outage_mid_run_is_ridden_out(harness: Harness) -> None:
    import psycopg

    from tests.fixtures import postgres as pg

    harness.pipeline("p", [TaskSpec("a", {"sleep": 6, "rows": 3}), TaskSpec("b", {"rows": 4})], [("b", "a", "SUCCESS")])
    started = harness.start("run", "--pipeline_code", "p")
    harness.wait_for_attempt("a", "RUNNING")
    name = harness.project.pg_database
    harness.db.dispose()
    with psycopg.connect(pg.admin_dsn(), autocommit=True) as admin:
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS false")
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (name,))
        import time

        time.sleep(5)
        admin.execute(f"ALTER DATABASE {name} ALLOW_CONNECTIONS true")
    result = started.wait(120)
    assert result.returncode == 0, str(result)
    # One warning for the outage and one line at its end, not a warning at every look.
    assert result.stderr.count("the Engine DB did not answer") == 1, result.stderr
    assert result.stderr.count("the Engine DB answers again after") == 1, result.stderr
    assert harness.runs()[0].status == "SUCCESS"
    assert {c: (r.status, r.rows_written) for c, r in harness.task_runs().items()} == {
        "a": ("SUCCESS", 3),
        "b": ("SUCCESS", 4),
    }
    _no_live_attempts(harness)
