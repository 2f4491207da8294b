"""Attempt logs: the file under Log_dir is the log, TASK_LOG keeps Logs.Tail_bytes of it, and
`etl-craft attempt-log` prints the file, the one reader the API and the web UI use too (S6.B; Logs.Store in test_log_store.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fixtures.harness import Harness, TaskSpec

LINES = [f"line {n:05d} of the task's output" for n in range(2000)]  # about 64 KiB


def test_the_log_command_prints_the_file_and_task_log_keeps_the_tail(harness: Harness) -> None:
    harness.project.extra_sections = "Logs:\n  Tail_bytes: 1024\n"
    harness.project.write_config()
    harness.pipeline("chatty", [TaskSpec("talk", {"print": LINES})])
    ran = harness.cli("run", "--pipeline_code", "chatty")
    assert ran.returncode == 0, ran
    [attempt] = harness.attempts("talk")
    written = Path(attempt.log_path).read_text(encoding="utf-8")
    assert all(line in written for line in (LINES[0], LINES[-1]))

    shown = harness.cli("attempt-log", "--attempt-id", str(attempt.attempt_id))
    assert shown.returncode == 0, shown
    assert shown.stdout == written
    doc = harness.cli("attempt-log", "--attempt-id", str(attempt.attempt_id), "--format", "json").json()
    size = len(written.encode())
    assert doc == {
        "schema": "etl-craft/attempt-log/1",
        "attempt_id": attempt.attempt_id,
        "log_path": attempt.log_path,
        "offset": 0,
        "next_offset": size,
        "size": size,
        "attempt_ended": True,
        "text": written,
    }

    task_log = harness.task_runs()["talk"].task_log
    tail = task_log.split(f"--- end of {attempt.log_path} ---\n", 1)[1]
    assert len(tail.encode()) <= 1024 and tail in written
    assert LINES[-1] in tail and LINES[-40] not in tail


def test_a_log_that_is_not_there_is_named(harness: Harness) -> None:
    harness.pipeline("quiet", [TaskSpec("a")])
    assert harness.cli("run", "--pipeline_code", "quiet").returncode == 0
    [attempt] = harness.attempts("a")
    Path(attempt.log_path).unlink()
    missing = harness.cli("attempt-log", "--attempt-id", str(attempt.attempt_id))
    assert missing.returncode == 24, missing
    assert attempt.log_path in missing.stderr and "host that ran the attempt" in missing.stderr
    unknown = harness.cli("attempt-log", "--attempt-id", "999999")
    assert unknown.returncode == 24, unknown
    assert "attempt 999999: found no such id in the Engine DB" in unknown.stderr


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("  Store: s3:///logs\n", "an s3:// store needs a bucket"),
        ("  Store: file://relative/logs\n", "a file:// store needs an absolute folder"),
        ("  Store: gs://bucket/logs\n", "scheme 'gs' is neither file nor s3"),
        ("  Tail_bytes: 2000000\n", "a whole number from 0 to 1048576"),
    ],
)
def test_logs_settings_are_checked(harness: Harness, body: str, message: str) -> None:
    harness.project.extra_sections = "Logs:\n" + body
    harness.project.write_config()
    refused = harness.cli("attempt-log", "--attempt-id", "1")
    assert refused.returncode == 3, refused
    assert message in refused.stderr
