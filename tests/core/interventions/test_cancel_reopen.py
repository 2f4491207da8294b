"""`cancel` of live and orphaned runs, and `reopen` of ended runs, through the real CLI."""

from __future__ import annotations

from etl_craft.execution.processes.identity import descendants, is_alive, process_start
from tests.core.interventions.conftest import ACTOR, Ops, finished


def test_cancel_stops_a_live_run_and_its_task_processes(ops: Ops) -> None:
    ops.define("p", {"a": "slow.py", "b": "quick.py", "c": "slow.py"}, (("b", "a", "SUCCESS"),))
    runner = ops.start("run", "--pipeline_code", "p")
    first, second = ops.running_attempt("a"), ops.running_attempt("c")
    owner = ops.run(1)["owner_id"]
    tree = {pid: process_start(pid) for pid in descendants(runner.pid)}  # its fork server and task processes
    assert {first["pid"], second["pid"]} <= set(tree)

    done = ops.cli("cancel", "--pipeline_code", "p", "--reason", "wrong day")

    assert done.returncode == 0, str(done)
    assert done.stdout.startswith(
        "p: pipeline_run_id=1 CANCELLED — cancelled by alice@ops: wrong day (was IN-PROGRESS)"
    )
    assert "2 attempt(s) cancelled: a (attempt 1), c (attempt 1)" in done.stdout
    ended = finished(runner)
    assert ended.returncode == 1, str(ended)
    assert "pipeline_run_id=1 CANCELLED" in ended.stdout
    for attempt in (first, second):
        assert not is_alive(attempt["pid"], attempt["process_start"])
    ops.wait_for("the run's processes to end", lambda: not any(is_alive(pid, start) for pid, start in tree.items()))
    run = ops.run(1)
    assert (run["status"], run["owner_id"], run["ended_by"], run["ended_by_kind"]) == (
        "CANCELLED",
        None,
        ACTOR,
        "HUMAN",
    )
    assert run["end_date"] is not None
    assert ops.task_runs(1) == {
        code: {
            "task_run_id": ops.task_run_id(1, code),
            "status": "CANCELLED",
            "attempt_count": 1,
            "error_message": "cancelled by alice@ops: wrong day",
            "target_count": None,
            "rows_written": None,
        }
        for code in ("a", "c")
    }
    assert [(a["task"], a["status"], a["owner_id"], a["error_message"]) for a in ops.attempts(1)] == [
        ("a", "CANCELLED", owner, "cancelled by alice@ops: wrong day"),
        ("c", "CANCELLED", owner, "cancelled by alice@ops: wrong day"),
    ]
    assert ops.interventions() == [
        {
            "pipeline_run_id": 1,
            "task": None,
            "action": "CANCEL",
            "from_status": "IN-PROGRESS",
            "to_status": "CANCELLED",
            "target_count": None,
            "previous_message": None,
            "reason": "wrong day",
            "requested_by": ACTOR,
            "requested_by_kind": "HUMAN",
        }
    ]
    assert ops.actions("cancel") == [
        {
            "command": "cancel",
            "actor": ACTOR,
            "actor_kind": "HUMAN",
            "pipeline": "p",
            "pipeline_run_id": 1,
            "task": None,
            "outcome": "REQUESTED",
            "exit_code": None,
            "arguments": {"pipeline_code": "p", "reason": "wrong day", "run_id": None, "run_key": None},
        }
    ]

    again = ops.cli("cancel", "--pipeline_code", "p", "--reason", "again", "--run-id", "1")
    assert again.returncode == 9
    assert "it ended CANCELLED" in again.stderr
    assert len(ops.interventions()) == 1


def test_cancel_stops_the_task_process_of_a_killed_supervisor(ops: Ops) -> None:
    ops.define("p", {"a": "slow.py"})
    runner = ops.start("run", "--pipeline_code", "p")
    attempt = ops.running_attempt("a")
    ops.kill9(runner)
    assert is_alive(attempt["pid"], attempt["process_start"])

    done = ops.cli("cancel", "--pipeline_code", "p", "--reason", "its supervisor died", "--format", "json")

    assert done.returncode == 0, str(done)
    doc = done.json()
    assert (doc["schema"], doc["status"], doc["run"]["status"]) == ("etl-craft/operation/1", "SUCCESS", "CANCELLED")
    assert "stopped 1 task process(es) whose supervisor is gone" in doc["message"]
    ops.wait_gone(attempt["pid"], attempt["process_start"])
    assert [(a["status"], a["error_message"]) for a in ops.attempts(1)] == [
        ("CANCELLED", "cancelled by alice@ops: its supervisor died")
    ]
    assert ops.statuses(1) == {"a": "CANCELLED"}
    assert (ops.run(1)["status"], ops.run(1)["owner_id"]) == ("CANCELLED", None)


def test_reopen_an_ended_run(ops: Ops) -> None:
    ops.define("p", {"a": "fail.py", "b": "quick.py"}, (("b", "a", "SUCCESS"),))
    assert ops.cli("run", "--pipeline_code", "p").returncode == 1
    skipped = ops.task_runs(1)["b"]

    unnamed = ops.cli("reopen", "--pipeline_code", "p", "--reason", "retry the load")
    assert unnamed.returncode == 2
    assert "recent runs of p: run 1 FAILED" in unnamed.stderr

    done = ops.cli("reopen", "--pipeline_code", "p", "--reason", "retry the load", "--run-id", "1", "--format", "json")

    assert done.returncode == 0, str(done)
    doc = done.json()
    assert (doc["status"], doc["run"]["status"], doc["run"]["repair_pending"]) == ("SUCCESS", "IN-PROGRESS", True)
    assert "reset to run again: b" in doc["message"]
    run = ops.run(1)
    assert (run["status"], run["ended_by"], run["end_date"], run["repair_pending"]) == ("IN-PROGRESS", None, None, "Y")
    assert set(ops.task_runs(1)) == {"a"}
    common = {"pipeline_run_id": 1, "reason": "retry the load", "requested_by": ACTOR, "requested_by_kind": "HUMAN"}
    assert ops.interventions() == [
        common | {"task": None, "action": "REOPEN", "from_status": "FAILED", "to_status": "IN-PROGRESS",
                  "target_count": None, "previous_message": None},
        common | {"task": "b", "action": "RESET", "from_status": "SKIPPED", "to_status": None,
                  "target_count": None, "previous_message": skipped["error_message"]},
    ]  # fmt: skip
    assert [(a["command"], a["pipeline_run_id"]) for a in ops.actions("reopen")] == [("reopen", 1)]

    again = ops.cli("reopen", "--pipeline_code", "p", "--reason", "r", "--run-id", "1")
    assert again.returncode == 9
    assert "it is IN-PROGRESS" in again.stderr

    # The repair fails again: the run ends FAILED and stays a pending repair.
    assert ops.cli("run", "--pipeline_code", "p").returncode == 1
    run = ops.run(1)
    assert (run["status"], run["repair_pending"], run["output_revision"]) == ("FAILED", "Y", 1)
    assert ops.statuses(1) == {"a": "FAILED", "b": "SKIPPED"}

    # Another unfinished run of the pipeline blocks a reopen.
    other = ops.create_run("p")
    blocked = ops.cli("reopen", "--pipeline_code", "p", "--reason", "r", "--run-id", "1")
    assert blocked.returncode == 9
    assert f"another run of the pipeline is unfinished: run {other}" in blocked.stderr
    assert ops.run(1)["status"] == "FAILED"
    assert len(ops.actions("reopen")) == 1
