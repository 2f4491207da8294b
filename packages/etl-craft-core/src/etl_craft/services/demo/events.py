"""Live events of `etl-craft demo`: what started and what finished, read from the Engine DB.

The run supervisor reports progress as lines of text. The demo uses each line only as a signal that
something changed, and reads the run's task runs from the Engine DB to say what: so every event
carries the recorded status, rows written and duration, whatever the wording of the lines.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from etl_craft.core.enums import ENDED_TASK
from etl_craft.engine import reads
from etl_craft.engine.reads import RunRow, TaskRunRow
from etl_craft.execution.graph import Graph
from etl_craft.services.context import OperationContext


@dataclass(frozen=True)
class DemoEvent:
    """One thing that happened. `kind`: step, batch, run_started, task_started, task_finished, run_finished.

    `message` is the event as one line of text; the other fields are there for richer displays.
    """

    kind: str
    message: str
    batch: int | None = None
    pipeline_code: str | None = None
    pipeline_run_id: int | None = None
    task_code: str | None = None
    handler: str | None = None
    status: str | None = None
    rows_written: int | None = None
    seconds: float | None = None
    tasks: int | None = None


Listener = Callable[[DemoEvent], None]


def elapsed(start: datetime | None, end: datetime | None) -> float | None:
    return None if start is None or end is None else round((end - start).total_seconds(), 1)


class RunWatcher:
    """Turns one pipeline run's progress into run and task events (a `Progress` for execute_run)."""

    def __init__(self, ctx: OperationContext, graph: Graph, batch: int, listener: Listener) -> None:
        self.ctx, self.graph, self.batch, self.listener = ctx, graph, batch, listener
        with ctx.db.read() as conn:
            latest = reads.recent_runs(conn, graph.pipeline.pipeline_id, limit=1)
        self.after_run_id = latest[0].pipeline_run_id if latest else 0
        self.run: RunRow | None = None
        self.seen: dict[int, str] = {}  # task id -> the status last reported

    def __call__(self, _line: str) -> None:
        self.look()

    def look(self) -> None:
        with self.ctx.db.read() as conn:
            if self.run is None:
                found = reads.recent_runs(conn, self.graph.pipeline.pipeline_id, limit=1)
                if not found or found[0].pipeline_run_id <= self.after_run_id:
                    return
                self.run = found[0]
                self._emit_run_started()
            task_runs = reads.task_runs_of(conn, self.run.pipeline_run_id)
        for task_id, task_run in sorted(task_runs.items(), key=lambda item: item[1].task_run_id):
            self._task_changed(task_id, task_run)

    def _emit_run_started(self) -> None:
        assert self.run is not None
        code, run_id, count = self.graph.code, self.run.pipeline_run_id, len(self.graph.tasks)
        self.listener(
            DemoEvent(
                "run_started",
                f"[batch {self.batch}] {code}: pipeline_run_id={run_id} started ({count} task(s))",
                batch=self.batch,
                pipeline_code=code,
                pipeline_run_id=run_id,
                tasks=count,
            )
        )

    def _task_changed(self, task_id: int, task_run: TaskRunRow) -> None:
        status = task_run.status
        if self.seen.get(task_id) == status:
            return
        self.seen[task_id] = status
        node = self.graph.tasks.get(task_id)
        code = node.code if node else str(task_id)
        where = f"[batch {self.batch}] {self.graph.code}.{code}"
        if status in ENDED_TASK:
            seconds = elapsed(task_run.start_date, task_run.end_date)
            detail = status
            if status == "SUCCESS":
                detail += f", {task_run.rows_written or 0} row(s) written"
            elif task_run.error_message:
                detail += f": {task_run.error_message.splitlines()[0]}"
            if seconds is not None and status != "SKIPPED":
                detail += f" in {seconds:.1f}s"
            kind, message, rows = "task_finished", f"{where}: {detail}", task_run.rows_written
        else:
            seconds = None
            attempt = f" (attempt {task_run.attempt_count})" if task_run.attempt_count > 1 else ""
            kind, message, rows = "task_started", f"{where}: started{attempt}", None
        self.listener(
            DemoEvent(
                kind,
                message,
                batch=self.batch,
                pipeline_code=self.graph.code,
                pipeline_run_id=task_run.pipeline_run_id,
                task_code=code,
                handler=node.handler.value if node else None,
                status=status,
                rows_written=rows,
                seconds=seconds,
            )
        )
