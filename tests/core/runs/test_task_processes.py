"""Task processes: retries, timeouts, signals, lingering threads and ready-set dispatch (real processes)."""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

from etl_craft.core.actor import Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind
from etl_craft.engine import transitions as tr
from etl_craft.engine.schema import tables as t
from etl_craft.execution.processes.identity import descendants
from tests.fixtures.harness import Harness, TaskSpec, process_alive
from tests.fixtures.seed import in_progress_run


def test_w7_a_task_failing_twice_then_succeeding_is_retried(harness: Harness) -> None:
    counter = harness.root / "counter"
    harness.pipeline(
        "p",
        [
            TaskSpec(
                "flaky",
                {"fail_times": 2, "counter": str(counter)},
                parameters={"RETRIES": "2", "RETRY_DELAY_SECONDS": "1", "RETRY_BACKOFF": "2"},
            )
        ],
    )
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 0, str(result)
    attempts = harness.attempts("flaky")
    assert [(a.attempt_number, a.status, a.retryable) for a in attempts] == [
        (1, "FAILED", True),
        (2, "FAILED", True),
        (3, "SUCCESS", True),
    ]
    assert attempts[0].not_before is None
    # Each retry waits its delay (1 s, then 1 s x 2) after the failure it follows.
    assert (attempts[1].not_before - attempts[0].ended_at).total_seconds() >= 1
    assert (attempts[2].not_before - attempts[1].ended_at).total_seconds() >= 2
    assert all(a.claimed_at >= a.not_before for a in attempts[1:])
    task_run = harness.task_runs()["flaky"]
    assert (task_run.status, task_run.attempt_count, task_run.error_message) == ("SUCCESS", 3, None)
    assert "attempt 2 queued at" in result.stdout


def test_an_error_a_retry_cannot_fix_is_not_retried(harness: Harness) -> None:
    harness.pipeline(
        "p", [TaskSpec("bad", parameters={"SCRIPT_NAME": "missing.py", "RETRIES": "3", "RETRY_DELAY_SECONDS": "0"})]
    )
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 1
    attempts = harness.attempts("bad")
    assert [(a.status, a.retryable) for a in attempts] == [("FAILED", False)]
    assert "SCRIPT_NAME='missing.py'" in attempts[0].error_message


