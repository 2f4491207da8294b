"""What every operator intervention shares: a reason, local mode, the run's unfinished siblings and live
owner, task codes, the task rows an operator left, and the result each intervention reports."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.core.errors import ExitCode, RunRefusedError, RunStateError, UnknownCodeError, UsageError
from etl_craft.core.text import did_you_mean, operator_text
from etl_craft.engine import reads, transitions
from etl_craft.engine.reads import AttemptRow, PipelineRow, RunRow
from etl_craft.engine.schema import tables as t
from etl_craft.execution.graph import Graph, TaskNode
from etl_craft.execution.processes.identity import OwnerId
from etl_craft.services.context import OperationContext
from etl_craft.services.views import OperationResult, RunView, TaskRunView

OPERATOR_ACTIONS = ("MARK", "NEW_RUN")  # a task row these left is the operator's, not the engine's


# --- requests and shared rules ---------------------------------------------------------------------


def required_reason(reason: str | None, command: str) -> str:
    """Every intervention says why; a blank, overlong or unstorable reason is refused before anything
    is read."""
    if reason is None or not reason.strip():
        raise UsageError(
            f"etl-craft {command} --reason",
            found="no reason" if reason is None else "a blank reason",
            expected="a sentence saying why, recorded with the change",
            remedy=f"add --reason '...' to etl-craft {command}",
        )
    return operator_text(reason, f"etl-craft {command} --reason").strip()


def local_only(ctx: OperationContext, command: str) -> None:
    if ctx.config.orchestration.mode == "remote":
        raise RunRefusedError(
            f"etl-craft {command} in remote mode",
            found="Orchestration.Mode remote",
            expected="local mode, where etl-craft itself supervises runs",
            remedy="act through the external orchestrator (clear or mark the DAG run there), "
            "or switch Orchestration.Mode to local",
        )


def summary(pipeline_code: str, run_id: int, status: str, message: str) -> str:
    return f"{pipeline_code}: pipeline_run_id={run_id} {status} — {message}"


def operation_result(
    ctx: OperationContext, pipeline: PipelineRow, message: str, run_id: int, task: TaskNode | None = None
) -> OperationResult:
    """A SUCCESS operation (it did what was asked) with the run and task as they are now."""
    with ctx.db.read() as conn:
        run = reads.run(conn, run_id)
        assert run is not None
        task_view = None
        if task is not None:
            task_view = TaskRunView.of(task.task_id, task.code, reads.task_runs_of(conn, run_id).get(task.task_id))
    return OperationResult(
        "SUCCESS",
        message,
        int(ExitCode.SUCCESS),
        pipeline.pipeline_code,
        RunView.of(run, pipeline.pipeline_code),
        task_view,
    )


def task_node(graph: Graph, task_code: str) -> TaskNode:
    node = graph.by_code(task_code)
    if node is None:
        raise UnknownCodeError(
            f"task {graph.code}.{task_code}",
            found="no active task with this code in the pipeline",
            expected="the code of an active task of the pipeline",
            remedy=f"see etl-craft steps --pipeline_code {graph.code}"
            + did_you_mean(task_code, [n.code for n in graph.tasks.values()]),
        )
    return node


def utc_text(moment: datetime | None) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S}Z" if moment else "no time"


def describe_attempt(attempt: AttemptRow, task_code: str) -> str:
    where = f", pid {attempt.pid} on {attempt.host}" if attempt.pid else ""
    lease = f" until {utc_text(attempt.lease_expires_at)}" if attempt.owner_id else ""
    owner = f", owned by {attempt.owner_id}{lease}" if attempt.owner_id else ""
    return f"{task_code} (attempt {attempt.attempt_number} {attempt.status}{where}{owner})"


def live_owner(run: RunRow, now: datetime) -> bool:
    """Whether a process still holds the run's lease: not expired, and not an owner known to be gone."""
    if run.owner_id is None or run.lease_expires_at is None or run.lease_expires_at < now:
        return False
    owner = OwnerId.parse(run.owner_id)
    return owner is None or not owner.verifiably_dead()


