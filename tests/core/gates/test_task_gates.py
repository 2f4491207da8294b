"""Tasks that depend on tasks of other pipelines: judged at admission, consumed with the attempt."""

from __future__ import annotations

from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, TaskSpec, cross_dependency


def test_a_task_gate_is_decided_with_the_claim_and_consumed_with_the_attempt(harness: Harness) -> None:
    harness.pipeline("up", [TaskSpec("x", {"rows": 3})])
    harness.pipeline("down", [TaskSpec("d")])
    harness.migrate(cross_dependency("down", "d", "up", "x", "HAS_DATA"))
    assert harness.cli("run", "--pipeline_code", "up").returncode == 0
    assert harness.cli("run", "--pipeline_code", "down").returncode == 0
    attempt = harness.attempts("d")[0]
    decisions = harness.rows(t.aud_gate_decisions)
    x_run = harness.task_runs()["x"]
    assert [(d.result, d.attempt_id, d.selected_task_run_id, d.selected_revision) for d in decisions] == [
        ("SATISFIED", attempt.attempt_id, x_run.task_run_id, 1)
    ]
    assert "ended SUCCESS with 3 rows written" in decisions[0].reason
    consumed = harness.rows(t.aud_dependency_consumption)
    assert [(c.task_id, c.consumed_task_run_id, c.task_dependency_id is not None) for c in consumed] == [
        (attempt.task_run_id and harness.task_runs()["d"].task_id, x_run.task_run_id, True)
    ]
    # Consumed once: the next run of down skips d, with the decision and no attempt.
    assert harness.cli("run", "--pipeline_code", "down").returncode == 0
    d_runs = [
        r
        for r in harness.rows(t.aud_task_run_log, order_by=t.aud_task_run_log.c.task_run_id)
        if r.task_id == harness.task_runs()["d"].task_id
    ]
    assert [r.status for r in d_runs] == ["SUCCESS", "SKIPPED"]
    assert "was already consumed by this dependency" in d_runs[1].error_message
    skipped_decision = harness.rows(t.aud_gate_decisions)[-1]
    assert (skipped_decision.result, skipped_decision.attempt_id) == ("UNSATISFIED", None)
    assert len(harness.attempts("d")) == 1


def test_b15_backfills_treat_failure_edges_on_other_pipelines_as_unmet(harness: Harness) -> None:
    harness.pipeline("up", [TaskSpec("x", {"fail": "boom"})])
    harness.pipeline("down", [TaskSpec("load"), TaskSpec("alert")])
    harness.migrate(cross_dependency("down", "alert", "up", "x", "FAILURE"))
    assert harness.cli("run", "--pipeline_code", "up").returncode == 1
    result = harness.cli("run", "--pipeline_code", "down", "--backfill", "2026-04-01:2026-04-02", "--reason", "reload")
    assert result.returncode == 0, str(result)
    runs = harness.rows(t.aud_pipelines_run_log, t.aud_pipelines_run_log.c.trigger_kind == "BACKFILL")
    assert [(str(r.run_date), r.status) for r in runs] == [("2026-04-01", "SUCCESS"), ("2026-04-02", "SUCCESS")]
    for run in runs:
        tasks = harness.task_runs(run.pipeline_run_id)
        assert tasks["alert"].status == "SKIPPED"
        assert "backfills don't evaluate FAILURE dependencies on other pipelines" in tasks["alert"].error_message
        assert tasks["load"].status == "SUCCESS"
    assert harness.rows(t.aud_dependency_consumption) == []
    assert harness.attempts("alert") == []


def test_w3_tasks_waiting_on_another_pipeline_hold_no_slot(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: local\n  Max_parallel_tasks: 2\n  Gate_wait_minutes: 1\n"
    harness.project.write_config()
    release = harness.root / "release-x"
    harness.pipeline("up", [TaskSpec("x", {"wait_for": str(release), "fail": "late and broken"})])
    gated = [TaskSpec(f"g{n:03d}") for n in range(100)]
    free = [TaskSpec("free_a"), TaskSpec("free_b"), TaskSpec("free_c")]
    harness.pipeline("down", [*gated, *free])
    harness.migrate("".join(cross_dependency("down", task.code, "up", "x") for task in gated))
    up = harness.start("run", "--pipeline_code", "up")
    harness.wait_for_attempt("x", "RUNNING")
    down = harness.start("run", "--pipeline_code", "down")
    # The free tasks run while a hundred tasks wait on x, with two slots: x ends only after they did.
    for task in free:
        harness.wait_for_attempt(task.code, "SUCCESS", timeout=180)
    assert harness.attempts("x")[0].status == "RUNNING"
    release.write_text("go")
    assert up.wait(60).returncode == 1
    finished = down.wait(240)
    assert finished.returncode == 0, str(finished)
    tasks = harness.task_runs()
    assert {tasks[task.code].status for task in free} == {"SUCCESS"}
    x_end = harness.attempts("x")[0].ended_at
    assert all(a.ended_at < x_end for a in harness.attempts() if a.task_code.startswith("free_"))
    assert [a for a in harness.attempts() if a.task_code.startswith("g")] == []
    assert {tasks[g.code].status for g in gated} == {"SKIPPED"}
    waits = harness.rows(t.aud_gate_waits)
    assert len(waits) == 100 and all(w.next_check_at is None for w in waits)