def test_b2_a_setup_error_after_the_claim_leaves_the_attempt_failed(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", parameters={"TASK_TIMEOUT_SECONDS": "soon"})])
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 1
    attempt = harness.attempts("a")[0]
    assert attempt.status == "FAILED" and not attempt.retryable
    assert attempt.error_message.startswith(
        "could not start the task process: task a: parameter TASK_TIMEOUT_SECONDS: found 'soon'"
    )
    assert harness.task_runs()["a"].status == "FAILED"


def test_b2_an_unwritable_log_folder_leaves_the_attempt_failed(harness: Harness) -> None:
    (harness.root / "logs").write_text("a file where the log folder should be")
    harness.pipeline("p", [TaskSpec("a")])
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 1
    attempt = harness.attempts("a")[0]
    assert attempt.status == "FAILED"
    assert attempt.error_message.startswith("could not start the task process: ")
    assert "logs" in attempt.error_message


def test_b54_a_timed_out_script_is_stopped_and_its_output_kept(harness: Harness) -> None:
    lines = [f"line {n}" for n in range(1, 6)]
    harness.pipeline("p", [TaskSpec("slow", {"print": lines, "sleep": 120}, parameters={"TASK_TIMEOUT_SECONDS": "3"})])
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 1
    attempt = harness.attempts("slow")[0]
    assert attempt.status == "TIMED_OUT"
    assert attempt.error_message == "timed out after 3 s (TASK_TIMEOUT_SECONDS); the task process was stopped"
    assert "p.slow: attempt 1 TIMED_OUT after 3 s (TASK_TIMEOUT_SECONDS); stopping its task process" in (
        result.stdout.splitlines()
    )
    assert harness.task_runs()["slow"].status == "FAILED"
    log = Path(attempt.log_path).read_text()
    assert all(line in log for line in lines)
    assert not process_alive(attempt.pid)


def test_b53_a_lingering_thread_does_not_hold_the_task(harness: Harness) -> None:
    marker = harness.root / "thread-finished"
    harness.pipeline("p", [TaskSpec("a", {"linger": 60, "linger_marker": str(marker)})])
    result = harness.cli("run", "--pipeline_code", "p", timeout=50)
    assert result.returncode == 0, str(result)
    attempt = harness.attempts("a")[0]
    assert attempt.status == "SUCCESS"
    assert not process_alive(attempt.pid) and not marker.exists()
    assert "threads still running after the outcome was recorded" in Path(attempt.log_path).read_text()


def test_w2_a_long_task_does_not_delay_an_independent_ready_task(harness: Harness) -> None:
    harness.pipeline(
        "p",
        [TaskSpec("long", {"sleep": 8}), TaskSpec("quick"), TaskSpec("after_quick")],
        [("after_quick", "quick", "SUCCESS")],
    )
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    ended = {a.task_code: a for a in harness.attempts()}
    assert ended["after_quick"].ended_at < ended["long"].ended_at
    assert ended["after_quick"].started_at < ended["long"].ended_at


def test_max_parallel_tasks_bounds_how_many_run_at_once(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: local\n  Max_parallel_tasks: 2\n"
    harness.project.write_config()
    harness.pipeline("p", [TaskSpec(f"t{n}", {"sleep": 1}) for n in range(5)])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    spans = [(a.started_at, a.ended_at) for a in harness.attempts()]
    for start, _end in spans:
        running = sum(1 for s, e in spans if s <= start < e)
        assert running <= 2


def test_a_pipelines_max_parallel_tasks_replaces_the_orchestration_default(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: local\n  Max_parallel_tasks: 4\n"
    harness.project.write_config()
    harness.pipeline("p", [TaskSpec(f"t{n}", {"sleep": 0.5}) for n in range(4)])
    harness.migrate("UPDATE CFG_PIPELINES SET MAX_PARALLEL_TASKS = 1 WHERE PIPELINE_CODE = 'p';\n")
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    attempts = harness.attempts()
    assert sorted(a.status for a in attempts) == ["SUCCESS"] * 4
    spans = sorted((a.started_at, a.ended_at) for a in attempts)
    # One at a time: each attempt started after the one before it ended.
    assert all(later[0] >= earlier[1] for earlier, later in itertools.pairwise(spans))


def _wait_for_running_descendants(started, harness: Harness, task: str) -> list[int]:
    attempt = harness.wait_for_attempt(task, "RUNNING")
    harness.wait_until(lambda: attempt.pid in descendants(started.pid), 30, "the task process")
    return [attempt.pid, *descendants(attempt.pid)]


def _assert_stopped(result, harness: Harness, task: str, pids: list[int], signame: str) -> None:
    attempt = harness.attempts(task)[-1]
    assert attempt.status == "FAILED"
    assert attempt.error_message == f"stopped: the parent etl-craft run received {signame}"
    assert not any(process_alive(pid) for pid in pids)


def test_b3_sigterm_of_a_pipeline_run_stops_its_tasks(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("slow", {"sleep": 120})])
    started = harness.start("run", "--pipeline_code", "p")
    pids = _wait_for_running_descendants(started, harness, "slow")
    started.signal(signal.SIGTERM)
    result = started.wait(60)
    assert result.returncode == 22, str(result)
    _assert_stopped(result, harness, "slow", pids, "SIGTERM")
    run = harness.runs()[0]
    assert (run.status, run.owner_id) == ("IN-PROGRESS", None)
    # The next run resumes it and gives the stopped task a new attempt.
    harness.migrate("UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{}' WHERE PARAMETER_NAME = 'INPUT_PARAMS';\n")
    resumed = harness.cli("run", "--pipeline_code", "p")
    assert resumed.returncode == 0, str(resumed)
    assert [a.status for a in harness.attempts("slow")] == ["FAILED", "SUCCESS"]
    assert harness.runs()[0].status == "SUCCESS" and len(harness.runs()) == 1


def test_b3_sigterm_of_a_single_task_run_stops_it(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("slow", {"sleep": 120})])
    assert harness.cli("run", "--pipeline_code", "p", "--init-only").returncode == 0
    started = harness.start("run", "--pipeline_code", "p", "--task_code", "slow")
    pids = _wait_for_running_descendants(started, harness, "slow")
    started.signal(signal.SIGTERM)
    result = started.wait(60)
    assert result.returncode == 22, str(result)
    _assert_stopped(result, harness, "slow", pids, "SIGTERM")


def test_b3_sighup_of_a_rerun_stops_it(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("slow")])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    harness.migrate(
        "UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{\"sleep\": 120}' WHERE PARAMETER_NAME = 'INPUT_PARAMS';\n"
    )
    run_id = str(harness.runs()[0].pipeline_run_id)
    started = harness.start(
        "run", "--pipeline_code", "p", "--task_code", "slow", "--rerun", "--reason", "reload", "--run-id", run_id
    )
    pids = _wait_for_running_descendants(started, harness, "slow")
    started.signal(signal.SIGHUP)
    result = started.wait(60)
    assert result.returncode == 22, str(result)
    _assert_stopped(result, harness, "slow", pids, "SIGHUP")
    run = harness.runs()[0]
    assert run.status == "IN-PROGRESS" and run.repair_pending == "Y"


def test_b6_offsets_are_stored_only_when_the_attempt_succeeds(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"offset": 5})])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    assert [o.offset_value for o in harness.rows(t.aud_task_offset_tracker)] == ["5"]
    harness.migrate(
        "UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{\"offset\": 9}' WHERE PARAMETER_NAME = 'INPUT_PARAMS';\n"
    )
    # The child dies inside the transaction that records SUCCESS and the offset: neither is kept.
    result = harness.cli("run", "--pipeline_code", "p", ETL_CRAFT_FAULT="child_in_outcome_transaction:kill")
    assert result.returncode == 1, str(result)
    assert [o.offset_value for o in harness.rows(t.aud_task_offset_tracker)] == ["5"]
    last = harness.attempts("a")[-1]
    assert (
        last.status == "FAILED"
        and last.error_message == "the task process exited with status 137 before recording an outcome"
    )


