"""`run`: a whole pipeline run in the foreground, one task under a run, a rerun, or a skipped run."""

from __future__ import annotations

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ENDED_WELL, UNFINISHED_RUN, InterventionAction, RunStatus, TriggerKind
from etl_craft.core.errors import (
    ExitCode,
    RunRefusedError,
    RunStateError,
    StaleTransitionError,
    UnknownCodeError,
)
from etl_craft.core.text import did_you_mean
from etl_craft.engine import locks, reads, transitions
from etl_craft.engine.reads import PipelineRow, RunRow
from etl_craft.engine.records.actions import record_request
from etl_craft.execution.gates.admission import Admitted, admit_held_run, admit_lock
from etl_craft.execution.graph import Graph, TaskNode, load_graph
from etl_craft.execution.processes.identity import OwnerId, my_owner_id
from etl_craft.execution.run_loop import claim
from etl_craft.execution.run_loop.leases import lease_until
from etl_craft.execution.run_loop.reconcile import reconcile
from etl_craft.execution.run_loop.scope import Ending, Scope, Supervised
from etl_craft.execution.run_loop.signals import StopSignals
from etl_craft.services.context import OperationContext
from etl_craft.services.runs import remote, repairs, steps
from etl_craft.services.runs.request import (
    Progress,
    RunRequest,
    config_fingerprint,
    ending_result,
    paused,
    project_today,
    result,
    summary,
    supervise,
)
from etl_craft.services.runs.selection import RunSelector, required_run, selected_run
from etl_craft.services.targets.warehouse_file import require_warehouse_file
from etl_craft.services.views import OperationResult

ADMIT_LOCK_SECONDS = 60.0


def execute_run(ctx: OperationContext, request: RunRequest, progress: Progress = lambda _l: None) -> OperationResult:
    """The `run` command: every mode goes through here."""
    request.check()
    whole_run = request.task_code is None and not (request.init_only or request.finalize_only or request.skip)
    if ctx.config.orchestration.mode == "remote" and (whole_run or request.force):
        raise RunRefusedError(
            "etl-craft run in remote mode",
            found="a whole-pipeline run or --force",
            expected="one task at a time, started by the external orchestrator",
            remedy="run the generated DAG, or switch Orchestration.Mode to local",
        )
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, request.pipeline_code)
        graph = load_graph(conn, pipeline)
    stopped = paused(ctx, pipeline)
    if stopped:
        return stopped
    reconcile(ctx.db, pipeline_id=pipeline.pipeline_id)
    if request.skip:
        return _skip_run(ctx, pipeline, request)
    if request.finalize_only:
        return steps.finalize_only(ctx, graph, request)
    require_warehouse_file(ctx, graph)
    with StopSignals().installed() as signals:
        if request.init_only:
            if ctx.config.orchestration.mode == "remote":
                with ctx.db.read() as conn:
                    waits_for = remote.upstream_pipelines(
                        graph, reads.pipeline_dependencies(conn, pipeline.pipeline_id)
                    )
                remote.require_remote_support(graph, waits_for)
            return steps.init_only(ctx, pipeline, request, signals, progress)
        if request.task_code is None:
            return _whole_run(ctx, graph, request, progress, signals)
        return _task_run(ctx, graph, request, progress, signals)


def _skip_run(ctx: OperationContext, pipeline: PipelineRow, request: RunRequest) -> OperationResult:
    now = utc_now()
    with ctx.db.write() as conn:
        run_id = transitions.create_run(
            conn,
            pipeline_id=pipeline.pipeline_id,
            status=RunStatus.SKIPPED,
            trigger_kind=TriggerKind.MANUAL,
            actor=ctx.actor,
            now=now,
            run_key=request.run_key,
            run_date=project_today(ctx),
        )
    record_request(
        ctx.db, ctx.actor, "run", request.arguments(), pipeline_id=pipeline.pipeline_id, pipeline_run_id=run_id
    )
    message = f"recorded as skipped by {ctx.actor.name}: {request.reason}"
    return result(ctx, pipeline, "SKIPPED", summary(pipeline, run_id, "SKIPPED", message), ExitCode.SUCCESS, run_id)


