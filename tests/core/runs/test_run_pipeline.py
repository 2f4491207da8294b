"""`etl-craft run --pipeline_code`: one run of a whole pipeline through the real CLI, both dialects."""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, TaskSpec


def test_a_pipeline_runs_every_task_and_ends_success(harness: Harness) -> None:
    harness.pipeline(
        "sales",
        [
            TaskSpec("extract", {"rows": 5, "offset": 42}),
            TaskSpec("load", {"rows": 7}),
            TaskSpec("report", {"rows": 0}),
        ],
        [("load", "extract", "SUCCESS"), ("report", "load", "SUCCESS")],
    )
    result = harness.cli("run", "--pipeline_code", "sales", ETL_CRAFT_ACTOR="ops@ci")
    assert result.returncode == 0, result
    run = harness.runs()[0]
    assert result.stdout.splitlines()[-1] == f"sales: pipeline_run_id={run.pipeline_run_id} SUCCESS"
    assert (run.status, run.trigger_kind, run.started_by, run.started_by_kind) == (
        "SUCCESS",
        "MANUAL",
        "ops@ci",
        "HUMAN",
    )
    assert (run.ended_by_kind, run.owner_id, run.lease_expires_at, run.output_revision) == ("SYSTEM", None, None, 1)
    assert run.run_date is not None and run.run_key.startswith("manual:")
    tasks = harness.task_runs()
    assert {code: (r.status, r.attempt_count, r.rows_written) for code, r in tasks.items()} == {
        "extract": ("SUCCESS", 1, 5),
        "load": ("SUCCESS", 1, 7),
        "report": ("SUCCESS", 1, 0),
    }
    assert "SOURCE_COUNT = 5" in tasks["extract"].task_log and "OFFSET = 42 (NUMBER)" in tasks["extract"].task_log
    attempts = harness.attempts()
    assert [(a.task_code, a.status, a.attempt_number, a.exit_code) for a in attempts] == [
        ("extract", "SUCCESS", 1, 0),
        ("load", "SUCCESS", 1, 0),
        ("report", "SUCCESS", 1, 0),
    ]
    for a in attempts:
        assert (
            a.pid and a.process_start and a.host and a.owner_id and a.log_path.endswith(f"{a.task_code}.attempt-1.log")
        )
        assert a.claimed_at <= a.started_at <= a.ended_at
        assert a.requested_by == "ops@ci"
    extract_id = next(a.task_id for a in [tasks["extract"]])
    offsets = harness.rows(t.aud_task_offset_tracker)
    assert [(o.task_id, o.offset_type, o.offset_value) for o in offsets] == [(extract_id, "NUMBER", "42")]
    actions = harness.rows(t.aud_actions, t.aud_actions.c.command == "run")
    assert [(a.actor, a.pipeline_run_id, a.outcome) for a in actions] == [("ops@ci", run.pipeline_run_id, "REQUESTED")]


def test_a_failure_skips_what_needed_it_runs_the_alert_and_ends_failed(harness: Harness) -> None:
    harness.pipeline(
        "sales",
        [TaskSpec("extract", {"fail": "the source is down"}), TaskSpec("load"), TaskSpec("notify"), TaskSpec("side")],
        [("load", "extract", "SUCCESS"), ("notify", "extract", "FAILURE")],
    )
    result = harness.cli("run", "--pipeline_code", "sales")
    assert result.returncode == 1, result
    run = harness.runs()[0]
    assert run.status == "FAILED"
    assert result.stdout.splitlines()[-1] == (
        f"sales: pipeline_run_id={run.pipeline_run_id} FAILED — 1 task(s) did not succeed: extract (FAILED); "
        "skipped because of the failure: load"
    )
    tasks = harness.task_runs()
    assert tasks["extract"].status == "FAILED" and "the source is down" in tasks["extract"].error_message
    assert (tasks["load"].status, tasks["load"].attempt_count) == ("SKIPPED", 0)
    assert tasks["load"].error_message == "its dependencies can no longer be met: extract (FAILED, SUCCESS needed)"
    assert tasks["notify"].status == "SUCCESS" and tasks["side"].status == "SUCCESS"
    assert [a.task_code for a in harness.attempts() if a.task_code == "load"] == []


def test_a_dependency_on_a_retired_task_is_refused_before_anything_is_recorded(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a"), TaskSpec("b")], [("b", "a", "SUCCESS")])
    harness.migrate("UPDATE CFG_TASKS SET ACTIVE_FLAG = 'N' WHERE TASK_CODE = 'a';\n")
    refused = harness.cli("run", "--pipeline_code", "p")
    assert refused.returncode == 8, str(refused)
    assert "task p.b" in refused.stderr and "p.a" in refused.stderr and "not an active task" in refused.stderr
    assert harness.runs() == []


def test_tasks_that_can_never_run_are_skipped_and_the_run_still_succeeds(harness: Harness) -> None:
    harness.pipeline(
        "p", [TaskSpec("a", {"rows": 0}), TaskSpec("b"), TaskSpec("c")], [("b", "a", "HAS_DATA"), ("c", "a", "FAILURE")]
    )
    result = harness.cli("run", "--pipeline_code", "p")
    run = harness.runs()[0]
    # a succeeded with no rows: b (HAS_DATA) and c (FAILURE) can't run; a data task succeeded, so SUCCESS.
    assert (result.returncode, run.status) == (0, "SUCCESS")
    assert {c: r.status for c, r in harness.task_runs().items()} == {"a": "SUCCESS", "b": "SKIPPED", "c": "SKIPPED"}


def test_unknown_pipeline_is_a_metadata_error_with_close_matches(harness: Harness) -> None:
    harness.pipeline("sales_daily", [TaskSpec("a")])
    result = harness.cli("run", "--pipeline_code", "sales_dialy")
    assert result.returncode == 4
    assert "pipeline 'sales_dialy'" in result.stderr and "Did you mean sales_daily?" in result.stderr


def test_json_output_is_one_operation_document(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"rows": 3})])
    result = harness.cli("run", "--pipeline_code", "p", "--format", "json")
    assert result.returncode == 0, result
    doc = result.json()
    assert doc["schema"] == "etl-craft/operation/1"
    assert (doc["status"], doc["exit_code"], doc["pipeline"]) == ("SUCCESS", 0, "p")
    assert doc["run"]["status"] == "SUCCESS" and doc["run"]["pipeline_run_id"] == harness.runs()[0].pipeline_run_id
    assert "a: attempt 1 started" in result.stderr


def test_a_paused_pipeline_starts_nothing_and_exits_0(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a")])
    with harness.db.write() as conn:
        pipeline_id = conn.execute(sa.select(t.cfg_pipelines.c.pipeline_id)).scalar_one()
        conn.execute(
            t.aud_pipeline_pauses.insert().values(pipeline_id=pipeline_id, paused_by="ops", reason="migration window")
        )
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 0, result
    assert "p is paused by ops" in result.stdout and "migration window" in result.stdout
    assert harness.runs() == []
