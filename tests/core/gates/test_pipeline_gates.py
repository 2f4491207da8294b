"""Pipelines that depend on pipelines: recorded decisions, consumption, waits, repairs and backfills."""

from __future__ import annotations

import signal

import pytest

from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, TaskSpec, pipeline_dependency

FIX_UP = "UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{}' WHERE PARAMETER_NAME = 'INPUT_PARAMS' AND TASK_ID IN (SELECT TASK_ID FROM CFG_TASKS WHERE TASK_CODE = 'u');\n"


def set_params(task: str, params: str) -> str:
    return (
        f"UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{params}' WHERE PARAMETER_NAME = 'INPUT_PARAMS' "
        f"AND TASK_ID IN (SELECT TASK_ID FROM CFG_TASKS WHERE TASK_CODE = '{task}');\n"
    )


@pytest.fixture
def two(harness: Harness) -> Harness:
    harness.project.orchestration = "  Mode: local\n  Gate_wait_minutes: 1\n"
    harness.project.write_config()
    harness.pipeline("up", [TaskSpec("u", {"rows": 2})])
    harness.pipeline("down", [TaskSpec("d", {"rows": 1})])
    harness.migrate(pipeline_dependency("down", "up"))
    return harness


def _runs(h: Harness, code: str) -> list:
    with h.db.read() as conn:
        import sqlalchemy as sa

        return list(
            conn.execute(
                sa.select(t.aud_pipelines_run_log)
                .join(t.cfg_pipelines, t.cfg_pipelines.c.pipeline_id == t.aud_pipelines_run_log.c.pipeline_id)
                .where(t.cfg_pipelines.c.pipeline_code == code)
                .order_by(t.aud_pipelines_run_log.c.pipeline_run_id)
            ).all()
        )


def test_a_satisfied_gate_is_recorded_and_consumed_once(two: Harness) -> None:
    assert two.cli("run", "--pipeline_code", "up").returncode == 0
    up_run = _runs(two, "up")[0]
    first = two.cli("run", "--pipeline_code", "down")
    assert first.returncode == 0, str(first)
    down_run = _runs(two, "down")[0]
    decisions = two.rows(t.aud_gate_decisions)
    assert [
        (d.pipeline_run_id, d.result, d.selected_pipeline_run_id, d.selected_revision, d.attempt_id) for d in decisions
    ] == [(down_run.pipeline_run_id, "SATISFIED", up_run.pipeline_run_id, 1, None)]
    assert decisions[0].reason == f"up last finished run {up_run.pipeline_run_id} ended SUCCESS (revision 1)"
    consumed = two.rows(t.aud_dependency_consumption)
    assert [
        (c.pipeline_run_id, c.consumed_pipeline_run_id, c.consumed_revision, c.pipeline_dependency_id) for c in consumed
    ] == [(down_run.pipeline_run_id, up_run.pipeline_run_id, 1, decisions[0].pipeline_dependency_id)]
    again = two.cli("run", "--pipeline_code", "down")
    assert again.returncode == 0, str(again)
    second = _runs(two, "down")[1]
    assert second.status == "SKIPPED"
    assert again.stdout.splitlines()[-1] == (
        f"down: pipeline_run_id={second.pipeline_run_id} SKIPPED — upstream pipeline up last finished run "
        f"{up_run.pipeline_run_id} (revision 1) was already consumed by this dependency; a newer run of up is needed"
    )
    assert [d.result for d in two.rows(t.aud_gate_decisions)] == ["SATISFIED", "UNSATISFIED"]
    assert len(two.rows(t.aud_dependency_consumption)) == 1
    assert "d" not in two.task_runs(second.pipeline_run_id)


def test_an_upstream_failure_skips_the_downstream_run(two: Harness) -> None:
    two.migrate(set_params("u", '{"fail": "boom"}'))
    assert two.cli("run", "--pipeline_code", "up").returncode == 1
    result = two.cli("run", "--pipeline_code", "down")
    assert result.returncode == 0
    up_run, down_run = _runs(two, "up")[0], _runs(two, "down")[0]
    assert down_run.status == "SKIPPED"
    assert (
        f"up last finished run {up_run.pipeline_run_id} ended FAILED, which does not satisfy the SUCCESS dependency on up"
    ) in result.stdout
    assert two.rows(t.aud_dependency_consumption) == []