def test_a_task_runs_with_the_parameters_of_the_graph_its_run_was_started_with(harness: Harness) -> None:
    old, new = harness.root / "old.txt", harness.root / "new.txt"
    harness.pipeline("p", [TaskSpec("a", {"sleep": 6}), TaskSpec("b", {"touch": str(old)})], [("b", "a", "SUCCESS")])
    started = harness.start("run", "--pipeline_code", "p")
    harness.wait_for_attempt("a", "RUNNING")
    # b's parameters change while a runs: this run's b keeps the ones its supervisor decided with.
    changed = json.dumps({"touch": str(new)}).replace("'", "''")
    harness.migrate(
        f"UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{changed}' WHERE PARAMETER_NAME = 'INPUT_PARAMS'"
        " AND TASK_ID = (SELECT TASK_ID FROM CFG_TASKS WHERE TASK_CODE = 'b');\n"
    )
    result = started.wait(120)
    assert result.returncode == 0, str(result)
    first = harness.runs()[0].pipeline_run_id
    assert old.read_text() == str(first) and not new.exists()
    # The next run is started with the changed parameters.
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    second = harness.runs()[-1].pipeline_run_id
    assert new.read_text() == str(second) and old.read_text() == str(first)
    assert [(a.task_code, a.status) for a in harness.attempts()] == [("a", "SUCCESS"), ("b", "SUCCESS")] * 2


def test_a_task_process_started_cold_reads_its_attempt_from_the_engine_db(harness: Harness) -> None:
    """`python -m etl_craft.execution.processes.task_process` is given only ids: it reads its attempt's subject,
    its parameters and the stored offset itself."""
    out = harness.root / "cold.txt"
    harness.pipeline("p", [TaskSpec("a", {"touch": str(out), "offset": 7, "rows": 3})])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0  # stores offset 7
    (task,) = harness.rows(t.cfg_tasks)
    owner, now = "host:1:boot:1:cold", utc_now()
    run_id = in_progress_run(harness.db, task.pipeline_id, owner, now, now + timedelta(minutes=5))
    with harness.db.write() as conn:
        attempt = tr.queue_and_claim_attempt(
            conn,
            pipeline_run_id=run_id,
            task_id=task.task_id,
            attempts_so_far=None,
            actor=Actor("tester", ActorKind.HUMAN),
            owner_id=owner,
            lease_until=now + timedelta(minutes=5),
            host="h",
            now=now,
        )
    log_path = harness.root / "cold.log"
    args = ["--attempt-id", str(attempt.attempt_id), "--owner-id", owner, "--config", str(harness.project.config_path)]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "etl_craft.execution.processes.task_process",
            *args,
            "--log-path",
            str(log_path),
            "--actor",
            "tester",
        ],
        env=harness.env(),
        cwd=harness.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr + log_path.read_text()
    row = harness.rows(t.aud_task_attempts, t.aud_task_attempts.c.attempt_id == attempt.attempt_id)[0]
    assert (row.status, row.rows_written, row.owner_id, row.pid is not None) == ("SUCCESS", 3, owner, True)
    assert harness.task_runs(run_id)["a"].status == "SUCCESS"
    assert out.read_text() == str(run_id)
    assert "attempt 1 of p.a started" in log_path.read_text()
    assert [o.offset_value for o in harness.rows(t.aud_task_offset_tracker)] == ["7"]


def test_a_supervisor_fencing_another_process_s_lost_attempt_names_the_task(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("slow", {"sleep": 60}), TaskSpec("other")])
    assert harness.cli("run", "--pipeline_code", "p", "--init-only").returncode == 0
    single = harness.start("run", "--pipeline_code", "p", "--task_code", "slow")
    attempt = harness.wait_for_attempt("slow", "RUNNING")
    whole = harness.start("run", "--pipeline_code", "p")
    harness.wait_until(lambda: harness.task_runs().get("other"), 60, "the whole run's supervisor to start")
    single.process.kill()  # kill -9: its task process keeps running, unsupervised
    single.wait(30)

    ended = whole.wait(90)
    assert ended.returncode == 1, str(ended)
    host, pid = attempt.owner_id.split(":")[:2]
    assert (
        f"p.slow: attempt 1 was lost: owner {attempt.owner_id} is gone: its process {pid} no longer runs on {host}"
    ) in ended.stdout.splitlines()
    lost = harness.attempts("slow")[0]
    assert (lost.status, lost.error_message) == (
        "LOST",
        f"attempt 1 was lost: owner {attempt.owner_id} is gone: its process {pid} no longer runs on {host}",
    )
    assert harness.task_runs()["slow"].status == "FAILED"
    harness.wait_until(lambda: not process_alive(attempt.pid), 30, "the orphaned task process to be stopped")
