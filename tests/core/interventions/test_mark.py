"""`mark`: a task's status under a run, or a run's own status, set by an operator through the real CLI."""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind, RunStatus, TriggerKind
from etl_craft.engine import transitions
from etl_craft.engine.schema import tables as t
from etl_craft.execution.processes.identity import is_alive
from tests.core.interventions.conftest import ACTOR, Ops, finished


def _failed_run(ops: Ops) -> int:
    """p: a fails; b (needs a) and c (needs b) are skipped by the engine; d succeeds. The run ends FAILED."""
    ops.define(
        "p",
        {"a": "fail.py", "b": "quick.py", "c": "quick.py", "d": "quick.py"},
        (("b", "a", "SUCCESS"), ("c", "b", "SUCCESS")),
    )
    done = ops.cli("run", "--pipeline_code", "p")
    assert done.returncode == 1, str(done)
    assert ops.statuses(1) == {"a": "FAILED", "b": "SKIPPED", "c": "SKIPPED", "d": "SUCCESS"}
    return 1


def test_mark_task_of_an_ended_run_reopens_it_and_resets_what_the_engine_skipped(ops: Ops) -> None:
    run_id = _failed_run(ops)
    before = ops.task_runs(run_id)

    done = ops.cli(
        "mark", "--pipeline_code", "p", "--task_code", "a", "--status", "SUCCESS",
        "--rows", "5", "--reason", "loaded by hand", "--run-id", str(run_id), "--format", "json",
    )  # fmt: skip

    assert done.returncode == 0, str(done)
    doc = done.json()
    assert doc["schema"] == "etl-craft/operation/1"
    assert doc["status"] == "SUCCESS"
    assert doc["run"]["status"] == "IN-PROGRESS"
    assert doc["task"]["status"] == "SUCCESS"
    assert "reset to run again: b, c" in doc["message"]
    assert "etl-craft run --pipeline_code p resumes the run" in doc["message"]
    run = ops.run(run_id)
    assert (run["status"], run["owner_id"], run["ended_by"], run["end_date"]) == ("IN-PROGRESS", None, None, None)
    assert (run["repair_pending"], run["output_revision"]) == ("Y", 1)
    rows = ops.task_runs(run_id)
    assert set(rows) == {"a", "d"}  # b and c are not run yet again
    assert rows["a"] | {"task_run_id": 0} == {
        "task_run_id": 0,
        "status": "SUCCESS",
        "attempt_count": 1,
        "error_message": "marked SUCCESS by alice@ops: loaded by hand",
        "target_count": 5,
        "rows_written": 5,
    }
    assert rows["d"] == before["d"]
    # The failed attempt stays as evidence; only the summary changed.
    assert [(a["task"], a["status"]) for a in ops.attempts(run_id)] == [("a", "FAILED"), ("d", "SUCCESS")]
    common = {
        "pipeline_run_id": run_id,
        "reason": "loaded by hand",
        "requested_by": ACTOR,
        "requested_by_kind": "HUMAN",
    }
    assert ops.interventions() == [
        common | {"task": "a", "action": "REOPEN", "from_status": "FAILED", "to_status": "IN-PROGRESS",
                  "target_count": None, "previous_message": None},
        common | {"task": "a", "action": "MARK", "from_status": "FAILED", "to_status": "SUCCESS",
                  "target_count": 5, "previous_message": before["a"]["error_message"]},
        common | {"task": "b", "action": "RESET", "from_status": "SKIPPED", "to_status": None,
                  "target_count": None, "previous_message": before["b"]["error_message"]},
        common | {"task": "c", "action": "RESET", "from_status": "SKIPPED", "to_status": None,
                  "target_count": None, "previous_message": before["c"]["error_message"]},
    ]  # fmt: skip
    assert ops.actions("mark") == [
        {
            "command": "mark",
            "actor": ACTOR,
            "actor_kind": "HUMAN",
            "pipeline": "p",
            "pipeline_run_id": run_id,
            "task": "a",
            "outcome": "REQUESTED",
            "exit_code": None,
            "arguments": {
                "pipeline_code": "p",
                "status": "SUCCESS",
                "reason": "loaded by hand",
                "task_code": "a",
                "rows": 5,
                "stale": False,
                "run_id": run_id,
                "run_key": None,
                "new_run": False,
            },
        }
    ]

    # The repaired run resumes: what the failure skipped runs now, and the repair publishes revision 2.
    resumed = ops.cli("run", "--pipeline_code", "p")
    assert resumed.returncode == 0, str(resumed)
    assert ops.statuses(run_id) == {"a": "SUCCESS", "b": "SUCCESS", "c": "SUCCESS", "d": "SUCCESS"}
    run = ops.run(run_id)
    assert (run["status"], run["repair_pending"], run["output_revision"]) == ("SUCCESS", "N", 2)


