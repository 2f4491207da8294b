"""`explain`: one golden test per state a task can be in."""

from __future__ import annotations

import signal

from etl_craft.engine.schema import tables as t
from etl_craft.services.context import open_context
from etl_craft.services.documents import document, plain
from etl_craft.services.inspect.explain import explain_task
from etl_craft.services.runs.selection import RunSelector
from tests.fixtures.harness import Harness, TaskSpec, cross_dependency


def explain(h: Harness, task: str, *extra: str) -> list[str]:
    result = h.cli("explain", "--pipeline_code", "p", "--task_code", task, *extra)
    assert result.returncode == 0, str(result)
    return result.stdout.splitlines()


def _init(h: Harness) -> int:
    assert h.cli("run", "--pipeline_code", "p", "--init-only").returncode == 0
    return h.runs()[-1].pipeline_run_id


def test_not_run_and_ready(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a"), TaskSpec("b")], [("b", "a", "SUCCESS")])
    run_id = _init(harness)
    key = harness.runs()[0].run_key
    assert explain(harness, "b") == [
        "p.b: not run",
        f"run: pipeline_run_id={run_id} key={key} status=IN-PROGRESS; task: status=NOT RUN attempts=0",
        "run_condition=ALL required_count=1",
        "a: SUCCESS status=NOT RUN met=false; a has not finished",
        "next: it runs once a finish(es)",
    ]
    assert explain(harness, "a")[-1] == "next: it is ready: etl-craft run --pipeline_code p starts it"


def test_blocked_by_a_failure_and_unsatisfiable(harness: Harness) -> None:
    harness.pipeline(
        "p",
        [TaskSpec("a", {"fail": "broken feed"}), TaskSpec("b"), TaskSpec("ok"), TaskSpec("c")],
        [("b", "a", "SUCCESS"), ("c", "ok", "FAILURE")],
    )
    _init(harness)
    assert harness.cli("run", "--pipeline_code", "p", "--task_code", "a").returncode == 1
    assert harness.cli("run", "--pipeline_code", "p", "--task_code", "ok").returncode == 0
    blocked = explain(harness, "b")
    assert blocked[0] == "p.b: blocked by a failure"
    assert (
        blocked[3]
        == "a: SUCCESS status=FAILED met=false; a FAILED; final once nothing else can start (a retry or rerun may still fix it)"
    )
    assert (
        blocked[-1]
        == "next: rerun a (etl-craft run --pipeline_code p --task_code a --rerun --reason ...), or let the run end"
    )
    unsatisfiable = explain(harness, "c")
    assert unsatisfiable[0] == "p.c: unsatisfiable"
    assert unsatisfiable[3] == "ok: FAILURE status=SUCCESS met=false; ok ended SUCCESS, which can't satisfy FAILURE"


def test_succeeded_and_skipped(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"rows": 0}), TaskSpec("b")], [("b", "a", "HAS_DATA")])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    run_id = harness.runs()[0].pipeline_run_id
    succeeded = explain(harness, "a", "--run-id", str(run_id))
    assert succeeded[0] == "p.a: succeeded"
    assert (
        succeeded[-1]
        == f"next: nothing: it succeeded. To run it again: etl-craft run --pipeline_code p --task_code a --rerun --reason ... --run-id {run_id}"
    )
    skipped = explain(harness, "b", "--run-id", str(run_id))
    assert skipped[0] == "p.b: skipped"
    assert (
        skipped[2] == "skipped: its dependencies can no longer be met: a (SUCCESS with 0 rows written, HAS_DATA needed)"
    )


def test_paused(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a")])
    _init(harness)
    assert (
        harness.cli("pause", "--pipeline_code", "p", "--reason", "vendor outage", ETL_CRAFT_ACTOR="ops").returncode == 0
    )
    lines = explain(harness, "a")
    assert lines[0] == "p.a: paused"
    assert lines[2] == "paused by ops: vendor outage"
    assert lines[-1] == "next: the pipeline is paused; etl-craft resume --pipeline_code p --reason ... lets it start"


def test_retry_scheduled(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"fail": "flaky"}, parameters={"RETRIES": "1", "RETRY_DELAY_SECONDS": "300"})])
    running = harness.start("run", "--pipeline_code", "p")
    queued = harness.wait_until(lambda: [a for a in harness.attempts("a") if a.status == "QUEUED"], 60, "the retry")[0]
    lines = explain(harness, "a")
    running.signal(signal.SIGTERM)
    running.wait(60)
    assert lines[0] == "p.a: retry scheduled"
    assert f"retry_at={queued.not_before:%Y-%m-%d %H:%M:%S}Z" in lines
    assert lines[-1] == f"next: attempt 2 starts at {queued.not_before:%Y-%m-%d %H:%M:%S}Z"


def test_waiting_on_a_gate_and_json_is_the_service_document(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: local\n  Gate_wait_minutes: 1\n"
    harness.project.write_config()
    harness.pipeline("up", [TaskSpec("x", {"sleep": 120})])  # stopped below, long before it ends
    harness.pipeline("p", [TaskSpec("a")])
    harness.migrate(cross_dependency("p", "a", "up", "x"))
    upstream = harness.start("run", "--pipeline_code", "up")
    harness.wait_for_attempt("x", "RUNNING")
    waiting = harness.start("run", "--pipeline_code", "p")
    wait = harness.wait_until(lambda: harness.rows(t.aud_gate_waits), 60, "the gate wait")[0]
    lines = explain(harness, "a")
    # The waiting run looks again every few seconds; compare two reads that saw the same stored look.
    for _ in range(30):  # a loaded machine may need many tries to read between two looks
        before = harness.rows(t.aud_gate_waits)
        as_json = harness.cli("explain", "--pipeline_code", "p", "--task_code", "a", "--format", "json").json()
        ctx = open_context(str(harness.project.config_path))
        try:
            service = plain(document("explain", explain_task(ctx, "p", "a", RunSelector())))
        finally:
            ctx.close()
        if harness.rows(t.aud_gate_waits) == before:
            break
    for process in (waiting, upstream):
        process.signal(signal.SIGTERM)
        process.wait(60)
    assert lines[0] == "p.a: waiting on a gate"
    assert lines[3] == "up.x: SUCCESS status=- met=judged at admission; judged by a gate when the task is admitted"
    assert any(line.startswith(f"gate task_id={wait.task_id} next_check_at=") for line in lines)
    assert as_json["schema"] == "etl-craft/explain/1" and as_json["state"] == "waiting on a gate"
    assert {k: v for k, v in as_json.items() if k != "gate_waits"} == {
        k: v for k, v in service.items() if k != "gate_waits"
    }
