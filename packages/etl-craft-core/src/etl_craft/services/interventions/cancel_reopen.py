"""`cancel` and `reopen`: an operator ends a run (stopping its task processes) or opens an ended one
again for repairs."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import OWNED_ATTEMPT, RunStatus
from etl_craft.core.errors import RunStateError, UsageError
from etl_craft.engine import reads, transitions
from etl_craft.engine.reads import AttemptRow
from etl_craft.engine.records.actions import record_request
from etl_craft.execution.graph import load_graph
from etl_craft.execution.processes.identity import OwnerId, is_alive, signal_group
from etl_craft.services.context import OperationContext
from etl_craft.services.interventions.rules import (
    codes_of_task_runs,
    local_only,
    operation_result,
    other_unfinished,
    required_reason,
    reset_engine_skipped,
    summary,
)
from etl_craft.services.runs.selection import RunSelector, required_run
from etl_craft.services.views import OperationResult


@dataclass(frozen=True)
class RunControlRequest:
    """`cancel` and `reopen`: which run of which pipeline, and why."""

    pipeline_code: str
    reason: str
    run_id: int | None = None
    run_key: str | None = None

    @property
    def selector(self) -> RunSelector:
        return RunSelector(self.run_id, self.run_key)

    def arguments(self) -> dict[str, object]:
        return asdict(self)


# --- cancel and reopen ------------------------------------------------------------------------------


def cancel(ctx: OperationContext, request: RunControlRequest) -> OperationResult:
    """`cancel`: the run and its live attempts end CANCELLED; their supervisor stops the processes."""
    local_only(ctx, "cancel")
    reason = required_reason(request.reason, "cancel")
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, request.pipeline_code)
        run = required_run(conn, pipeline, request.selector)
    run_id = run.pipeline_run_id
    if RunStatus(run.status).terminal:
        raise RunStateError(
            f"run {run_id} of {pipeline.pipeline_code}",
            found=f"it ended {run.status}",
            expected="an unfinished run to cancel",
            remedy="nothing to cancel; etl-craft mark changes an ended run's status",
        )
    with ctx.db.write() as conn:
        cancelled = transitions.cancel_run(conn, run_id, actor=ctx.actor, reason=reason, now=utc_now())
    record_request(
        ctx.db, ctx.actor, "cancel", request.arguments(), pipeline_id=pipeline.pipeline_id, pipeline_run_id=run_id
    )
    parts = [f"cancelled by {ctx.actor.name}: {reason} (was {run.status})"]
    if cancelled:
        with ctx.db.read() as conn:
            codes = codes_of_task_runs(conn, run_id)
            rows = [a for a in (reads.attempt(conn, i) for i in sorted(cancelled)) if a is not None]
        asked = [a for a in rows if a.status in OWNED_ATTEMPT and a.cancel_requested_at is not None]
        rows = [a for a in rows if a not in asked]
        parts += [
            f"{len(group)} attempt(s) {what}: "
            + ", ".join(f"{codes.get(a.task_run_id, '?')} (attempt {a.attempt_number})" for a in group)
            for group, what in ((rows, "cancelled"), (asked, "asked to stop: their worker ends them CANCELLED"))
            if group
        ]
        orphans = _stop_orphans(rows)
        if orphans:
            parts.append(f"stopped {orphans} task process(es) whose supervisor is gone")
        if len(rows) > orphans:
            parts.append("the process supervising the run stops the others")
    return operation_result(
        ctx, pipeline, summary(pipeline.pipeline_code, run_id, "CANCELLED", "; ".join(parts)), run_id
    )


def _stop_orphans(attempts: list[AttemptRow]) -> int:
    """SIGTERM the task processes of cancelled attempts whose owner is verifiably gone on this host
    (a live owner stops its own children when it sees the cancel)."""
    stopped = 0
    for attempt in attempts:
        owner = OwnerId.parse(attempt.owner_id or "")
        if owner is None or not owner.verifiably_dead() or not attempt.pid:
            continue
        if is_alive(attempt.pid, attempt.process_start) and signal_group(attempt.pid, attempt.process_start, 15):
            stopped += 1
    return stopped


def reopen(ctx: OperationContext, request: RunControlRequest) -> OperationResult:
    """`reopen`: an ended run back to IN-PROGRESS for a repair; what the engine skipped may run again."""
    local_only(ctx, "reopen")
    reason = required_reason(request.reason, "reopen")
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, request.pipeline_code)
        if not request.selector.explicit:
            recent = reads.recent_runs(conn, pipeline.pipeline_id, limit=5)
            listed = "; ".join(f"run {r.pipeline_run_id} {r.status} key={r.run_key}" for r in recent) or "no runs yet"
            raise UsageError(
                "etl-craft reopen",
                found="no --run-id or --run-key",
                expected="the ended run to reopen, named exactly",
                remedy=f"add --run-id N; recent runs of {pipeline.pipeline_code}: {listed}",
            )
        graph = load_graph(conn, pipeline)
        run = required_run(conn, pipeline, request.selector)
        run_id = run.pipeline_run_id
        if not RunStatus(run.status).terminal:
            raise RunStateError(
                f"run {run_id} of {pipeline.pipeline_code}",
                found=f"it is {run.status}",
                expected="an ended run",
                remedy=f"it can be resumed as it is: etl-craft run --pipeline_code {pipeline.pipeline_code}",
            )
        other_unfinished(conn, run)
    now = utc_now()
    with ctx.db.write() as conn:
        previous = transitions.reopen_run(conn, run_id, actor=ctx.actor, reason=reason, now=now)
        resets = reset_engine_skipped(conn, ctx, graph, run_id, reason, now, keep=None)
    record_request(
        ctx.db, ctx.actor, "reopen", request.arguments(), pipeline_id=pipeline.pipeline_id, pipeline_run_id=run_id
    )
    parts = [f"reopened by {ctx.actor.name}: {reason} (was {previous.value})", *resets.describe()]
    parts.append(f"etl-craft run --pipeline_code {pipeline.pipeline_code} resumes it")
    return operation_result(
        ctx, pipeline, summary(pipeline.pipeline_code, run_id, "IN-PROGRESS", "; ".join(parts)), run_id
    )