def test_mark_success_needs_rows_for_has_data_dependents(ops: Ops) -> None:
    ops.define("p", {"a": "fail.py", "b": "quick.py"}, (("b", "a", "HAS_DATA"),))
    assert ops.cli("run", "--pipeline_code", "p").returncode == 1

    without_rows = ops.cli(
        "mark", "--pipeline_code", "p", "--task_code", "a", "--status", "SUCCESS", "--reason", "r", "--run-id", "1"
    )
    assert without_rows.returncode == 0, str(without_rows)
    assert "without --rows its HAS_DATA dependents see no data: b" in without_rows.stdout
    assert ops.cli("run", "--pipeline_code", "p").returncode == 0
    assert ops.statuses(1) == {"a": "SUCCESS", "b": "SKIPPED"}
    assert ops.task_runs(1)["a"]["rows_written"] is None

    assert ops.cli("run", "--pipeline_code", "p").returncode == 1  # run 2: a fails again
    with_rows = ops.cli(
        "mark", "--pipeline_code", "p", "--task_code", "a", "--status", "SUCCESS", "--rows", "3",
        "--reason", "r", "--run-id", "2",
    )  # fmt: skip
    assert with_rows.returncode == 0, str(with_rows)
    assert "HAS_DATA" not in with_rows.stdout
    assert ops.cli("run", "--pipeline_code", "p").returncode == 0
    assert ops.statuses(2) == {"a": "SUCCESS", "b": "SUCCESS"}
    assert ops.run(2)["status"] == "SUCCESS"


def test_mark_of_the_last_open_task_ends_the_reopened_run_again(ops: Ops) -> None:
    ops.define("p", {"a": "fail.py", "d": "quick.py"})
    assert ops.cli("run", "--pipeline_code", "p").returncode == 1

    done = ops.cli(
        "mark", "--pipeline_code", "p", "--task_code", "a", "--status", "SKIPPED", "--reason", "not needed",
        "--run-id", "1",
    )  # fmt: skip

    assert done.returncode == 0, str(done)
    assert done.stdout.startswith("p: pipeline_run_id=1 SUCCESS — a marked SKIPPED by alice@ops: not needed")
    assert "the run ended SUCCESS again" in done.stdout
    run = ops.run(1)
    assert (run["status"], run["repair_pending"], run["output_revision"], run["ended_by_kind"]) == (
        "SUCCESS",
        "N",
        2,
        "SYSTEM",
    )
    assert [(i["action"], i["from_status"], i["to_status"]) for i in ops.interventions()] == [
        ("REOPEN", "FAILED", "IN-PROGRESS"),
        ("MARK", "FAILED", "SKIPPED"),
    ]


