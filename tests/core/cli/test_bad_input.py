"""Arguments a command can't use, a reader that closes stdout early, and a bug: one `error:` line, a
documented exit status, an `etl-craft/error/1` document with --format json, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from etl_craft.cli.arguments import BIGINT_MAX
from etl_craft.engine.schema import tables as t
from tests.core.cli.fuzzing import inside, invoke, judge
from tests.fixtures.cli import ETL_CRAFT, run_cli
from tests.fixtures.harness import Harness, TaskSpec

# Every integer flag: the command line it goes with and the smallest value it takes.
INTEGER_FLAGS = [
    (["run", "--pipeline_code", "P"], "--run-id", 1),
    (["mark", "--pipeline_code", "P", "--status", "SUCCESS", "--reason", "r"], "--run-id", 1),
    (
        ["mark", "--pipeline_code", "P", "--task_code", "T", "--status", "SUCCESS", "--reason", "r", "--new-run"],
        "--rows",
        0,
    ),
    (["cancel", "--pipeline_code", "P", "--reason", "r"], "--run-id", 1),
    (["reopen", "--pipeline_code", "P", "--reason", "r"], "--run-id", 1),
    (["steps", "--pipeline_code", "P"], "--run-id", 1),
    (["status", "--pipeline_code", "P"], "--run-id", 1),
    (["explain", "--pipeline_code", "P", "--task_code", "T"], "--run-id", 1),
    (["history", "--pipeline_code", "P"], "--run-id", 1),
    (["history", "--pipeline_code", "P"], "--limit", 1),
    (["lineage"], "--depth", 1),
]


@pytest.fixture
def project_p(harness: Harness) -> Harness:
    harness.pipeline("P", [TaskSpec("T")])
    return harness


@pytest.mark.parametrize(("argv", "flag", "minimum"), INTEGER_FLAGS, ids=lambda v: v if isinstance(v, str) else None)
def test_an_integer_flag_refuses_what_the_engine_db_cant_hold(
    project_p: Harness, argv: list[str], flag: str, minimum: int
) -> None:
    actions = project_p.rows(t.aud_actions)
    with inside(project_p.root, project_p.env()):
        for value in (str(BIGINT_MAX + 1), "99999999999999999999", str(minimum - 1), "12abc", "\u0661\u0662"):
            outcome = invoke([*argv, flag, value, "--format", "json"])
            doc = judge(outcome)
            assert outcome.status == 2, outcome
            remedy = ". Give a limit of 1 or more, or use --all for every run" if flag == "--limit" else ""
            assert doc["message"] == (
                f"argument {flag}: found {value!r}; expected a whole number from {minimum} to {BIGINT_MAX}{remedy}"
            )
            assert outcome.stderr.splitlines()[-1] == f"error: {doc['message']}"
    assert project_p.rows(t.aud_actions) == actions  # refused before anything was recorded


def test_the_largest_bigint_reaches_the_engine_db_and_is_answered(project_p: Harness) -> None:
    """BIGINT_MAX itself is valid on both Engine DBs: as a run id, a limit and a stored row count."""
    with inside(project_p.root, project_p.env()):
        missing = invoke(["history", "--pipeline_code", "P", "--run-id", str(BIGINT_MAX), "--format", "json"])
        assert judge(missing)["message"].startswith(f"run {BIGINT_MAX}: found no such run")
        assert missing.status == 24
        marked = invoke(
            [
                *("mark", "--pipeline_code", "P", "--task_code", "T", "--status", "SUCCESS", "--new-run"),
                *("--reason", "counted elsewhere", "--rows", str(BIGINT_MAX)),
            ]
        )
        assert marked.status == 0, marked
        listed = invoke(["history", "--pipeline_code", "P", "--limit", str(BIGINT_MAX), "--format", "json"])
        assert listed.status == 0, listed
        assert [r["pipeline_run_id"] for r in judge(listed)["runs"]] == [r.pipeline_run_id for r in project_p.runs()]
    (task_run,) = project_p.task_runs().values()
    assert (task_run.status, task_run.target_count) == ("SUCCESS", BIGINT_MAX)


def test_a_parse_error_is_a_json_document_with_format_json(tmp_path: Path) -> None:
    result = run_cli("status", "--format", "json", cwd=tmp_path)
    assert result.returncode == 2
    assert result.json() == {
        "schema": "etl-craft/error/1",
        "error": "UsageError",
        "message": "the following arguments are required: --pipeline_code",
        "exit_code": 2,
        "exit_name": "USAGE",
    }
    assert result.stderr.startswith("usage: etl-craft status")
    assert result.stderr.splitlines()[-1] == "error: the following arguments are required: --pipeline_code"


def test_codes_no_code_resembles_are_usage_errors_and_near_misses_are_looked_up(project_p: Harness) -> None:
    long = project_p.cli("status", "--pipeline_code", "P" * 129)
    assert long.returncode == 2
    assert long.stderr.splitlines()[-1].startswith("error: argument --pipeline_code: found 'PPPP")
    assert "(129 characters); expected a code of at most 128 characters" in long.stderr
    control = project_p.cli("graph", "--pipeline_code", "P\x1b[2J")
    assert control.returncode == 2
    assert "found 'P\\x1b[2J'" in control.stderr and "\x1b" not in control.stderr
    near = project_p.cli("graph", "--pipeline_code", "p")
    assert near.returncode == 4 and "Did you mean P?" in near.stderr


def test_a_path_no_file_system_holds_or_with_control_characters_is_a_usage_error(project_p: Harness) -> None:
    for argv in (
        ["list", "--config", "x" * 300],
        ["migrate", "--migrations-dir", "a/" + "b" * 256],
        ["demo", "new\x1b[2J"],
    ):
        result = project_p.cli(*argv)
        assert result.returncode == 2, result
        assert "expected a path without control characters, of at most 4095 bytes and 255 bytes per name" in (
            result.stderr
        )
        assert "\x1b" not in result.stderr
    assert not (project_p.root / "new\x1b[2J").exists()


def test_arguments_that_are_not_utf8_are_refused_naming_the_flag(project_p: Harness) -> None:
    done = subprocess.run(
        [ETL_CRAFT.encode(), b"pause", b"--pipeline_code", b"P", b"--reason", b"caf\xe9", b"--format", b"json"],
        capture_output=True,
        env=project_p.env(),
        cwd=project_p.root,
        check=False,
    )
    assert done.returncode == 2
    stderr = done.stderr.decode()
    assert stderr == (
        "error: the value of --reason: found bytes that are not UTF-8 in 'caf\\udce9'; expected UTF-8 text. "
        "Give the value in UTF-8 (etl-craft reads and stores text as UTF-8)\n"
    )
    assert project_p.rows(t.aud_pipeline_pauses) == []


# --- a reader that goes away ----------------------------------------------------------------------------


def test_audit_into_head_ends_quietly_with_the_listing_status(project_p: Harness) -> None:
    """`etl-craft audit | head -n 1` through a real pipe: head exits after a line, the rest is dropped."""
    with inside(project_p.root, project_p.env()):
        for n in range(60):  # 60 actions with long reasons: far more than a pipe buffers
            for verb in ("pause", "resume"):
                assert invoke([verb, "--pipeline_code", "P", "--reason", f"{n} " + "x" * 1990]).status == 0
    for fmt in ("text", "json"):
        audit = subprocess.Popen(
            [ETL_CRAFT, "audit", "--format", fmt],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=project_p.env(),
            cwd=project_p.root,
        )
        head = subprocess.Popen(["head", "-n", "1"], stdin=audit.stdout, stdout=subprocess.PIPE)
        assert audit.stdout is not None and audit.stderr is not None
        audit.stdout.close()  # head holds the only read end
        first, _ = head.communicate(timeout=60)
        assert audit.wait(timeout=60) == 0
        assert audit.stderr.read() == b""
        audit.stderr.close()
        assert first == (b"AT\tACTOR\tKIND\tCOMMAND\tOUTCOME\tARGUMENTS\n" if fmt == "text" else b"{\n")


def test_a_command_whose_stdout_is_closed_still_does_its_work(project_p: Harness) -> None:
    read, write = os.pipe()
    os.close(read)  # nobody will ever read: the first write fails with EPIPE
    try:
        done = subprocess.run(
            [ETL_CRAFT, "pause", "--pipeline_code", "P", "--reason", "closed stdout"],
            stdout=write,
            stderr=subprocess.PIPE,
            env=project_p.env(),
            cwd=project_p.root,
            check=False,
        )
    finally:
        os.close(write)
    assert (done.returncode, done.stderr) == (0, b"")
    assert [p.reason for p in project_p.rows(t.aud_pipeline_pauses)] == ["closed stdout"]


# --- a bug ------------------------------------------------------------------------------------------------


def test_a_bug_is_one_line_naming_the_file_that_holds_its_traceback(tmp_path: Path) -> None:
    (tmp_path / "broken_cmd.py").write_text(
        "from etl_craft.cli.framework import Command\n"
        "def _run(args):\n    return {}['missing']\n"
        "COMMAND = Command('broken', 'fail like a bug', _run)\n"
    )
    info = tmp_path / "broken_cmd-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-cmd\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[etl_craft.commands]\nbroken = broken_cmd:COMMAND\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), *sys.path]), TMPDIR=str(tmp_path))
    result = run_cli("broken", "--format", "json", env=env, cwd=tmp_path)
    assert result.returncode == 16
    (line,) = result.stderr.splitlines()
    traceback_file = next(tmp_path.glob("etl-craft-traceback-*.txt"))
    assert line == (
        "error: unexpected KeyError in etl-craft broken: 'missing'. This is a bug in etl-craft; its traceback "
        f"is in {traceback_file} (include it when you report the bug)"
    )
    assert result.json()["exit_code"] == 16
    written = traceback_file.read_text()
    assert written.startswith("etl-craft ") and "Traceback (most recent call last)" in written
    assert "return {}['missing']" in written
    debug = run_cli("broken", "--log-level", "DEBUG", env=env, cwd=tmp_path)
    assert "Traceback (most recent call last)" in debug.stderr  # asked for: debugging shows it
