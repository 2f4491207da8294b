"""`run --init-only` and `run --finalize-only`: the first and last steps of an externally orchestrated run.

`--init-only` starts (or, for a cleared DAG run with the same key, reopens) a run and names it;
every task is then started on its own with `run --task_code`. `--finalize-only` ends the run from
its tasks' statuses: tasks never started are recorded SKIPPED ("not run by the orchestrator").
"""

from __future__ import annotations

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ENDED_WELL, UNFINISHED_RUN, RunStatus, TriggerKind
from etl_craft.core.errors import ExitCode, RunStateError, StaleTransitionError
from etl_craft.engine import locks, reads, transitions
from etl_craft.engine.reads import PipelineRow
from etl_craft.engine.records.actions import record_request
from etl_craft.execution.gates.admission import admit_held_run, admit_lock
from etl_craft.execution.graph import Graph
from etl_craft.execution.processes.identity import my_owner_id
from etl_craft.execution.run_loop import claim
from etl_craft.execution.run_loop.leases import lease_until
from etl_craft.execution.run_loop.outcome import settle
from etl_craft.execution.run_loop.signals import StopSignals
from etl_craft.services.context import OperationContext
from etl_craft.services.runs.request import Progress, RunRequest, config_fingerprint, project_today, result, summary
from etl_craft.services.runs.selection import RunSelector, required_run, selected_run
from etl_craft.services.views import OperationResult

NOT_RUN_BY_ORCHESTRATOR = "not run by the orchestrator"


def init_only(
    ctx: OperationContext, pipeline: PipelineRow, request: RunRequest, signals: StopSignals, progress: Progress
) -> OperationResult:
    """Start or resume a run without running tasks. Locally a new run passes its pipeline gates
    first (a refused gate records it SKIPPED); in remote mode the orchestrator's sensors do that."""
    remote = ctx.config.orchestration.mode == "remote"
    owner = my_owner_id()
    now = utc_now()
    with locks.hold(ctx.db, admit_lock(pipeline.pipeline_id), timeout=60.0), ctx.db.write() as conn:
        run = selected_run(conn, pipeline, RunSelector(request.run_id, request.run_key))
        if run is not None and run.status not in UNFINISHED_RUN:
            if not request.run_key:
                raise RunStateError(
                    f"run {run.pipeline_run_id} of {pipeline.pipeline_code}",
                    found=f"it ended {run.status}",
                    expected="an unfinished run, or a --run-key to start or reopen",
                    remedy="leave out --run-id to start a new run",
                )
            transitions.reopen_run(
                conn, run.pipeline_run_id, actor=ctx.actor, reason="cleared by the orchestrator", now=now
            )
        if run is None:
            try:
                run_id = transitions.create_run(
                    conn,
                    pipeline_id=pipeline.pipeline_id,
                    status=RunStatus.IN_PROGRESS if remote else RunStatus.QUEUED,
                    trigger_kind=TriggerKind.ORCHESTRATOR if remote else TriggerKind.MANUAL,
                    actor=ctx.actor,
                    now=now,
                    run_key=request.run_key,
                    run_date=request.run_date or project_today(ctx),
                    owner_id=None if remote else str(owner),
                    lease_until=None if remote else lease_until(now),
                    config_sha256=config_fingerprint(ctx),
                )
            except StaleTransitionError as stale:
                raise RunStateError(
                    f"pipeline {pipeline.pipeline_code}",
                    found=stale.found or "another run in progress",
                    expected="no other run in progress",
                    remedy=f"finish it first: etl-craft run --pipeline_code {pipeline.pipeline_code} --finalize-only",
                ) from None
        else:
            run_id = run.pipeline_run_id
        queued = run is None and not remote
    if queued:
        admitted = admit_held_run(ctx.db, ctx.config, pipeline, run_id, str(owner), ctx.actor, signals, progress)
        if admitted.status == "SKIPPED":
            message = summary(pipeline, run_id, "SKIPPED", admitted.reason)
            return result(ctx, pipeline, "SKIPPED", message, ExitCode.SUCCESS, run_id)
        claim.give_back(ctx.db, run_id, owner)
        if admitted.status != "IN-PROGRESS":
            message = summary(pipeline, run_id, "QUEUED", f"{admitted.reason}; the next run resumes the wait")
            return result(ctx, pipeline, "INCOMPLETE", message, ExitCode.INCOMPLETE, run_id)
    record_request(
        ctx.db, ctx.actor, "run", request.arguments(), pipeline_id=pipeline.pipeline_id, pipeline_run_id=run_id
    )
    return result(ctx, pipeline, "IN-PROGRESS", f"pipeline_run_id={run_id} IN-PROGRESS", ExitCode.SUCCESS, run_id)


def finalize_only(ctx: OperationContext, graph: Graph, request: RunRequest) -> OperationResult:
    pipeline = graph.pipeline
    now = utc_now()
    with ctx.db.read() as conn:
        run = required_run(conn, pipeline, RunSelector(request.run_id, request.run_key))
    if run.status not in UNFINISHED_RUN and request.run_key and ctx.config.orchestration.mode == "remote":
        # A finalize step delivered again (a worker lost after it finished, a retry): the run
        # ended already; report its outcome and change nothing, so the DAG run keeps its state.
        code = ExitCode.SUCCESS if run.status in ENDED_WELL else ExitCode.FAILURE
        message = summary(pipeline, run.pipeline_run_id, run.status, "ended already; nothing was changed")
        return result(ctx, pipeline, run.status, message, code, run.pipeline_run_id)
    if run.status != "IN-PROGRESS":
        raise RunStateError(
            f"run {run.pipeline_run_id} of {pipeline.pipeline_code}",
            found=f"status {run.status}",
            expected="a run in progress",
            remedy="nothing to finalize",
        )
    run_id = run.pipeline_run_id
    with ctx.db.write() as conn:
        task_runs = reads.task_runs_of(conn, run_id)
        live = [graph.tasks[t].code for t, r in task_runs.items() if r.status == "IN-PROGRESS" and t in graph.tasks]
        if live:
            return result(
                ctx,
                pipeline,
                "INCOMPLETE",
                summary(pipeline, run_id, "IN-PROGRESS", f"still running: {', '.join(live)}; nothing was changed"),
                ExitCode.INCOMPLETE,
                run_id,
            )
        for task_id in graph.tasks:
            if task_id not in task_runs:
                transitions.skip_task(
                    conn, pipeline_run_id=run_id, task_id=task_id, reason=NOT_RUN_BY_ORCHESTRATOR, now=now
                )
    record_request(
        ctx.db, ctx.actor, "run", request.arguments(), pipeline_id=pipeline.pipeline_id, pipeline_run_id=run_id
    )
    verdict = settle(ctx.db, graph, run_id, owner_id=None, actor=ctx.actor)
    if verdict is None:
        raise RunStateError(
            f"run {run_id}",
            found="it changed while being finalized",
            expected="a settled run",
            remedy="look again with etl-craft status",
        )
    code = ExitCode.SUCCESS if verdict.status in (RunStatus.SUCCESS, RunStatus.SKIPPED) else ExitCode.FAILURE
    return result(
        ctx,
        pipeline,
        verdict.status.value,
        summary(pipeline, run_id, verdict.status.value, verdict.message),
        code,
        run_id,
    )