def other_unfinished(conn: sa.Connection, run: RunRow) -> None:
    others = [r for r in reads.unfinished_runs(conn, run.pipeline_id) if r.pipeline_run_id != run.pipeline_run_id]
    if others:
        listed = ", ".join(f"run {r.pipeline_run_id} ({r.status}, key {r.run_key})" for r in others)
        raise RunStateError(
            f"run {run.pipeline_run_id}",
            found=f"another run of the pipeline is unfinished: {listed}",
            expected="no other unfinished run, so the reopened run is the only one",
            remedy="let that run finish, or cancel it with etl-craft cancel --run-id "
            f"{others[0].pipeline_run_id}, then try again",
        )


def codes_of_task_runs(conn: sa.Connection, run_id: int) -> dict[int, str]:
    tasks = reads.task_runs_of(conn, run_id)
    codes = reads.task_codes(conn, tasks)
    return {row.task_run_id: codes[task_id][1] for task_id, row in tasks.items() if task_id in codes}


# --- engine-skipped tasks of a reopened run -------------------------------------------------------


def _operator_rows(conn: sa.Connection, run_id: int) -> set[int]:
    """Tasks whose current row an operator set (latest intervention on it is a mark or a stand-in)."""
    ivs = t.aud_run_interventions
    latest: dict[int, str] = {}
    rows = conn.execute(
        sa.select(ivs.c.task_id, ivs.c.action)
        .where(ivs.c.pipeline_run_id == run_id, ivs.c.task_id.is_not(None))
        .order_by(ivs.c.intervention_id)
    )
    for task_id, action in rows:
        latest[task_id] = action
    return {task_id for task_id, action in latest.items() if action in OPERATOR_ACTIONS}


def _consumers(conn: sa.Connection, task_run_ids: list[int]) -> dict[int, str]:
    """task run id -> the first downstream run that consumed it ("q run 7")."""
    if not task_run_ids:
        return {}
    c, runs, pipes = t.aud_dependency_consumption, t.aud_pipelines_run_log, t.cfg_pipelines
    rows = conn.execute(
        sa.select(c.c.consumed_task_run_id, pipes.c.pipeline_code, c.c.pipeline_run_id)
        .join(pipes, pipes.c.pipeline_id == c.c.pipeline_id)
        .outerjoin(runs, runs.c.pipeline_run_id == c.c.pipeline_run_id)
        .where(c.c.consumed_task_run_id.in_(task_run_ids))
        .order_by(c.c.consumption_id)
    )
    found: dict[int, str] = {}
    for task_run_id, code, run_id in rows:
        found.setdefault(task_run_id, f"{code} run {run_id}" if run_id is not None else code)
    return found


@dataclass(frozen=True)
class Resets:
    reset: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()  # "<task>: kept SKIPPED, consumed by <pipeline> run <id>"

    def describe(self) -> list[str]:
        parts = [f"reset to run again: {', '.join(self.reset)}"] if self.reset else []
        return parts + list(self.kept)


def reset_engine_skipped(
    conn: sa.Connection, ctx: OperationContext, graph: Graph, run_id: int, reason: str, now: datetime, keep: int | None
) -> Resets:
    """Tasks the engine skipped go back to not run, so the repaired run decides them again.

    A row an operator set stays; so does a skipped row another run consumed (B10): deleting it would
    rewrite what that run consumed.
    """
    rows = reads.task_runs_of(conn, run_id)
    operator = _operator_rows(conn, run_id)
    skipped = {
        task_id: row
        for task_id, row in rows.items()
        if row.status == "SKIPPED" and row.attempt_count == 0 and task_id not in operator and task_id != keep
    }
    consumers = _consumers(conn, [row.task_run_id for row in skipped.values()])
    reset, kept = [], []
    for task_id in sorted(skipped, key=lambda i: graph.tasks[i].code if i in graph.tasks else str(i)):
        code = graph.tasks[task_id].code if task_id in graph.tasks else f"task {task_id}"
        consumer = consumers.get(skipped[task_id].task_run_id)
        if consumer is not None:
            kept.append(f"{code}: kept SKIPPED, consumed by {consumer}")
            continue
        transitions.reset_task(conn, pipeline_run_id=run_id, task_id=task_id, actor=ctx.actor, reason=reason, now=now)
        reset.append(code)
    return Resets(tuple(reset), tuple(kept))