def test_a_gate_waits_for_a_running_upstream_without_a_slot(two: Harness) -> None:
    two.migrate(set_params("u", '{"sleep": 6, "rows": 2}'))
    up = two.start("run", "--pipeline_code", "up")
    two.wait_for_attempt("u", "RUNNING")
    down = two.cli("run", "--pipeline_code", "down", timeout=120)
    assert up.wait(60).returncode == 0
    assert down.returncode == 0, str(down)
    assert "waits for up (look 1" in down.stdout
    down_run, up_run = _runs(two, "down")[0], _runs(two, "up")[0]
    assert down_run.status == "SUCCESS"
    waits = two.rows(t.aud_gate_waits)
    assert len(waits) == 1 and waits[0].task_id is None and waits[0].next_check_at is None and waits[0].looks >= 1
    decision = two.rows(t.aud_gate_decisions)[0]
    assert (decision.result, decision.selected_pipeline_run_id) == ("SATISFIED", up_run.pipeline_run_id)
    # The downstream run was admitted only after the upstream ended.
    assert decision.decided_at >= up_run.end_date


def test_a_restart_during_a_wait_resumes_it_without_a_new_first_look(two: Harness) -> None:
    two.migrate(set_params("u", '{"sleep": 10, "rows": 2}'))
    up = two.start("run", "--pipeline_code", "up")
    two.wait_for_attempt("u", "RUNNING")
    waiting = two.start("run", "--pipeline_code", "down")
    first_wait = two.wait_until(lambda: two.rows(t.aud_gate_waits), 60, "a stored wait")[0]
    waiting.process.kill()
    waiting.wait(30)
    queued = _runs(two, "down")[0]
    assert queued.status == "QUEUED"
    resumed = two.cli("run", "--pipeline_code", "down", timeout=120)
    assert up.wait(60).returncode == 0
    assert resumed.returncode == 0, str(resumed)
    runs = _runs(two, "down")
    assert [(r.pipeline_run_id, r.status) for r in runs] == [(queued.pipeline_run_id, "SUCCESS")]
    wait = two.rows(t.aud_gate_waits)[0]
    assert wait.first_check_at == first_wait.first_check_at and wait.looks >= first_wait.looks
    assert wait.wait_until == first_wait.wait_until


def test_b14_a_repaired_upstream_is_consumed_again_with_consume_repairs(harness: Harness) -> None:
    harness.pipeline("up", [TaskSpec("u", {"rows": 2})])
    harness.pipeline("yes", [TaskSpec("y")])
    harness.pipeline("no", [TaskSpec("n")])
    harness.migrate(
        pipeline_dependency("yes", "up", consume_repairs="Y") + pipeline_dependency("no", "up", consume_repairs="N")
    )
    assert harness.cli("run", "--pipeline_code", "up").returncode == 0
    assert harness.cli("run", "--pipeline_code", "yes").returncode == 0
    assert harness.cli("run", "--pipeline_code", "no").returncode == 0
    up_run = _runs(harness, "up")[0]
    rerun = harness.cli(
        "run",
        "--pipeline_code",
        "up",
        "--task_code",
        "u",
        "--rerun",
        "--reason",
        "fix",
        "--run-id",
        str(up_run.pipeline_run_id),
    )
    assert rerun.returncode == 0, str(rerun)
    assert _runs(harness, "up")[0].output_revision == 2
    assert harness.cli("run", "--pipeline_code", "yes").returncode == 0
    assert harness.cli("run", "--pipeline_code", "no").returncode == 0
    assert [r.status for r in _runs(harness, "yes")] == ["SUCCESS", "SUCCESS"]
    assert [r.status for r in _runs(harness, "no")] == ["SUCCESS", "SKIPPED"]
    yes_consumed = [
        (c.consumed_pipeline_run_id, c.consumed_revision)
        for c in harness.rows(t.aud_dependency_consumption, order_by=t.aud_dependency_consumption.c.consumption_id)
        if c.pipeline_id == _runs(harness, "yes")[0].pipeline_id
    ]
    assert yes_consumed == [(up_run.pipeline_run_id, 1), (up_run.pipeline_run_id, 2)]


def test_b62_the_downstream_consumes_what_its_gate_admitted(two: Harness) -> None:
    assert two.cli("run", "--pipeline_code", "up").returncode == 0
    up_run = _runs(two, "up")[0]
    two.migrate(set_params("d", '{"sleep": 5}'))
    down = two.start("run", "--pipeline_code", "down")
    two.wait_for_attempt("d", "RUNNING")
    repaired = two.cli(
        "run",
        "--pipeline_code",
        "up",
        "--task_code",
        "u",
        "--rerun",
        "--reason",
        "fix",
        "--run-id",
        str(up_run.pipeline_run_id),
    )
    assert repaired.returncode == 0, str(repaired)
    assert down.wait(60).returncode == 0
    consumed = two.rows(t.aud_dependency_consumption)
    assert [(c.consumed_pipeline_run_id, c.consumed_revision) for c in consumed] == [(up_run.pipeline_run_id, 1)]
    # The repair is a newer revision: the next downstream run takes it.
    two.migrate(set_params("d", "{}"))
    assert two.cli("run", "--pipeline_code", "down").returncode == 0
    assert [
        (c.consumed_pipeline_run_id, c.consumed_revision)
        for c in two.rows(t.aud_dependency_consumption, order_by=t.aud_dependency_consumption.c.consumption_id)
    ] == [(up_run.pipeline_run_id, 1), (up_run.pipeline_run_id, 2)]


