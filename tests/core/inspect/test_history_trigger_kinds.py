"""`history` says how each run started (TRIGGER_KIND), in the text as in the JSON document."""

from __future__ import annotations

from etl_craft.cli.text import when
from tests.fixtures.harness import Harness, TaskSpec


def _tabbed(*cells: object) -> str:
    return "\t".join(str(c) for c in cells)


def test_history_shows_the_trigger_kind_of_every_run_and_of_a_task_s_rows(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("t", {"rows": 1})])
    steps = [
        ("run", "--pipeline_code", "p", "--backfill", "2026-01-01:2026-01-02", "--reason", "vendor resent"),
        ("run", "--pipeline_code", "p", "--run-date", "2026-01-03"),
        ("mark", "--pipeline_code", "p", "--new-run", "--status", "SUCCESS", "--reason", "loaded by the vendor"),
    ]
    for step in steps:
        assert harness.cli(*step).returncode == 0, step
    harness.project.orchestration = "  Mode: remote\n"
    harness.project.write_config()
    for step in (["--init-only"], ["--task_code", "t"], ["--finalize-only"]):
        done = harness.cli("run", "--pipeline_code", "p", "--run-key", "dag-1", *step)
        assert done.returncode == 0, done

    runs = harness.runs()
    assert [(r.pipeline_run_id, r.trigger_kind, r.status) for r in runs] == [
        (1, "BACKFILL", "SUCCESS"),
        (2, "BACKFILL", "SUCCESS"),
        (3, "MANUAL", "SUCCESS"),
        (4, "STAND_IN", "SUCCESS"),
        (5, "ORCHESTRATOR", "SUCCESS"),
    ]
    result = harness.cli("history", "--pipeline_code", "p")
    assert result.returncode == 0, result
    lines = result.stdout.splitlines()
    assert lines[0] == _tabbed(
        "PIPELINE_RUN_ID",
        "STATUS",
        "TRIGGER_KIND",
        "RUN_DATE",
        "START_DATE",
        "END_DATE",
        "SLA_STATUS",
        "STARTED_BY",
        "ENDED_BY",
    )
    shown = [line.split("\t") for line in lines[1:6]]
    assert [row[:4] for row in shown] == [
        [str(r.pipeline_run_id), r.status, r.trigger_kind, when(r.run_date)] for r in reversed(runs)
    ]
    assert [
        r["trigger_kind"] for r in harness.cli("history", "--pipeline_code", "p", "--format", "json").json()["runs"]
    ] == [
        "ORCHESTRATOR",
        "STAND_IN",
        "MANUAL",
        "BACKFILL",
        "BACKFILL",
    ]
    assert when(runs[0].run_date) == "2026-01-01" and when(runs[2].run_date) == "2026-01-03"

    task = harness.cli("history", "--pipeline_code", "p", "--task_code", "t")
    assert task.returncode == 0, task
    task_lines = [line.split("\t") for line in task.stdout.splitlines()]
    assert task_lines[0][:4] == ["PIPELINE_RUN_ID", "STATUS", "TRIGGER_KIND", "ATTEMPTS"]
    assert [row[:4] for row in task_lines[1:6]] == [
        ["5", "SUCCESS", "ORCHESTRATOR", "1"],
        ["4", "NOT RUN", "STAND_IN", "0"],
        ["3", "SUCCESS", "MANUAL", "1"],
        ["2", "SUCCESS", "BACKFILL", "1"],
        ["1", "SUCCESS", "BACKFILL", "1"],
    ]
