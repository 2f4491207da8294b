"""Remote mode through the real CLI, as an orchestrator's workers deliver steps: a task step delivered
twice, a finalize step that comes while a task runs or after the run ended. Nothing is doubled: one
run, one task run per task, one attempt per real start, each recorded with its actor."""

from __future__ import annotations

import pytest

from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, TaskSpec

pytestmark = pytest.mark.parametrize("dialect", [pytest.param("sqlite", marks=pytest.mark.sqlite)])

KEY = "orchestrator:scheduled__2026-12-01"
# A task that runs until the test lets it finish, so "while it runs" never depends on timing.
HELD = """\
import time
from pathlib import Path

from etl_craft.scripting import ScriptResult


def run(task):
    release = Path(task.input_params["release"])
    deadline = time.monotonic() + 120
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    return ScriptResult(row_count=5)
"""
AIRFLOW = {"ETL_CRAFT_ACTOR": "airflow:scheduled__2026-12-01", "ETL_CRAFT_ACTOR_KIND": "ORCHESTRATOR"}


def _step(harness: Harness, *flags: str) -> tuple[int, str]:
    done = harness.cli("run", "--pipeline_code", "p", *flags, "--run-key", KEY, **AIRFLOW)
    return done.returncode, done.stdout + done.stderr


def test_a_task_delivered_twice_and_a_late_finalize_double_nothing(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: remote\n"
    harness.project.write_config()
    release = harness.root / "release"
    (harness.root / "ingestion_scripts" / "held.py").write_text(HELD)
    held = TaskSpec("a", {"release": str(release)}, parameters={"SCRIPT_NAME": "held.py"})
    harness.pipeline("p", [held, TaskSpec("b")], [("b", "a", "SUCCESS")])
    assert _step(harness, "--init-only", "--run-date", "2026-12-01")[0] == 0
    first = harness.start("run", "--pipeline_code", "p", "--task_code", "a", "--run-key", KEY, **AIRFLOW)
    harness.wait_for_attempt("a", "RUNNING")
    code, said = _step(harness, "--task_code", "a")
    assert code == 0 and "a is already in progress; nothing was started" in said
    code, said = _step(harness, "--finalize-only")
    assert code == 22 and "still running: a; nothing was changed" in said
    release.write_text("go")
    assert first.wait().returncode == 0
    (run,) = harness.runs()
    assert (run.status, run.trigger_kind, run.run_key, str(run.run_date)) == (
        "IN-PROGRESS",
        "ORCHESTRATOR",
        KEY,
        "2026-12-01",
    )
    assert [(a.task_code, a.attempt_number, a.status) for a in harness.attempts()] == [("a", 1, "SUCCESS")]
    assert sorted(harness.task_runs()) == ["a"]

    code, said = _step(harness, "--finalize-only")
    assert code == 0 and f"pipeline_run_id={run.pipeline_run_id} SUCCESS" in said
    late = _step(harness, "--finalize-only")
    assert (
        late[0] == 0
        and f"pipeline_run_id={run.pipeline_run_id} SUCCESS — ended already; nothing was changed" in late[1]
    )
    (run,) = harness.runs()
    runs = harness.task_runs(run.pipeline_run_id)
    assert (run.status, run.ended_by, run.ended_by_kind) == ("SUCCESS", AIRFLOW["ETL_CRAFT_ACTOR"], "ORCHESTRATOR")
    assert {c: (r.status, r.attempt_count) for c, r in runs.items()} == {"a": ("SUCCESS", 1), "b": ("SKIPPED", 0)}
    assert runs["b"].error_message == "not run by the orchestrator"
    assert [(a.task_code, a.attempt_number) for a in harness.attempts()] == [("a", 1)]
    actions = harness.rows(t.aud_actions, t.aud_actions.c.command == "run", order_by=t.aud_actions.c.action_id)
    assert {(a.actor, a.actor_kind) for a in actions} == {("airflow:scheduled__2026-12-01", "ORCHESTRATOR")}
    assert [a.pipeline_run_id for a in actions] == [run.pipeline_run_id] * len(actions)


def test_a_step_delivered_again_after_success_is_a_new_attempt_on_the_same_task_run(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: remote\n"
    harness.project.write_config()
    harness.pipeline("p", [TaskSpec("a", {"rows": 2})])
    assert _step(harness, "--init-only", "--run-date", "2026-12-01")[0] == 0
    assert _step(harness, "--task_code", "a")[0] == 0
    assert _step(harness, "--task_code", "a")[0] == 0
    assert _step(harness, "--finalize-only")[0] == 0
    (run,) = harness.runs()
    (task_run,) = harness.task_runs(run.pipeline_run_id).values()
    assert (run.status, task_run.status, task_run.attempt_count, task_run.rows_written) == ("SUCCESS", "SUCCESS", 2, 2)
    assert [(a.attempt_number, a.status, a.task_run_id) for a in harness.attempts()] == [
        (1, "SUCCESS", task_run.task_run_id),
        (2, "SUCCESS", task_run.task_run_id),
    ]