def test_mark_run_ends_it_with_that_status_and_leaves_its_tasks(ops: Ops) -> None:
    ops.define("p", {"a": "fail.py", "d": "quick.py"})
    assert ops.cli("run", "--pipeline_code", "p").returncode == 1
    tasks_before = ops.task_runs(1)

    done = ops.cli(
        "mark", "--pipeline_code", "p", "--status", "SUCCESS", "--reason", "a is optional", "--run-id", "1",
        "--format", "json",
    )  # fmt: skip

    assert done.returncode == 0, str(done)
    assert (done.json()["status"], done.json()["run"]["status"], done.json()["task"]) == ("SUCCESS", "SUCCESS", None)
    run = ops.run(1)
    assert (run["status"], run["ended_by"], run["ended_by_kind"]) == ("SUCCESS", ACTOR, "HUMAN")
    assert (run["output_revision"], run["repair_pending"]) == (2, "N")  # an operator SUCCESS publishes a revision
    assert ops.task_runs(1) == tasks_before
    assert ops.interventions() == [
        {
            "pipeline_run_id": 1,
            "task": None,
            "action": "MARK",
            "from_status": "FAILED",
            "to_status": "SUCCESS",
            "target_count": None,
            "previous_message": None,
            "reason": "a is optional",
            "requested_by": ACTOR,
            "requested_by_kind": "HUMAN",
        }
    ]
    assert [(a["command"], a["pipeline_run_id"], a["task"]) for a in ops.actions("mark")] == [("mark", 1, None)]

    # An unfinished run, selected as the pipeline's only one: marking it FAILED is a SUCCESS operation.
    run_id = ops.create_run("p")
    failed = ops.cli("mark", "--pipeline_code", "p", "--status", "FAILED", "--reason", "abandoned", "--format", "json")
    assert failed.returncode == 0, str(failed)
    assert (failed.json()["status"], failed.json()["run"]["status"]) == ("SUCCESS", "FAILED")
    run = ops.run(run_id)
    assert (run["status"], run["output_revision"], run["ended_by"]) == ("FAILED", 1, ACTOR)
    assert ops.task_runs(run_id) == {}


def test_mark_refuses_a_blank_reason_an_ambiguous_run_and_a_missing_run(ops: Ops) -> None:
    ops.define("p", {"a": "quick.py"})
    blank = ops.cli("mark", "--pipeline_code", "p", "--status", "FAILED", "--reason", "  ")
    assert blank.returncode == 2
    assert "blank reason" in blank.stderr
    none = ops.cli("mark", "--pipeline_code", "p", "--status", "FAILED", "--reason", "r")
    assert none.returncode == 9
    assert "no unfinished run" in none.stderr
    ops.create_run("p")
    with acting_as(Actor(ACTOR, ActorKind.HUMAN)) as actor, ops.db.write() as conn:
        transitions.create_run(
            conn, pipeline_id=1, status=RunStatus.QUEUED, trigger_kind=TriggerKind.MANUAL, actor=actor, now=utc_now()
        )
    several = ops.cli("mark", "--pipeline_code", "p", "--task_code", "a", "--status", "FAILED", "--reason", "r")
    assert several.returncode == 9
    assert "2 unfinished runs: run 1" in several.stderr
    assert "run 2" in several.stderr
    unknown = ops.cli("mark", "--pipeline_code", "p", "--task_code", "zz", "--status", "FAILED", "--reason", "r")
    assert unknown.returncode == 4
    assert "did you mean" not in unknown.stderr or "zz" in unknown.stderr
    stale_run = ops.cli("mark", "--pipeline_code", "p", "--status", "FAILED", "--stale", "--reason", "r")
    assert stale_run.returncode == 2
    assert ops.interventions() == []
    assert ops.actions("mark") == []


def test_mark_refused_while_the_task_runs(ops: Ops) -> None:
    ops.define("p", {"a": "slow.py", "b": "quick.py"}, (("b", "a", "SUCCESS"),))
    runner = ops.start("run", "--pipeline_code", "p")
    attempt = ops.running_attempt("a")

    plain = ops.cli("mark", "--pipeline_code", "p", "--task_code", "a", "--status", "FAILED", "--reason", "r")
    assert plain.returncode == 9, str(plain)
    assert "it has a live attempt: a (attempt 1 RUNNING" in plain.stderr
    assert "add --stale" in plain.stderr
    stale = ops.cli(
        "mark", "--pipeline_code", "p", "--task_code", "a", "--status", "FAILED", "--stale", "--reason", "r"
    )
    assert stale.returncode == 9, str(stale)
    assert "a live lease holds it" in stale.stderr

    assert [(a["status"], a["owner_id"]) for a in ops.attempts()] == [("RUNNING", attempt["owner_id"])]
    assert ops.statuses(1) == {"a": "IN-PROGRESS"}
    assert ops.run(1)["status"] == "IN-PROGRESS"
    assert ops.interventions() == []
    assert ops.actions("mark") == []
    assert is_alive(attempt["pid"], attempt["process_start"])
    runner.terminate()
    assert finished(runner).returncode == 22


