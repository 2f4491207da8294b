"""Logs.Store (S6.B): an ended attempt's log is copied to a file:// folder or an s3:// bucket, and
`etl-craft attempt-log` reads it from there once the file under Log_dir is gone."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from tests.fixtures.harness import Harness, TaskSpec

LINES = [f"line {n:05d} of the task's output, é" for n in range(3000)]  # about 110 KiB


def _run_chatty(harness: Harness, store: str) -> tuple[Any, str]:
    harness.project.extra_sections = f"Logs:\n  Store: {store}\n"
    harness.project.write_config()
    harness.pipeline("chatty", [TaskSpec("talk", {"print": LINES})])
    ran = harness.cli("run", "--pipeline_code", "chatty")
    assert ran.returncode == 0, ran
    [attempt] = harness.attempts("talk")
    return attempt, Path(attempt.log_path).read_text(encoding="utf-8")


def _key(attempt: Any) -> str:
    return "/".join(Path(attempt.log_path).parts[-3:])


def test_an_s3_store_holds_the_log_and_attempt_log_reads_it_back(harness: Harness, s3: Any) -> None:
    attempt, written = _run_chatty(harness, "s3://etl-logs/prod/attempts")
    assert re.fullmatch(r"chatty/run-\d+/talk\.attempt-1\.log", _key(attempt))
    listed = s3.list_objects_v2(Bucket="etl-logs")["Contents"]
    assert [o["Key"] for o in listed] == [f"prod/attempts/{_key(attempt)}"]
    stored = s3.get_object(Bucket="etl-logs", Key=f"prod/attempts/{_key(attempt)}")["Body"].read()
    assert stored == written.encode() and LINES[-1] in written

    Path(attempt.log_path).unlink()  # the host lost its Log_dir: the store still has the log
    shown = harness.cli("attempt-log", "--attempt-id", str(attempt.attempt_id))
    assert shown.returncode == 0, shown
    assert shown.stdout == written
    # A read from an offset is a byte range of the object, cut at a character boundary.
    size = len(stored)
    doc = harness.cli(
        "attempt-log", "--attempt-id", str(attempt.attempt_id), "--offset", "1000", "--format", "json"
    ).json()
    assert (doc["offset"], doc["size"], doc["attempt_ended"]) == (1000, size, True)
    assert doc["text"].encode() == stored[1000 : doc["next_offset"]] and doc["next_offset"] == size

    s3.delete_object(Bucket="etl-logs", Key=f"prod/attempts/{_key(attempt)}")
    missing = harness.cli("attempt-log", "--attempt-id", str(attempt.attempt_id))
    assert missing.returncode == 24, missing
    assert f"s3://etl-logs/prod/attempts/{_key(attempt)}" in missing.stderr


def test_a_file_store_holds_the_log(harness: Harness, tmp_path: Path) -> None:
    folder = tmp_path / "store"
    attempt, written = _run_chatty(harness, f"file://{folder}")
    assert (folder / _key(attempt)).read_text(encoding="utf-8") == written
    assert sorted(p.name for p in folder.rglob("*") if p.is_file()) == ["talk.attempt-1.log"]
    Path(attempt.log_path).unlink()
    shown = harness.cli("attempt-log", "--attempt-id", str(attempt.attempt_id))
    assert shown.returncode == 0, shown
    assert shown.stdout == written
