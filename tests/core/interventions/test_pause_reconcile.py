"""`pause`/`resume` around live and future runs, and `reconcile` after a supervisor was killed."""

from __future__ import annotations

from etl_craft.execution.processes.identity import is_alive
from tests.core.interventions.conftest import ACTOR, OTHER, Ops, finished


def test_pause_during_a_live_run_lets_the_running_task_finish_and_starts_nothing_else(ops: Ops) -> None:
    ops.define("p", {"a": "gate.py", "b": "quick.py"}, (("b", "a", "SUCCESS"),))
    runner = ops.start("run", "--pipeline_code", "p")
    ops.running_attempt("a")

    paused = ops.cli("pause", "--pipeline_code", "p", "--reason", "warehouse maintenance")
    assert paused.returncode == 0, str(paused)
    assert paused.stdout.startswith("p: paused by alice@ops: warehouse maintenance")
    assert "run(s) in progress (1): their running tasks finish, then they wait" in paused.stdout
    ops.release_gate()

    ended = finished(runner)
    assert ended.returncode == 22, str(ended)
    assert "the pipeline is paused" in ended.stdout
    run = ops.run(1)
    assert (run["status"], run["owner_id"], run["end_date"]) == ("IN-PROGRESS", None, None)
    assert ops.statuses(1) == {"a": "SUCCESS"}
    assert ops.pauses() == [
        {
            "pipeline": "p",
            "paused_by": ACTOR,
            "paused_by_kind": "HUMAN",
            "reason": "warehouse maintenance",
            "resumed_at": None,
            "resumed_by": None,
            "resumed_by_kind": None,
            "resume_reason": None,
        }
    ]

    while_paused = ops.cli("run", "--pipeline_code", "p")
    assert while_paused.returncode == 0, str(while_paused)
    assert "p is paused by alice@ops" in while_paused.stdout
    assert ops.statuses(1) == {"a": "SUCCESS"}

    resumed = ops.cli("resume", "--pipeline_code", "p", "--reason", "maintenance over", actor=OTHER)
    assert resumed.returncode == 0, str(resumed)
    assert "it was paused by alice@ops since" in resumed.stdout
    assert "unfinished run(s) (1): etl-craft run --pipeline_code p resumes them" in resumed.stdout
    [pause] = ops.pauses()
    assert pause["resumed_at"] is not None
    assert (pause["resumed_by"], pause["resumed_by_kind"], pause["resume_reason"]) == (
        OTHER,
        "HUMAN",
        "maintenance over",
    )

    finish = ops.cli("run", "--pipeline_code", "p")
    assert finish.returncode == 0, str(finish)
    assert ops.statuses(1) == {"a": "SUCCESS", "b": "SUCCESS"}
    assert ops.run(1)["status"] == "SUCCESS"
    assert [
        (a["command"], a["actor"], a["pipeline"], a["pipeline_run_id"]) for a in ops.actions("pause", "resume")
    ] == [
        ("pause", ACTOR, "p", None),
        ("resume", OTHER, "p", None),
    ]


def test_pause_before_a_run_and_refused_repeats(ops: Ops) -> None:
    ops.define("p", {"a": "quick.py"})
    paused = ops.cli("pause", "--pipeline_code", "p", "--reason", "source migration", "--format", "json")
    assert paused.returncode == 0, str(paused)
    doc = paused.json()
    assert (doc["schema"], doc["status"], doc["pipeline"], doc["run"]) == (
        "etl-craft/operation/1",
        "SUCCESS",
        "p",
        None,
    )

    run = ops.cli("run", "--pipeline_code", "p")
    assert run.returncode == 0, str(run)
    assert "p is paused by alice@ops" in run.stdout
    assert "nothing was started" in run.stdout
    assert ops.runs() == []

    twice = ops.cli("pause", "--pipeline_code", "p", "--reason", "again", actor=OTHER)
    assert twice.returncode == 9
    assert "it is already paused by alice@ops since" in twice.stderr
    assert ops.cli("resume", "--pipeline_code", "p", "--reason", "done").returncode == 0
    not_paused = ops.cli("resume", "--pipeline_code", "p", "--reason", "done again")
    assert not_paused.returncode == 9
    assert "it is not paused" in not_paused.stderr
    blank = ops.cli("pause", "--pipeline_code", "p", "--reason", " ")
    assert blank.returncode == 2
    assert [(p["reason"], p["resume_reason"]) for p in ops.pauses()] == [("source migration", "done")]
    assert [a["command"] for a in ops.actions("pause", "resume")] == ["pause", "resume"]

    assert ops.cli("run", "--pipeline_code", "p").returncode == 0
    assert [r["status"] for r in ops.runs()] == ["SUCCESS"]