def test_b4_backfill_runs_neither_feed_nor_block_gates(two: Harness) -> None:
    # A finished upstream backfill is not consumed.
    assert (
        two.cli("run", "--pipeline_code", "up", "--backfill", "2026-01-01:2026-01-01", "--reason", "history").returncode
        == 0
    )
    skipped = two.cli("run", "--pipeline_code", "down")
    assert skipped.returncode == 0 and "up has no finished run" in skipped.stdout
    # A failed upstream backfill does not block: the scheduled run decides.
    assert two.cli("run", "--pipeline_code", "up").returncode == 0
    scheduled = _runs(two, "up")[-1]
    two.migrate(set_params("u", '{"fail": "bad day"}'))
    assert (
        two.cli("run", "--pipeline_code", "up", "--backfill", "2026-01-02:2026-01-02", "--reason", "history").returncode
        == 1
    )
    admitted = two.cli("run", "--pipeline_code", "down")
    assert admitted.returncode == 0, str(admitted)
    assert _runs(two, "down")[-1].status == "SUCCESS"
    assert two.rows(t.aud_gate_decisions)[-1].selected_pipeline_run_id == scheduled.pipeline_run_id
    # A running upstream backfill is not waited for.
    two.migrate(set_params("u", '{"sleep": 8}'))
    backfill = two.start("run", "--pipeline_code", "up", "--backfill", "2026-01-03:2026-01-03", "--reason", "history")
    two.wait_until(lambda: any(r.status == "IN-PROGRESS" for r in _runs(two, "up")), 60, "the backfill run")
    quick = two.cli("run", "--pipeline_code", "down")
    assert "waits for" not in quick.stdout
    assert _runs(two, "down")[-1].status == "SKIPPED"
    assert backfill.wait(60).returncode == 0


def test_b7_plain_runs_and_backfills_never_take_over_each_others_runs(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"sleep": 15})])
    backfill = harness.start(
        "run", "--pipeline_code", "p", "--backfill", "2026-02-01:2026-02-01", "--reason", "history"
    )
    harness.wait_for_attempt("a", "RUNNING")
    plain = harness.cli("run", "--pipeline_code", "p")
    assert plain.returncode == 9 and "backfill run" in plain.stderr and "in progress" in plain.stderr
    assert backfill.wait(60).returncode == 0
    runner = harness.start("run", "--pipeline_code", "p")
    harness.wait_until(
        lambda: len([a for a in harness.attempts("a") if a.status == "RUNNING"]) == 1, 60, "the plain run"
    )
    refused = harness.cli("run", "--pipeline_code", "p", "--backfill", "2026-02-02:2026-02-02", "--reason", "history")
    assert refused.returncode == 9 and "no run in progress before a backfill starts" in refused.stderr
    assert runner.wait(60).returncode == 0
    runs = harness.runs()
    assert next((r.trigger_kind, r.status, str(r.run_date)) for r in runs) == ("BACKFILL", "SUCCESS", "2026-02-01")
    assert [(r.trigger_kind, r.status) for r in runs[1:]] == [("MANUAL", "SUCCESS")]


