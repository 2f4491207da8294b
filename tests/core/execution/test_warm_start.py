"""What the local provider's fork server prepares for its task processes (execution/warm_start.py):
the project's config and an Engine DB engine whose statements are compiled once. Both dialects."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.core.enums import ActorKind
from etl_craft.engine import transitions as tr
from etl_craft.engine.database import open_engine_db
from etl_craft.engine.schema import tables as t
from etl_craft.engine.transitions.values import AttemptOutcome
from etl_craft.execution.processes import warm_start
from etl_craft.execution.processes.task_process import rehearse
from tests.fixtures.harness import Harness, TaskSpec
from tests.fixtures.project import Project
from tests.fixtures.seed import in_progress_run, pipeline_with_tasks

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SYSTEM = Actor("etl-craft@host", ActorKind.SYSTEM)
OWNER = "host:1:boot:1:aaaaaaaa"

# A script that reports whether its task process runs on what the fork server prepared.
PREPARED_SCRIPT = """\
import json
from pathlib import Path

from etl_craft.execution.processes import warm_start
from etl_craft.scripting import ScriptResult


def run(task):
    prepared = warm_start.prepared_for(str(task.config.path))
    found = {
        "prepared": prepared is not None,
        "same_config": prepared is not None and prepared[0] is task.config,
        "same_engine_db": prepared is not None and prepared[1] is task._engine_db,
    }
    Path(task.input_params["out"]).write_text(json.dumps(found))
    return ScriptResult(row_count=0)
"""


def test_a_task_process_runs_on_the_config_and_engine_its_fork_server_prepared(harness: Harness) -> None:
    (harness.root / "ingestion_scripts" / "prepared.py").write_text(PREPARED_SCRIPT)
    out = harness.root / "prepared.json"
    harness.pipeline("p", [TaskSpec("a", {"out": str(out)}, parameters={"SCRIPT_NAME": "prepared.py"})])
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 0, str(result)
    assert [(a.task_code, a.status) for a in harness.attempts()] == [("a", "SUCCESS")]
    assert json.loads(out.read_text()) == {"prepared": True, "same_config": True, "same_engine_db": True}
    # The fork server's warm-up wrote nothing: one run, one task run, one attempt.
    assert len(harness.runs()) == 1 and len(harness.task_runs()) == 1
    assert "could not prepare" not in result.stderr


# A main script like the `etl-craft` console script, which records each process that runs it as
# multiprocessing's __mp_main__ (a child re-running its parent's script).
MAIN_SCRIPT = """\
import os
import sys

from etl_craft.cli.main import main

if __name__ == "__mp_main__":
    with open(os.environ["MAIN_RUNS"], "a") as runs:
        runs.write(f"{os.getpid()}\\n")
if __name__ == "__main__":
    sys.exit(main())
"""


def test_the_fork_server_loads_the_parents_main_script_once_for_every_task_process(harness: Harness) -> None:
    main, runs = harness.root / "main.py", harness.root / "main-runs.txt"
    main.write_text(MAIN_SCRIPT)
    harness.pipeline("p", [TaskSpec("a"), TaskSpec("b"), TaskSpec("c")])
    done = subprocess.run(
        [sys.executable, str(main), "run", "--pipeline_code", "p"],
        env=harness.env(MAIN_RUNS=str(runs)),
        cwd=harness.root,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    attempts = harness.attempts()
    assert sorted((a.task_code, a.status) for a in attempts) == [("a", "SUCCESS"), ("b", "SUCCESS"), ("c", "SUCCESS")]
    loaded_by = [int(pid) for pid in runs.read_text().split()]
    assert len(loaded_by) == 1, loaded_by  # by the fork server, not by any task process
    assert loaded_by[0] not in {a.pid for a in attempts}
    assert "could not load" not in done.stderr


def test_what_was_prepared_is_used_only_while_its_files_hold_what_they_held(project: Project) -> None:
    config_path = project.config_path
    env_file = project.root / ".env"
    env_file.write_text("UNUSED=1\n")
    config_path.write_text(
        config_path.read_text().replace("Source_type: environment", "Source_type: file\n  Path: .env")
    )
    path = str(config_path)
    assert warm_start.prepared_for(path) is None  # nothing prepared in this process for it yet

    warm_start.prepare(path)
    prepared = warm_start.prepared_for(path)
    assert prepared is not None
    config, db = prepared
    assert config.path == config_path and config.secrets is not None and config.secrets.env_file == env_file
    # No connection is left open to be shared by the processes forked afterwards.
    assert db.engine.pool.checkedout() == 0 and db.engine.pool.checkedin() == 0  # type: ignore[attr-defined]

    env_file.write_text("UNUSED=2\n")
    assert warm_start.prepared_for(path) is None  # a changed .env file: read again
    env_file.write_text("UNUSED=1\n")
    assert warm_start.prepared_for(path) == (config, db)  # the same contents again
    config_path.write_text(config_path.read_text() + "# a comment\n")
    assert warm_start.prepared_for(path) is None  # a changed craft-connector.yml: read again
    assert warm_start.prepared_for(str(project.root / "other.yml")) is None


def _claimed_attempt(db) -> int:
    pipeline, tasks = pipeline_with_tasks(db, "p", ["a"])
    run_id = in_progress_run(db, pipeline, OWNER, NOW, NOW + timedelta(minutes=1))
    with db.write() as conn:
        return tr.queue_and_claim_attempt(
            conn,
            pipeline_run_id=run_id,
            task_id=tasks["a"],
            attempts_so_far=None,
            actor=SYSTEM,
            owner_id=OWNER,
            lease_until=NOW + timedelta(minutes=1),
            host="h",
            now=NOW,
        ).attempt_id


def _attempt_rows(db) -> list[tuple[object, ...]]:
    with db.read() as conn:
        return [tuple(row) for row in conn.execute(sa.select(t.aud_task_attempts))]


def test_the_rehearsal_compiles_the_task_process_statements_and_changes_nothing(
    project: Project, caplog: pytest.LogCaptureFixture
) -> None:
    db = open_engine_db(project.load(), check=False, ping=False)
    attempt_id = _claimed_attempt(db)
    before = _attempt_rows(db)

    rehearse(db)

    assert _attempt_rows(db) == before
    # The task process's statements, its end's summary included, now come from the engine's cache.
    caplog.set_level(logging.INFO, logger="sqlalchemy.engine.Engine")
    with db.write() as conn:
        tr.start_attempt(
            conn, attempt_id, owner_id=OWNER, pid=1, process_start="", log_path="a.log", now=NOW + timedelta(seconds=1)
        )
    with db.write() as conn:
        outcome = AttemptOutcome("SUCCESS", task_log="done", exit_code=0)
        # As for an ungated task, whose claim recorded no decision for its success to consume.
        tr.finish_attempt(
            conn, attempt_id, owner_id=OWNER, outcome=outcome, now=NOW + timedelta(seconds=2), consumes=False
        )
    statements = [r.getMessage() for r in caplog.records if r.getMessage().startswith("[")]
    assert sum("cached since" in message for message in statements) == 3, statements  # start, end, summary
    assert not any("generated in" in message for message in statements), statements
    assert [row[0] for row in _attempt_rows(db)] == [attempt_id]
    with db.read() as conn:
        summary = conn.execute(sa.select(t.aud_task_run_log.c.status, t.aud_task_run_log.c.task_log)).one()
    assert tuple(summary) == ("SUCCESS", "done")
    db.dispose()