def test_reconcile_after_kill_9_fences_the_attempt_and_releases_the_run(ops: Ops) -> None:
    ops.define("p", {"a": "slow.py", "b": "quick.py"}, (("b", "a", "SUCCESS"),))
    runner = ops.start("run", "--pipeline_code", "p")
    attempt = ops.running_attempt("a")
    dead_owner = ops.run(1)["owner_id"]
    ops.kill9(runner)

    done = ops.cli("reconcile", "--pipeline_code", "p", "--format", "json")

    assert done.returncode == 0, str(done)
    doc = done.json()
    assert doc["schema"] == "etl-craft/reconciliation/1"
    [lost] = doc["lost"]
    assert lost | {"message": ""} == {
        "attempt_id": attempt["attempt_id"],
        "task_run_id": ops.task_run_id(1, "a"),
        "pipeline_run_id": 1,
        "pipeline_code": "p",
        "task_code": "a",
        "owner_id": dead_owner,
        "message": "",
        "stopped_process": True,
    }
    # Killed moments ago, its lease still runs: the message says the process is gone, not when a lease
    # that has not expired yet "stopped".
    host, pid = dead_owner.split(":")[:2]
    assert (
        lost["message"] == f"attempt 1 was lost: owner {dead_owner} is gone: its process {pid} no longer runs on {host}"
    )
    assert doc["released_runs"] == [{"pipeline_run_id": 1, "pipeline_code": "p"}]
    assert doc["live"] == 0
    ops.wait_gone(attempt["pid"], attempt["process_start"])
    assert [(a["status"], a["error_message"]) for a in ops.attempts(1)] == [("LOST", lost["message"])]
    assert ops.task_runs(1)["a"]["status"] == "FAILED"
    assert ops.task_runs(1)["a"]["error_message"] == lost["message"]
    run = ops.run(1)
    assert (run["status"], run["owner_id"]) == ("IN-PROGRESS", None)

    quiet = ops.cli("reconcile")
    assert quiet.returncode == 0, str(quiet)
    assert quiet.stdout.splitlines() == [
        "reconcile every pipeline: 0 attempt(s) lost, 0 run(s) released, 0 attempt(s) still held by live owners"
    ]
    assert [(a["command"], a["pipeline"], a["arguments"]) for a in ops.actions("reconcile")] == [
        ("reconcile", "p", {"pipeline_code": "p", "task_code": None}),
        ("reconcile", None, {"pipeline_code": None, "task_code": None}),
    ]
    usage = ops.cli("reconcile", "--task_code", "a")
    assert usage.returncode == 2
    assert not is_alive(attempt["pid"], attempt["process_start"])


def test_interventions_are_refused_in_remote_mode(ops: Ops) -> None:
    ops.define("p", {"a": "quick.py"})
    ops.create_run("p")
    ops.project.orchestration = "  Mode: remote\n"
    ops.project.write_config()
    for command in (
        ("mark", "--pipeline_code", "p", "--status", "FAILED", "--reason", "r"),
        ("cancel", "--pipeline_code", "p", "--reason", "r"),
        ("reopen", "--pipeline_code", "p", "--reason", "r", "--run-id", "1"),
        ("pause", "--pipeline_code", "p", "--reason", "r"),
        ("resume", "--pipeline_code", "p", "--reason", "r"),
    ):
        done = ops.cli(*command)
        assert done.returncode == 10, str(done)
        assert f"etl-craft {command[0]} in remote mode" in done.stderr
    assert ops.run(1)["status"] == "IN-PROGRESS"
    assert (ops.interventions(), ops.pauses(), ops.actions(*("mark", "cancel", "reopen", "pause", "resume"))) == (
        [],
        [],
        [],
    )
    assert ops.cli("reconcile", "--pipeline_code", "p").returncode == 0