def test_b16_mark_run_refused_while_a_process_runs_it(ops: Ops) -> None:
    ops.define("p", {"a": "slow.py"})
    runner = ops.start("run", "--pipeline_code", "p")
    attempt = ops.running_attempt("a")
    owner = ops.run(1)["owner_id"]

    done = ops.cli("mark", "--pipeline_code", "p", "--status", "SUCCESS", "--reason", "looks done")

    assert done.returncode == 9, str(done)
    assert "task(s) running: a (attempt 1 RUNNING" in done.stderr
    assert "etl-craft cancel" in done.stderr
    run = ops.run(1)
    assert (run["status"], run["owner_id"], run["ended_by"], run["output_revision"]) == ("IN-PROGRESS", owner, None, 1)
    assert ops.statuses(1) == {"a": "IN-PROGRESS"}
    assert ops.interventions() == []
    assert ops.actions("mark") == []
    assert is_alive(attempt["pid"], attempt["process_start"])
    runner.terminate()
    finished(runner)


def test_mark_stale_after_the_process_was_killed(ops: Ops) -> None:
    ops.define("p", {"a": "slow.py", "b": "quick.py"}, (("b", "a", "SUCCESS"),))
    run_id = ops.create_run("p")
    single = ops.start("run", "--pipeline_code", "p", "--task_code", "a")
    attempt = ops.running_attempt("a")
    ops.kill9(single)
    assert is_alive(attempt["pid"], attempt["process_start"])  # the task process outlives its supervisor

    refused = ops.cli("mark", "--pipeline_code", "p", "--task_code", "a", "--status", "FAILED", "--reason", "gone")
    assert refused.returncode == 9, str(refused)
    done = ops.cli(
        "mark", "--pipeline_code", "p", "--task_code", "a", "--status", "FAILED", "--stale",
        "--reason", "its process was killed",
    )  # fmt: skip

    assert done.returncode == 0, str(done)
    assert "reconciled first: attempt 1 was lost" in done.stdout
    ops.wait_gone(attempt["pid"], attempt["process_start"])
    [lost] = ops.attempts(run_id)
    assert lost["status"] == "LOST"
    assert lost["error_message"].startswith(f"attempt 1 was lost: owner {attempt['owner_id']} is gone: its process ")
    assert ops.task_runs(run_id)["a"] | {"task_run_id": 0} == {
        "task_run_id": 0,
        "status": "FAILED",
        "attempt_count": 1,
        "error_message": "marked FAILED by alice@ops: stale: its process was killed",
        "target_count": None,
        "rows_written": None,
    }
    assert ops.run(run_id)["status"] == "IN-PROGRESS"
    assert ops.interventions() == [
        {
            "pipeline_run_id": run_id,
            "task": "a",
            "action": "MARK",
            "from_status": "FAILED",
            "to_status": "FAILED",
            "target_count": None,
            "previous_message": lost["error_message"],
            "reason": "stale: its process was killed",
            "requested_by": ACTOR,
            "requested_by_kind": "HUMAN",
        }
    ]
    assert [(a["command"], a["task"], a["arguments"]["stale"]) for a in ops.actions("mark")] == [("mark", "a", True)]