def _admit_whole_run(
    ctx: OperationContext, graph: Graph, request: RunRequest, owner: OwnerId, signals: StopSignals, progress: Progress
) -> RunRow | OperationResult:
    """The run this supervisor will own: the selected or single unfinished run (resumed, its gates
    not judged again), else a new run admitted through its pipeline gates."""
    pipeline = graph.pipeline
    now = utc_now()
    with locks.hold(ctx.db, admit_lock(pipeline.pipeline_id), timeout=ADMIT_LOCK_SECONDS), ctx.db.write() as conn:
        run = selected_run(conn, pipeline, RunSelector(request.run_id, request.run_key))
        _refuse_unresumable(pipeline, run, request)
        try:
            if run is None:
                run_id = transitions.create_run(
                    conn,
                    pipeline_id=pipeline.pipeline_id,
                    status=RunStatus.QUEUED,
                    trigger_kind=TriggerKind.MANUAL,
                    actor=ctx.actor,
                    now=now,
                    run_key=request.run_key,
                    run_date=request.run_date or project_today(ctx),
                    owner_id=str(owner),
                    lease_until=lease_until(now),
                    config_sha256=config_fingerprint(ctx),
                )
            elif run.status == "QUEUED":
                run_id = run.pipeline_run_id
                claim.hold(conn, run_id, owner, now)
            else:
                run_id = run.pipeline_run_id
                claim.resume(conn, run_id, owner, now)
        except StaleTransitionError as stale:
            return result(
                ctx,
                pipeline,
                "INCOMPLETE",
                f"{pipeline.pipeline_code}: another process supervises the run ({stale.found}); "
                "this one changed nothing",
                ExitCode.INCOMPLETE,
            )
    if run is None or run.status == "QUEUED":
        admitted = admit_held_run(
            ctx.db,
            ctx.config,
            pipeline,
            run_id,
            str(owner),
            ctx.actor,
            signals,
            progress,
            bypass_reason=f"--force by {ctx.actor.name}" if request.force else None,
        )
        if admitted.status != "IN-PROGRESS":
            return _not_admitted(ctx, pipeline, admitted, owner)
    with ctx.db.read() as conn:
        found = reads.run(conn, run_id)
    assert found is not None
    return found


def _not_admitted(ctx: OperationContext, pipeline: PipelineRow, admitted: Admitted, owner: OwnerId) -> OperationResult:
    if admitted.status == "SKIPPED":
        message = summary(pipeline, admitted.run_id, "SKIPPED", admitted.reason)
        return result(ctx, pipeline, "SKIPPED", message, ExitCode.SUCCESS, admitted.run_id)
    claim.give_back(ctx.db, admitted.run_id, owner)
    message = summary(pipeline, admitted.run_id, "QUEUED", f"{admitted.reason}; the next run resumes the wait")
    return result(ctx, pipeline, "INCOMPLETE", message, ExitCode.INCOMPLETE, admitted.run_id)


def _refuse_unresumable(pipeline: PipelineRow, run: RunRow | None, request: RunRequest) -> None:
    if run is not None and run.status not in UNFINISHED_RUN:
        raise RunStateError(
            f"run {run.pipeline_run_id} of {pipeline.pipeline_code}",
            found=f"it ended {run.status}",
            expected="an unfinished run to resume",
            remedy="start a new run without --run-id, or repair it with etl-craft run --task_code T --rerun",
        )
    if run is not None and run.trigger_kind == "BACKFILL" and request.run_id is None:
        raise RunStateError(
            f"pipeline {pipeline.pipeline_code}",
            found=f"backfill run {run.pipeline_run_id} as of {run.run_date} in progress",
            expected="no backfill in progress",
            remedy="a plain run waits until it ends, or cancel it: etl-craft cancel --pipeline_code "
            f"{pipeline.pipeline_code} --run-id {run.pipeline_run_id}",
        )


def _whole_run(
    ctx: OperationContext, graph: Graph, request: RunRequest, progress: Progress, signals: StopSignals
) -> OperationResult:
    owner = my_owner_id()
    admitted = _admit_whole_run(ctx, graph, request, owner, signals, progress)
    if isinstance(admitted, OperationResult):
        return admitted
    run_id = admitted.pipeline_run_id
    record_request(
        ctx.db, ctx.actor, "run", request.arguments(), pipeline_id=graph.pipeline.pipeline_id, pipeline_run_id=run_id
    )
    progress(
        f"{graph.code}: pipeline_run_id={run_id} run_date={admitted.run_date} started ({len(graph.tasks)} task(s))"
    )
    return ending_result(
        ctx,
        graph.pipeline,
        run_id,
        supervise(ctx, graph, run_id, owner, Scope(force=request.force), signals, progress, request),
    )


def _task_node(graph: Graph, request: RunRequest) -> TaskNode:
    node = graph.by_code(request.task_code or "")
    if node is None:
        raise UnknownCodeError(
            f"task {graph.code}.{request.task_code}",
            found="no active task with this code in the pipeline",
            expected="the code of an active task of the pipeline",
            remedy="see etl-craft steps --pipeline_code "
            + graph.code
            + did_you_mean(request.task_code or "", [t.code for t in graph.tasks.values()]),
        )
    return node


