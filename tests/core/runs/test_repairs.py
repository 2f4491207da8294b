"""Repairs and explicit run selection: --rerun, --force, remote-mode clears, skipped runs."""

from __future__ import annotations

from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, TaskSpec

FIXED = "UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{}' WHERE PARAMETER_NAME = 'INPUT_PARAMS';\n"


def test_b25_a_rerun_of_a_failed_task_runs_what_its_failure_skipped(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"fail": "bad input"}), TaskSpec("c")], [("c", "a", "SUCCESS")])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 1
    run_id = str(harness.runs()[0].pipeline_run_id)
    harness.migrate(FIXED)
    rerun = harness.cli(
        "run", "--pipeline_code", "p", "--task_code", "a", "--rerun", "--reason", "input fixed", "--run-id", run_id
    )
    assert rerun.returncode == 0, str(rerun)
    assert "a succeeded; 1 task(s) that were skipped because of its failure still need to run (c)" in rerun.stdout
    run = harness.runs()[0]
    assert (run.status, run.repair_pending) == ("IN-PROGRESS", "Y")
    assert "c" not in harness.task_runs()
    actions = [
        (i.action, i.from_status, i.to_status)
        for i in harness.rows(t.aud_run_interventions, order_by=t.aud_run_interventions.c.intervention_id)
    ]
    assert actions == [("REOPEN", "FAILED", "IN-PROGRESS"), ("RERUN", "FAILED", None), ("RESET", "SKIPPED", None)]
    resumed = harness.cli("run", "--pipeline_code", "p")
    assert resumed.returncode == 0, str(resumed)
    run = harness.runs()[0]
    assert (run.status, run.repair_pending, run.output_revision) == ("SUCCESS", "N", 2)
    assert {c: r.status for c, r in harness.task_runs().items()} == {"a": "SUCCESS", "c": "SUCCESS"}


def test_rerun_with_downstream_runs_every_later_task_again_and_ends_the_run(harness: Harness) -> None:
    harness.pipeline(
        "p", [TaskSpec("a", {"rows": 1}), TaskSpec("b", {"rows": 2}), TaskSpec("x")], [("b", "a", "SUCCESS")]
    )
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    run_id = str(harness.runs()[0].pipeline_run_id)
    result = harness.cli(
        "run",
        "--pipeline_code",
        "p",
        "--task_code",
        "a",
        "--rerun",
        "--with-downstream",
        "--reason",
        "late data",
        "--run-id",
        run_id,
    )
    assert result.returncode == 0, str(result)
    assert sorted((a.task_code, a.attempt_number) for a in harness.attempts()) == [
        ("a", 1),
        ("a", 2),
        ("b", 1),
        ("b", 2),
        ("x", 1),
    ]
    run = harness.runs()[0]
    assert (run.status, run.output_revision) == ("SUCCESS", 2)


def test_b31_a_refused_rerun_changes_nothing(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"fail": "x"})])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 1
    failed = harness.runs()[0]
    assert harness.cli("run", "--pipeline_code", "p", "--init-only").returncode == 0
    refused = harness.cli(
        "run",
        "--pipeline_code",
        "p",
        "--task_code",
        "a",
        "--rerun",
        "--reason",
        "retry",
        "--run-id",
        str(failed.pipeline_run_id),
    )
    assert refused.returncode == 22, str(refused)
    assert "can't be repaired now" in refused.stdout and "nothing was changed" in refused.stdout
    assert harness.runs()[0].status == "FAILED"
    assert harness.rows(t.aud_run_interventions) == []
    assert [a.attempt_number for a in harness.attempts("a")] == [1]


def test_b29_a_skipped_run_is_an_ended_run(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a")])
    skipped = harness.cli("run", "--pipeline_code", "p", "--skip", "--reason", "holiday")
    assert skipped.returncode == 0, str(skipped)
    run = harness.runs()[0]
    assert (run.status, run.end_date is not None) == ("SKIPPED", True)
    refused = harness.cli("run", "--pipeline_code", "p", "--task_code", "a", "--ignore-dependencies", "--reason", "x")
    assert refused.returncode == 9
    assert "found no unfinished run" in refused.stderr
    assert harness.attempts() == []


def test_w11_nothing_picks_a_run_by_recency(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a")])
    harness.pipeline("q", [TaskSpec("b")])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    assert harness.cli("run", "--pipeline_code", "q").returncode == 0
    _p_run, q_run = harness.runs()
    no_run = harness.cli("run", "--pipeline_code", "p", "--task_code", "a", "--rerun", "--reason", "again")
    assert no_run.returncode == 9 and "found no unfinished run" in no_run.stderr
    other = harness.cli(
        "run",
        "--pipeline_code",
        "p",
        "--task_code",
        "a",
        "--rerun",
        "--reason",
        "again",
        "--run-id",
        str(q_run.pipeline_run_id),
    )
    assert other.returncode == 9 and "a run of another pipeline" in other.stderr
    assert len(harness.attempts()) == 2


def test_b11_clearing_a_task_in_an_older_dag_run_repairs_that_run(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: remote\n"
    harness.project.write_config()
    harness.pipeline("p", [TaskSpec("a", {"rows": 1}), TaskSpec("b", {"rows": 2})], [("b", "a", "SUCCESS")])
    for key in ("orchestrator:first", "orchestrator:second"):
        assert harness.cli("run", "--pipeline_code", "p", "--init-only", "--run-key", key).returncode == 0
        for task in ("a", "b"):
            assert harness.cli("run", "--pipeline_code", "p", "--task_code", task, "--run-key", key).returncode == 0
        assert harness.cli("run", "--pipeline_code", "p", "--finalize-only", "--run-key", key).returncode == 0
    first, second = harness.runs()
    assert (first.trigger_kind, first.status, second.status) == ("ORCHESTRATOR", "SUCCESS", "SUCCESS")
    cleared = harness.cli("run", "--pipeline_code", "p", "--task_code", "b", "--run-key", "orchestrator:first")
    assert cleared.returncode == 0, str(cleared)
    first, second = harness.runs()
    assert (first.status, second.status) == ("IN-PROGRESS", "SUCCESS")
    b_attempts = [(a.attempt_number, a.task_run_id) for a in harness.attempts("b")]
    first_b = harness.task_runs(first.pipeline_run_id)["b"]
    assert (first_b.attempt_count, first_b.status) == (2, "SUCCESS")
    assert len(b_attempts) == 3
    assert (
        harness.cli("run", "--pipeline_code", "p", "--finalize-only", "--run-key", "orchestrator:first").returncode == 0
    )
    first, second = harness.runs()
    assert (first.status, first.output_revision, second.output_revision) == ("SUCCESS", 2, 1)


def test_remote_mode_refuses_a_whole_pipeline_run(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: remote\n"
    harness.project.write_config()
    harness.pipeline("p", [TaskSpec("a")])
    refused = harness.cli("run", "--pipeline_code", "p")
    assert refused.returncode == 10 and "remote mode" in refused.stderr
    assert harness.runs() == []