def test_b26_stale_rows_can_be_released(ops: Ops) -> None:
    """A whole run's supervisor killed mid-task leaves a running attempt; mark --stale releases it and
    the next run finishes the pipeline."""
    ops.define("p", {"a": "slow.py", "b": "quick.py"}, (("b", "a", "SUCCESS"),))
    runner = ops.start("run", "--pipeline_code", "p")
    attempt = ops.running_attempt("a")
    ops.kill9(runner)

    done = ops.cli(
        "mark", "--pipeline_code", "p", "--task_code", "a", "--status", "SUCCESS", "--rows", "1", "--stale",
        "--reason", "loaded by hand after the crash",
    )  # fmt: skip

    assert done.returncode == 0, str(done)
    ops.wait_gone(attempt["pid"], attempt["process_start"])
    assert [a["status"] for a in ops.attempts(1)] == ["LOST"]
    assert ops.statuses(1) == {"a": "SUCCESS"}
    resumed = ops.cli("run", "--pipeline_code", "p")
    assert resumed.returncode == 0, str(resumed)
    assert ops.statuses(1) == {"a": "SUCCESS", "b": "SUCCESS"}
    run = ops.run(1)
    assert (run["status"], run["owner_id"]) == ("SUCCESS", None)
    assert [a["status"] for a in ops.attempts(1)] == ["LOST", "SUCCESS"]


def test_b10_mark_keeps_consumed_skipped_rows(ops: Ops) -> None:
    ops.define("p", {"a": "fail.py", "b": "quick.py"}, (("b", "a", "SUCCESS"),))
    ops.define("q", {"x": "quick.py"})
    ops.migrate(
        "INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_PIPELINE_ID, DEPENDS_ON_TASK_ID, "
        "DEPENDENCY_TYPE)\n"
        "SELECT q.PIPELINE_ID, x.TASK_ID, p.PIPELINE_ID, b.TASK_ID, 'ALWAYS'\n"
        "FROM CFG_PIPELINES q JOIN CFG_TASKS x ON x.PIPELINE_ID = q.PIPELINE_ID AND x.TASK_CODE = 'x'\n"
        "JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = 'p' AND p.ACTIVE_FLAG = 'Y'\n"
        "JOIN CFG_TASKS b ON b.PIPELINE_ID = p.PIPELINE_ID AND b.TASK_CODE = 'b'\n"
        "WHERE q.PIPELINE_CODE = 'q' AND q.ACTIVE_FLAG = 'Y';",
        "cross",
    )
    assert ops.cli("run", "--pipeline_code", "p").returncode == 1
    skipped = ops.task_runs(1)["b"]
    # q's run consumed p's skipped b through its ALWAYS edge.
    with acting_as(Actor(ACTOR, ActorKind.SYSTEM)) as actor, ops.db.write() as conn:
        q_id = conn.execute(sa.select(t.cfg_pipelines.c.pipeline_id).where(t.cfg_pipelines.c.pipeline_code == "q"))
        q_pipeline = q_id.scalar_one()
        q_run = transitions.create_run(
            conn,
            pipeline_id=q_pipeline,
            status=RunStatus.SUCCESS,
            trigger_kind=TriggerKind.MANUAL,
            actor=actor,
            now=utc_now(),
        )
        edge = conn.execute(
            sa.select(t.cfg_task_dependency.c.task_dependency_id, t.cfg_task_dependency.c.task_id).where(
                t.cfg_task_dependency.c.pipeline_id == q_pipeline
            )
        ).one()
        conn.execute(
            t.aud_dependency_consumption.insert().values(
                task_dependency_id=edge.task_dependency_id,
                pipeline_id=q_pipeline,
                pipeline_run_id=q_run,
                task_id=edge.task_id,
                depends_on_pipeline_id=1,
                consumed_pipeline_run_id=1,
                consumed_task_run_id=skipped["task_run_id"],
            )
        )

    done = ops.cli(
        "mark", "--pipeline_code", "p", "--task_code", "a", "--status", "SUCCESS", "--reason", "fixed", "--run-id", "1"
    )

    assert done.returncode == 0, str(done)
    assert f"b: kept SKIPPED, consumed by q run {q_run}" in done.stdout
    assert ops.task_runs(1)["b"] == skipped
    assert [(i["task"], i["action"]) for i in ops.interventions()] == [("a", "REOPEN"), ("a", "MARK")]
    assert ops.run(1)["status"] == "SUCCESS"  # nothing is left to run, so the repaired run ended again