def _nothing_to_start(
    ctx: OperationContext, pipeline: PipelineRow, run: RunRow, node: TaskNode, status: str, repair: bool
) -> OperationResult | None:
    """The result of a task run that is running already, or that ended well and is not repaired."""
    run_id = run.pipeline_run_id
    if status == "IN-PROGRESS":
        message = summary(pipeline, run_id, "IN-PROGRESS", f"{node.code} is already in progress; nothing was started")
        return result(ctx, pipeline, "INCOMPLETE", message, ExitCode.SUCCESS, run_id, node.task_id, node.code)
    if not repair and status in ENDED_WELL:
        message = summary(pipeline, run_id, run.status, f"{node.code} is already {status}; nothing was started")
        return result(ctx, pipeline, status, message, ExitCode.SUCCESS, run_id, node.task_id, node.code)
    return None


def _refuse_ended_run(pipeline: PipelineRow, run: RunRow, request: RunRequest, repair: bool) -> None:
    if run.status == "CANCELLED" and request.force:
        raise RunStateError(
            f"run {run.pipeline_run_id}",
            found="it was CANCELLED",
            expected="a run that can be repaired",
            remedy=f"start a new run: etl-craft run --pipeline_code {pipeline.pipeline_code}",
        )
    if run.status not in UNFINISHED_RUN and not repair:
        raise RunStateError(
            f"run {run.pipeline_run_id} of {pipeline.pipeline_code}",
            found=f"it ended {run.status}",
            expected="an unfinished run",
            remedy="repair a task of an ended run with --rerun --reason or --force",
        )


def _task_scope(ctx: OperationContext, node: TaskNode, request: RunRequest) -> Scope:
    """One task under a run that goes on: its dependencies judged unless the operator ignores them."""
    return Scope(
        tasks=frozenset({node.task_id}),
        own_run=False,
        finalize=False,
        check_dependencies=not request.ignore_dependencies,
        resume_failed=True,
        bypass_reason=f"--ignore-dependencies by {ctx.actor.name}: {request.reason}"
        if request.ignore_dependencies
        else None,
    )


def _task_result(
    ctx: OperationContext, pipeline: PipelineRow, run: RunRow, node: TaskNode, outcome: Supervised
) -> OperationResult:
    run_id = run.pipeline_run_id
    if outcome.ending is Ending.SETTLED:
        state = outcome.states.get(node.task_id)
        task_status = state.phase.value if state else "NOT RUN"
        code = ExitCode.SUCCESS if task_status in ENDED_WELL else ExitCode.FAILURE
        message = summary(pipeline, run_id, "IN-PROGRESS", f"{node.code} {task_status}")
        return result(ctx, pipeline, task_status, message, code, run_id, node.task_id, node.code)
    if outcome.ending is Ending.WAITING:
        message = summary(pipeline, run_id, run.status, f"{node.code} recorded nothing: {outcome.message}")
        return result(ctx, pipeline, "WAITING", message, ExitCode.WAITING, run_id, node.task_id, node.code)
    return ending_result(ctx, pipeline, run_id, outcome, node.task_id, node.code)


def _task_run(
    ctx: OperationContext, graph: Graph, request: RunRequest, progress: Progress, signals: StopSignals
) -> OperationResult:
    pipeline = graph.pipeline
    node = _task_node(graph, request)
    owner = my_owner_id()
    with ctx.db.read() as conn:
        run = required_run(conn, pipeline, RunSelector(request.run_id, request.run_key))
        task_run = reads.task_runs_of(conn, run.pipeline_run_id).get(node.task_id)
    status = task_run.status if task_run else "NOT RUN"
    run_id = run.pipeline_run_id
    repair = request.rerun or request.force
    if ctx.config.orchestration.mode == "remote" and status != "IN-PROGRESS":
        return repairs.orchestrated_task(ctx, graph, run, node.task_id, status, request, owner, progress, signals)
    finished = _nothing_to_start(ctx, pipeline, run, node, status, repair)
    if finished is not None:
        return finished
    _refuse_ended_run(pipeline, run, request, repair)
    if repair:
        return repairs.repair(ctx, graph, run, node.task_id, status, request, owner, progress, signals)
    if request.ignore_dependencies:
        with ctx.db.write() as conn:
            repairs.intervene(conn, run_id, node.task_id, InterventionAction.IGNORE_DEPENDENCIES, ctx, request, status)
    record_request(
        ctx.db,
        ctx.actor,
        "run",
        request.arguments(),
        pipeline_id=pipeline.pipeline_id,
        pipeline_run_id=run_id,
        task_id=node.task_id,
    )
    outcome = supervise(ctx, graph, run_id, owner, _task_scope(ctx, node, request), signals, progress, request)
    return _task_result(ctx, pipeline, run, node, outcome)