def test_a_plain_run_between_two_backfill_dates_stops_the_backfill_with_the_resume_command(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a")])
    backfill = harness.start(
        "run",
        "--pipeline_code",
        "p",
        "--backfill",
        "2026-03-01:2026-03-03",
        "--reason",
        "history",
        ETL_CRAFT_FAULT="backfill_next_date:sleep:6",
    )
    harness.wait_until(lambda: [r for r in harness.runs() if r.status == "SUCCESS"], 60, "the first date")
    plain = harness.cli("run", "--pipeline_code", "p", "--init-only")
    assert plain.returncode == 0, str(plain)
    stopped = backfill.wait(60)
    assert stopped.returncode == 22, str(stopped)
    assert "backfill stopped after 1 of 3 date(s)" in stopped.stdout
    assert (
        "Resume with: etl-craft run --pipeline_code p --backfill 2026-03-02:2026-03-03 --reason 'history'"
        in stopped.stdout
    )
    runs = harness.runs()
    assert [(r.trigger_kind, r.status) for r in runs] == [("BACKFILL", "SUCCESS"), ("MANUAL", "IN-PROGRESS")]


def test_b23_callers_during_a_gate_wait_change_nothing_and_one_consumes_the_repair(two: Harness) -> None:
    assert two.cli("run", "--pipeline_code", "up").returncode == 0
    assert two.cli("run", "--pipeline_code", "down").returncode == 0
    up_run = _runs(two, "up")[0]
    two.migrate(set_params("u", '{"sleep": 8, "rows": 5}'))
    repair = two.start(
        "run",
        "--pipeline_code",
        "up",
        "--task_code",
        "u",
        "--rerun",
        "--reason",
        "late data",
        "--run-id",
        str(up_run.pipeline_run_id),
    )
    two.wait_until(lambda: _runs(two, "up")[0].status == "IN-PROGRESS", 60, "the repair")
    callers = [two.start("run", "--pipeline_code", "down") for _ in range(3)]
    results = sorted((c.wait(120) for c in callers), key=lambda r: r.returncode)
    assert repair.wait(60).returncode == 0
    assert [r.returncode for r in results] == [0, 22, 22], [str(r) for r in results]
    assert all("this one changed nothing" in r.stdout for r in results[1:])
    down_runs = _runs(two, "down")
    assert [r.status for r in down_runs] == ["SUCCESS", "SUCCESS"]
    consumed = [
        (c.consumed_pipeline_run_id, c.consumed_revision)
        for c in two.rows(t.aud_dependency_consumption, order_by=t.aud_dependency_consumption.c.consumption_id)
    ]
    assert consumed == [(up_run.pipeline_run_id, 1), (up_run.pipeline_run_id, 2)]


def test_dependency_gates_warn_lets_the_run_through_and_records_the_bypass(two: Harness) -> None:
    two.project.orchestration = "  Mode: local\n  Dependency_gates: warn\n"
    two.project.write_config()
    result = two.cli("run", "--pipeline_code", "down")
    assert result.returncode == 0, str(result)
    assert _runs(two, "down")[0].status == "SUCCESS"
    decision = two.rows(t.aud_gate_decisions)[0]
    assert decision.result == "BYPASSED" and decision.reason.startswith(
        "Dependency_gates is warn; up has no finished run"
    )
    assert [i.action for i in two.rows(t.aud_run_interventions)] == ["GATE_BYPASS"]
    assert two.rows(t.aud_dependency_consumption) == []


def test_sigterm_during_a_gate_wait_leaves_the_run_queued(two: Harness) -> None:
    two.migrate(set_params("u", '{"sleep": 20}'))
    up = two.start("run", "--pipeline_code", "up")
    two.wait_for_attempt("u", "RUNNING")
    waiting = two.start("run", "--pipeline_code", "down")
    two.wait_until(lambda: two.rows(t.aud_gate_waits), 60, "a stored wait")
    waiting.signal(signal.SIGTERM)
    result = waiting.wait(30)
    assert result.returncode == 22, str(result)
    run = _runs(two, "down")[0]
    assert (run.status, run.owner_id) == ("QUEUED", None)
    up.signal(signal.SIGTERM)
    up.wait(30)


def test_a_stand_in_run_lets_downstreams_proceed(two: Harness) -> None:
    stand_in = two.cli(
        "mark",
        "--pipeline_code",
        "up",
        "--new-run",
        "--status",
        "SUCCESS",
        "--task_code",
        "u",
        "--rows",
        "9",
        "--reason",
        "loaded by the vendor",
        ETL_CRAFT_ACTOR="ops",
    )
    assert stand_in.returncode == 0, str(stand_in)
    up_run = _runs(two, "up")[0]
    assert (up_run.trigger_kind, up_run.status, up_run.started_by, up_run.run_key[:9]) == (
        "STAND_IN",
        "SUCCESS",
        "ops",
        "stand-in:",
    )
    assert two.task_runs(up_run.pipeline_run_id)["u"].rows_written == 9
    new_run = [i for i in two.rows(t.aud_run_interventions) if i.action == "NEW_RUN"]
    assert [(i.pipeline_run_id, i.to_status, i.reason, i.requested_by) for i in new_run] == [
        (up_run.pipeline_run_id, "SUCCESS", "loaded by the vendor", "ops")
    ]
    assert two.cli("run", "--pipeline_code", "down").returncode == 0
    assert two.rows(t.aud_gate_decisions)[0].selected_pipeline_run_id == up_run.pipeline_run_id
    refused = two.cli(
        "mark", "--pipeline_code", "down", "--new-run", "--status", "SUCCESS", "--reason", "x", "--run-id", "1"
    )
    assert refused.returncode == 2
