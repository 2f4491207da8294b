"""`reconcile`: fence attempts nobody can vouch for (LOST) and release runs nobody holds.

The same reconciliation runs before every run; this command runs it on demand, for every pipeline,
one pipeline or one task of it, and reports what it changed.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from etl_craft.core.errors import UnknownCodeError, UsageError
from etl_craft.core.text import did_you_mean
from etl_craft.engine import reads
from etl_craft.engine.records.actions import record_request
from etl_craft.engine.schema import tables as t
from etl_craft.execution.run_loop.reconcile import reconcile
from etl_craft.services.context import OperationContext


@dataclass(frozen=True)
class LostAttemptView:
    attempt_id: int
    task_run_id: int
    pipeline_run_id: int | None
    pipeline_code: str | None
    task_code: str | None
    owner_id: str
    message: str
    stopped_process: bool


@dataclass(frozen=True)
class ReleasedRunView:
    pipeline_run_id: int
    pipeline_code: str


@dataclass(frozen=True)
class ReconciliationView:
    """The `etl-craft/reconciliation/1` document."""

    pipeline: str | None
    task: str | None
    lost: tuple[LostAttemptView, ...]
    released_runs: tuple[ReleasedRunView, ...]
    live: int  # claimed or running attempts whose owners still hold them
    message: str

    def lines(self) -> list[str]:
        out = []
        for lost in self.lost:
            where = f"{lost.pipeline_code}.{lost.task_code} of run {lost.pipeline_run_id}"
            stopped = "; its task process was stopped" if lost.stopped_process else ""
            out.append(f"LOST attempt_id={lost.attempt_id} {where}: {lost.message}{stopped}")
        out += [
            f"released pipeline_run_id={r.pipeline_run_id} of {r.pipeline_code}: "
            f"etl-craft run --pipeline_code {r.pipeline_code} resumes it"
            for r in self.released_runs
        ]
        return [*out, self.message]


def _where_attempts(conn: sa.Connection, task_run_ids: list[int]) -> dict[int, tuple[int, str, str]]:
    """task run id -> (run id, pipeline code, task code), in one query."""
    if not task_run_ids:
        return {}
    tr, tasks, runs, pipes = t.aud_task_run_log, t.cfg_tasks, t.aud_pipelines_run_log, t.cfg_pipelines
    rows = conn.execute(
        sa.select(tr.c.task_run_id, tr.c.pipeline_run_id, pipes.c.pipeline_code, tasks.c.task_code)
        .join(tasks, tasks.c.task_id == tr.c.task_id)
        .join(runs, runs.c.pipeline_run_id == tr.c.pipeline_run_id)
        .join(pipes, pipes.c.pipeline_id == runs.c.pipeline_id)
        .where(tr.c.task_run_id.in_(task_run_ids))
    )
    return {r.task_run_id: (r.pipeline_run_id, r.pipeline_code, r.task_code) for r in rows}


def _pipeline_codes(conn: sa.Connection, run_ids: list[int]) -> dict[int, str]:
    if not run_ids:
        return {}
    runs, pipes = t.aud_pipelines_run_log, t.cfg_pipelines
    rows = conn.execute(
        sa.select(runs.c.pipeline_run_id, pipes.c.pipeline_code)
        .join(pipes, pipes.c.pipeline_id == runs.c.pipeline_id)
        .where(runs.c.pipeline_run_id.in_(run_ids))
    )
    return {r.pipeline_run_id: r.pipeline_code for r in rows}


def reconcile_runs(
    ctx: OperationContext, pipeline_code: str | None = None, task_code: str | None = None
) -> ReconciliationView:
    """`reconcile`: expired or orphaned attempts become LOST (their task runs FAILED) and runs whose
    owner is gone become unowned, so the next `run` resumes them."""
    if task_code is not None and pipeline_code is None:
        raise UsageError("etl-craft reconcile --task_code", found="no --pipeline_code", expected="--pipeline_code too")
    pipeline_id = task_id = None
    if pipeline_code is not None:
        with ctx.db.read() as conn:
            pipeline = reads.find_pipeline(conn, pipeline_code)
            pipeline_id = pipeline.pipeline_id
            if task_code is not None:
                tasks = reads.pipeline_tasks(conn, pipeline_id)
                task = next((x for x in tasks if x.task_code == task_code), None)
                if task is None:
                    raise UnknownCodeError(
                        f"task {pipeline_code}.{task_code}",
                        found="no active task with this code in the pipeline",
                        expected="the code of an active task of the pipeline",
                        remedy=f"see etl-craft steps --pipeline_code {pipeline_code}"
                        + did_you_mean(task_code, [x.task_code for x in tasks]),
                    )
                task_id = task.task_id
    report = reconcile(ctx.db, pipeline_id=pipeline_id, task_id=task_id)
    record_request(
        ctx.db,
        ctx.actor,
        "reconcile",
        {"pipeline_code": pipeline_code, "task_code": task_code},
        pipeline_id=pipeline_id,
        task_id=task_id,
    )
    with ctx.db.read() as conn:
        where = _where_attempts(conn, [lost.task_run_id for lost in report.lost])
        codes = _pipeline_codes(conn, list(report.released_runs))
    lost = []
    for x in report.lost:
        run_id, pipe, code = where.get(x.task_run_id) or (None, None, None)
        lost.append(
            LostAttemptView(x.attempt_id, x.task_run_id, run_id, pipe, code, x.owner_id, x.message, x.stopped_process)
        )
    released = tuple(ReleasedRunView(run_id, codes.get(run_id, "?")) for run_id in report.released_runs)
    scope = f"{pipeline_code}.{task_code}" if task_code else (pipeline_code or "every pipeline")
    message = (
        f"reconcile {scope}: {len(lost)} attempt(s) lost, {len(released)} run(s) released, "
        f"{report.live} attempt(s) still held by live owners"
    )
    return ReconciliationView(pipeline_code, task_code, tuple(lost), released, report.live, message)
