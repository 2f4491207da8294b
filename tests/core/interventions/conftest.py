"""A real project for operator commands: ingestion scripts, pipelines from project migrations, the
real `etl-craft` command in subprocesses, and reads of the Engine DB state the tests assert."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import textwrap
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind, RunStatus, TriggerKind
from etl_craft.engine import transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t
from etl_craft.execution.processes.identity import is_alive
from tests.fixtures.cli import ETL_CRAFT, Result, run_cli
from tests.fixtures.project import Project

ACTOR = "alice@ops"
OTHER = "bob@ops"

SCRIPTS = {
    "quick.py": """
        from etl_craft.scripting import ScriptResult

        def run(task):
            return ScriptResult(row_count=1)
        """,
    "nothing.py": """
        from etl_craft.scripting import ScriptResult

        def run(task):
            return ScriptResult(row_count=0)
        """,
    "fail.py": """
        def run(task):
            raise RuntimeError("the source is down")
        """,
    "slow.py": """
        import time
        from etl_craft.scripting import ScriptResult

        def run(task):
            time.sleep(30)
            return ScriptResult(row_count=1)
        """,
    # Runs until the test creates release.flag beside craft-connector.yml (at most a minute).
    "gate.py": """
        import time
        from pathlib import Path
        from etl_craft.scripting import ScriptResult

        FLAG = Path(__file__).resolve().parent.parent / "release.flag"

        def run(task):
            deadline = time.monotonic() + 60
            while not FLAG.exists() and time.monotonic() < deadline:
                time.sleep(0.05)
            return ScriptResult(row_count=1)
        """,
}


def _values(rows: list[tuple[str, ...]]) -> str:
    return ", ".join("(" + ", ".join(f"'{v}'" for v in row) + ")" for row in rows)


class Ops:
    """One project, its Engine DB, and the commands and reads the intervention tests use."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.root = project.root
        self.db: EngineDb = project.open_db()
        self._migrations = 0
        self._processes: list[subprocess.Popen[str]] = []
        self._pids: list[tuple[int, str | None]] = []
        scripts = self.root / "ingestion_scripts"
        scripts.mkdir()
        for name, body in SCRIPTS.items():
            (scripts / name).write_text(textwrap.dedent(body), encoding="utf-8")

    # --- metadata ----------------------------------------------------------------------------------

    def define(self, pipeline: str, tasks: dict[str, str], edges: tuple[tuple[str, str, str], ...] = ()) -> None:
        """A pipeline of PYTHON tasks (code -> script) and edges (task, upstream, type), by a migration."""
        task_rows = [(pipeline, code) for code in tasks]
        sql = [
            f"INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('{pipeline}', '{pipeline}', 'FULL');",
            "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)\n"
            "SELECT v.column2, 'INGESTION', p.PIPELINE_ID, 'PYTHON'\n"
            f"FROM (VALUES {_values(task_rows)}) v\n"
            "LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = v.column1 AND p.ACTIVE_FLAG = 'Y';",
            "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)\n"
            "SELECT t.TASK_ID, 'SCRIPT_NAME', v.column3\n"
            f"FROM (VALUES {_values([(pipeline, code, script) for code, script in tasks.items()])}) v\n"
            "LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = v.column1 AND p.ACTIVE_FLAG = 'Y'\n"
            "LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column2 AND t.ACTIVE_FLAG = 'Y';",
        ]
        if edges:
            sql.append(
                "INSERT INTO CFG_TASK_DEPENDENCY (PIPELINE_ID, TASK_ID, DEPENDS_ON_TASK_ID, DEPENDENCY_TYPE)\n"
                "SELECT p.PIPELINE_ID, t.TASK_ID, u.TASK_ID, v.column4\n"
                f"FROM (VALUES {_values([(pipeline, *edge) for edge in edges])}) v\n"
                "LEFT JOIN CFG_PIPELINES p ON p.PIPELINE_CODE = v.column1 AND p.ACTIVE_FLAG = 'Y'\n"
                "LEFT JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.TASK_CODE = v.column2 AND t.ACTIVE_FLAG = 'Y'\n"
                "LEFT JOIN CFG_TASKS u ON u.PIPELINE_ID = p.PIPELINE_ID AND u.TASK_CODE = v.column3 AND u.ACTIVE_FLAG = 'Y';"
            )
        self.migrate("\n".join(sql), pipeline)

    def migrate(self, sql: str, name: str) -> None:
        self._migrations += 1
        folder = self.root / "migrations"
        folder.mkdir(exist_ok=True)
        (folder / f"{self._migrations:04d}_{name}.sql").write_text(sql + "\n", encoding="utf-8")
        done = self.cli("migrate")
        assert done.returncode == 0, str(done)

    # --- commands ----------------------------------------------------------------------------------

    def env(self, actor: str = ACTOR) -> dict[str, str]:
        return self.project.env(ETL_CRAFT_ACTOR=actor)

    def cli(self, *args: str, actor: str = ACTOR) -> Result:
        return run_cli(*args, env=self.env(actor), cwd=self.root)

    def start(self, *args: str, actor: str = ACTOR) -> subprocess.Popen[str]:
        """`etl-craft ARGS` in the background (its own process, killable on its own)."""
        process = subprocess.Popen(
            [ETL_CRAFT, *args],
            env=self.env(actor),
            cwd=self.root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._processes.append(process)
        return process

    def release_gate(self) -> None:
        (self.root / "release.flag").touch()

    def kill9(self, process: subprocess.Popen[str]) -> None:
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 60) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.1)
        raise AssertionError(f"timed out after {timeout} s waiting for {what}")

    def running_attempt(self, task_code: str) -> dict[str, Any]:
        """Wait until the task's latest attempt is RUNNING with its process id recorded."""

        def check() -> dict[str, Any] | None:
            rows = [a for a in self.attempts() if a["task"] == task_code and a["status"] == "RUNNING" and a["pid"]]
            return rows[-1] if rows else None

        attempt = self.wait_for(f"a running attempt of {task_code}", check)
        self._pids.append((attempt["pid"], attempt["process_start"]))
        return attempt

    def wait_gone(self, pid: int, start: str | None, timeout: float = 30) -> None:
        self.wait_for(f"process {pid} to end", lambda: not is_alive(pid, start), timeout)

    # --- state set up through the engine -----------------------------------------------------------

    def create_run(self, pipeline: str) -> int:
        """An IN-PROGRESS run nobody supervises, as `run --init-only` leaves one."""
        with acting_as(Actor(ACTOR, ActorKind.HUMAN)) as actor, self.db.write() as conn:
            pipeline_id = conn.execute(
                sa.select(t.cfg_pipelines.c.pipeline_id).where(t.cfg_pipelines.c.pipeline_code == pipeline)
            ).scalar_one()
            return transitions.create_run(
                conn,
                pipeline_id=pipeline_id,
                status=RunStatus.IN_PROGRESS,
                trigger_kind=TriggerKind.MANUAL,
                actor=actor,
                now=utc_now(),
            )

    # --- reads -------------------------------------------------------------------------------------

    def _all(self, query: sa.Select[Any]) -> list[dict[str, Any]]:
        with self.db.read() as conn:
            return [dict(row._mapping) for row in conn.execute(query)]

    def runs(self) -> list[dict[str, Any]]:
        r = t.aud_pipelines_run_log
        return self._all(
            sa.select(
                r.c.pipeline_run_id,
                r.c.status,
                r.c.owner_id,
                r.c.started_by,
                r.c.ended_by,
                r.c.ended_by_kind,
                r.c.output_revision,
                r.c.repair_pending,
                r.c.end_date,
            ).order_by(r.c.pipeline_run_id)
        )

    def run(self, run_id: int) -> dict[str, Any]:
        return next(r for r in self.runs() if r["pipeline_run_id"] == run_id)

    def task_runs(self, run_id: int) -> dict[str, dict[str, Any]]:
        tr, tasks = t.aud_task_run_log, t.cfg_tasks
        rows = self._all(
            sa.select(
                tasks.c.task_code.label("task"),
                tr.c.task_run_id,
                tr.c.status,
                tr.c.attempt_count,
                tr.c.error_message,
                tr.c.target_count,
                tr.c.rows_written,
            )
            .join(tasks, tasks.c.task_id == tr.c.task_id)
            .where(tr.c.pipeline_run_id == run_id)
        )
        return {row.pop("task"): row for row in rows}

    def statuses(self, run_id: int) -> dict[str, str]:
        return {code: row["status"] for code, row in self.task_runs(run_id).items()}

    def attempts(self, run_id: int | None = None) -> list[dict[str, Any]]:
        a, tr, tasks = t.aud_task_attempts, t.aud_task_run_log, t.cfg_tasks
        query = (
            sa.select(
                tasks.c.task_code.label("task"),
                tr.c.pipeline_run_id,
                a.c.attempt_id,
                a.c.attempt_number,
                a.c.status,
                a.c.owner_id,
                a.c.pid,
                a.c.process_start,
                a.c.error_message,
            )
            .join(tr, tr.c.task_run_id == a.c.task_run_id)
            .join(tasks, tasks.c.task_id == tr.c.task_id)
            .order_by(a.c.attempt_id)
        )
        if run_id is not None:
            query = query.where(tr.c.pipeline_run_id == run_id)
        return self._all(query)

    def interventions(self) -> list[dict[str, Any]]:
        i, tasks = t.aud_run_interventions, t.cfg_tasks
        return self._all(
            sa.select(
                i.c.pipeline_run_id,
                tasks.c.task_code.label("task"),
                i.c.action,
                i.c.from_status,
                i.c.to_status,
                i.c.target_count,
                i.c.previous_message,
                i.c.reason,
                i.c.requested_by,
                i.c.requested_by_kind,
            )
            .outerjoin(tasks, tasks.c.task_id == i.c.task_id)
            .order_by(i.c.intervention_id)
        )

    def actions(self, *commands: str) -> list[dict[str, Any]]:
        a, tasks, pipes = t.aud_actions, t.cfg_tasks, t.cfg_pipelines
        query = (
            sa.select(
                a.c.command,
                a.c.actor,
                a.c.actor_kind,
                pipes.c.pipeline_code.label("pipeline"),
                a.c.pipeline_run_id,
                tasks.c.task_code.label("task"),
                a.c.outcome,
                a.c.exit_code,
                a.c.arguments,
            )
            .outerjoin(pipes, pipes.c.pipeline_id == a.c.pipeline_id)
            .outerjoin(tasks, tasks.c.task_id == a.c.task_id)
            .order_by(a.c.action_id)
        )
        if commands:
            query = query.where(a.c.command.in_(commands))
        return self._all(query)

    def pauses(self) -> list[dict[str, Any]]:
        p, pipes = t.aud_pipeline_pauses, t.cfg_pipelines
        return self._all(
            sa.select(
                pipes.c.pipeline_code.label("pipeline"),
                p.c.paused_by,
                p.c.paused_by_kind,
                p.c.reason,
                p.c.resumed_at,
                p.c.resumed_by,
                p.c.resumed_by_kind,
                p.c.resume_reason,
            )
            .join(pipes, pipes.c.pipeline_id == p.c.pipeline_id)
            .order_by(p.c.pipeline_pause_id)
        )

    def task_run_id(self, run_id: int, task_code: str) -> int:
        return int(self.task_runs(run_id)[task_code]["task_run_id"])

    # --- cleanup -----------------------------------------------------------------------------------

    def close(self) -> None:
        for process in self._processes:
            if process.poll() is None:  # SIGTERM first: the supervisor stops its task processes
                process.terminate()
                try:
                    process.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait(timeout=30)
            for stream in (process.stdout, process.stderr):
                if stream:
                    stream.close()
        for pid, start in self._pids:
            if is_alive(pid, start):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)


@pytest.fixture
def ops(project: Project) -> Iterator[Ops]:
    helper = Ops(project)
    try:
        yield helper
    finally:
        helper.close()


def finished(process: subprocess.Popen[str], timeout: float = 90) -> Result:
    """Wait for a background command and return what it printed."""
    stdout, stderr = process.communicate(timeout=timeout)
    return Result(process.returncode, stdout, stderr)
