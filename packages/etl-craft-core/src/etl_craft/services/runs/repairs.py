"""Repairs under an existing run: --rerun, --force, and tasks an external orchestrator clears.

The run is reopened first when it has ended (recorded REOPEN); it ends again from its tasks'
statuses once every task is settled, never while a task its repaired failure skipped is left to run.
"""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ENDED_WELL, UNFINISHED_RUN, InterventionAction
from etl_craft.core.errors import ExitCode, RunStateError, StaleTransitionError
from etl_craft.engine import reads, transitions
from etl_craft.engine.reads import RunRow
from etl_craft.engine.records.actions import record_request
from etl_craft.execution.graph import Graph
from etl_craft.execution.processes.identity import OwnerId
from etl_craft.execution.run_loop import claim
from etl_craft.execution.run_loop.outcome import settle
from etl_craft.execution.run_loop.scope import Ending, Scope, Supervised
from etl_craft.execution.run_loop.signals import StopSignals
from etl_craft.services.context import OperationContext
from etl_craft.services.runs.request import Progress, RunRequest, ending_result, result, summary, supervise
from etl_craft.services.views import OperationResult


def _bypass_reason(ctx: OperationContext, request: RunRequest) -> str:
    """Why a repair's dependencies on other pipelines are recorded BYPASSED, not judged."""
    how = "--force" if request.force else "--rerun" if request.rerun else "the orchestrator"
    return f"{how} by {ctx.actor.name}" + (f": {request.reason}" if request.reason else "")


def orchestrated_task(
    ctx: OperationContext,
    graph: Graph,
    run: RunRow,
    task_id: int,
    status: str,
    request: RunRequest,
    owner: OwnerId,
    progress: Progress,
    signals: StopSignals,
) -> OperationResult:
    """Remote mode: the orchestrator decided the task runs now (it owns dependencies and retries).
    A task cleared in an older DAG run reopens that exact run (its key), never the newest (B11)."""
    node = graph.tasks[task_id]
    if run.status not in UNFINISHED_RUN:
        if run.status == "CANCELLED":
            raise RunStateError(
                f"run {run.pipeline_run_id}",
                found="it was CANCELLED",
                expected="a run to repair",
                remedy="trigger a new DAG run",
            )
        with ctx.db.write() as conn:
            transitions.reopen_run(
                conn,
                run.pipeline_run_id,
                actor=ctx.actor,
                reason="task cleared by the orchestrator",
                now=utc_now(),
                task_id=task_id,
            )
    record_request(
        ctx.db,
        ctx.actor,
        "run",
        request.arguments(),
        pipeline_id=graph.pipeline.pipeline_id,
        pipeline_run_id=run.pipeline_run_id,
        task_id=task_id,
    )
    again = frozenset({task_id}) if status != "NOT RUN" else frozenset()
    scope = Scope(
        tasks=frozenset({task_id}),
        own_run=False,
        finalize=False,
        check_dependencies=False,
        again=again,
        resume_failed=False,
        force=request.force,
        rerun=request.rerun,
        bypass_reason=f"--{'force' if request.force else 'rerun'} by {ctx.actor.name}: {request.reason or ''}".rstrip(
            ": "
        ),
    )
    outcome = supervise(ctx, graph, run.pipeline_run_id, owner, scope, signals, progress, request)
    if outcome.ending is Ending.SETTLED:
        state = outcome.states.get(task_id)
        task_status = state.phase.value if state else "NOT RUN"
        code = ExitCode.SUCCESS if task_status in ENDED_WELL else ExitCode.FAILURE
        message = summary(graph.pipeline, run.pipeline_run_id, "IN-PROGRESS", f"{node.code} {task_status}")
        return result(ctx, graph.pipeline, task_status, message, code, run.pipeline_run_id, task_id, node.code)
    return ending_result(ctx, graph.pipeline, run.pipeline_run_id, outcome, task_id, node.code)


def intervene(
    conn: sa.Connection,
    run_id: int,
    task_id: int,
    action: InterventionAction,
    ctx: OperationContext,
    request: RunRequest,
    from_status: str,
) -> None:
    transitions.record_intervention(
        conn,
        run_id=run_id,
        action=action,
        actor=ctx.actor,
        reason=request.reason or "--force",
        now=utc_now(),
        task_id=task_id,
        from_status=None if from_status == "NOT RUN" else from_status,
    )


def repair(
    ctx: OperationContext,
    graph: Graph,
    run: RunRow,
    task_id: int,
    task_status: str,
    request: RunRequest,
    owner: OwnerId,
    progress: Progress,
    signals: StopSignals,
) -> OperationResult:
    """--rerun and --force: run the task again under the run (reopening an ended run first). The run
    ends again from its tasks' statuses once every task is settled; tasks a repaired failure had
    skipped run again first (with --with-downstream in this call, else by the next run)."""
    pipeline = graph.pipeline
    run_id = run.pipeline_run_id
    node = graph.tasks[task_id]
    downstream = graph.downstream_of(task_id) if request.with_downstream else set()
    now = utc_now()
    try:
        with ctx.db.write() as conn:
            if run.status not in UNFINISHED_RUN:
                transitions.reopen_run(
                    conn, run_id, actor=ctx.actor, reason=request.reason or "--force", now=now, task_id=task_id
                )
            claim.resume(conn, run_id, owner, now)
            if request.rerun:
                intervene(conn, run_id, task_id, InterventionAction.RERUN, ctx, request, task_status)
            _reset_skipped(conn, graph, run_id, downstream, ctx, request)
    except StaleTransitionError as stale:
        return result(
            ctx,
            pipeline,
            "INCOMPLETE",
            f"{pipeline.pipeline_code}: run {run_id} can't be repaired now ({stale.found}); nothing was changed",
            ExitCode.INCOMPLETE,
            run_id,
            task_id,
            node.code,
        )
    record_request(
        ctx.db,
        ctx.actor,
        "run",
        request.arguments(),
        pipeline_id=pipeline.pipeline_id,
        pipeline_run_id=run_id,
        task_id=task_id,
    )
    scope = Scope(
        tasks=frozenset({task_id} | downstream),
        own_run=True,
        finalize=bool(downstream),
        check_dependencies=bool(downstream),
        again=frozenset({task_id} | downstream),
        resume_failed=False,
        force=request.force,
        rerun=request.rerun,
        bypass_reason=f"--{'force' if request.force else 'rerun'} by {ctx.actor.name}: {request.reason or ''}".rstrip(
            ": "
        ),
    )
    outcome = supervise(ctx, graph, run_id, owner, scope, signals, progress, request)
    if outcome.ending is Ending.SETTLED and not downstream:
        outcome = _after_single_repair(ctx, graph, run_id, task_id, request, owner, outcome)
    elif outcome.ending is Ending.SETTLED:
        claim.give_back(ctx.db, run_id, owner)
    return ending_result(ctx, pipeline, run_id, outcome, task_id, node.code)


def _reset_skipped(
    conn: sa.Connection, graph: Graph, run_id: int, task_ids: set[int], ctx: OperationContext, request: RunRequest
) -> list[str]:
    """Engine-skipped tasks back to not run; a skipped row another run consumed stays as it is (B10)."""
    reset = []
    task_runs = reads.task_runs_of(conn, run_id)
    for later in sorted(task_ids):
        row = task_runs.get(later)
        if row is None or row.status != "SKIPPED" or row.attempt_count or reads.consumed(conn, row.task_run_id):
            continue
        transitions.reset_task(
            conn, pipeline_run_id=run_id, task_id=later, actor=ctx.actor, reason=request.reason or "", now=utc_now()
        )
        reset.append(graph.tasks[later].code)
    return reset


def _after_single_repair(
    ctx: OperationContext,
    graph: Graph,
    run_id: int,
    task_id: int,
    request: RunRequest,
    owner: OwnerId,
    outcome: Supervised,
) -> Supervised:
    """A repaired task that succeeded makes what its failure skipped runnable again (S2.A.6); the run
    ends again only when nothing is left to run."""
    node = graph.tasks[task_id]
    reset: list[str] = []
    state = outcome.states.get(task_id)
    with ctx.db.write() as conn:
        if state is not None and state.phase.value == "SUCCESS":
            reset = _reset_skipped(conn, graph, run_id, graph.downstream_of(task_id), ctx, request)
    verdict = settle(ctx.db, graph, run_id, owner_id=str(owner))
    if verdict is not None:
        return Supervised(Ending.FINISHED, verdict.status.value, verdict.message, outcome.states)
    claim.give_back(ctx.db, run_id, owner)
    if reset:
        message = (
            f"{node.code} succeeded; {len(reset)} task(s) that were skipped because of its failure still need to run "
            f"({', '.join(reset)}): etl-craft run --pipeline_code {graph.code} resumes them"
        )
    else:
        message = (
            f"{node.code} {state.phase.value if state else 'NOT RUN'}; other tasks still need to run: "
            f"etl-craft run --pipeline_code {graph.code} resumes them"
        )
    return Supervised(Ending.SETTLED, "IN-PROGRESS", message, outcome.states)
