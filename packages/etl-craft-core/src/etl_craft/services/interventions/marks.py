"""`mark`: an operator sets a task's status under a run, or ends a run with a status (local mode).

A task of an ended run reopens the run first (REOPEN) and what the engine skipped is reset, so the
repaired run decides it again; `--stale` first reconciles the task's attempts whose owner is gone.
Marking a run is refused while any process still runs it or one of its tasks (B16).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import OWN_TASK_END, OWNED_ATTEMPT, RunStatus
from etl_craft.core.errors import RunStateError, UsageError
from etl_craft.engine import reads, transitions
from etl_craft.engine.reads import AttemptRow, PipelineRow, RunRow
from etl_craft.engine.records.actions import record_request
from etl_craft.execution.graph import Graph, TaskNode, load_graph
from etl_craft.execution.run_loop.outcome import settle
from etl_craft.execution.run_loop.reconcile import reconcile
from etl_craft.services.context import OperationContext
from etl_craft.services.interventions.rules import (
    Resets,
    codes_of_task_runs,
    describe_attempt,
    live_owner,
    local_only,
    operation_result,
    other_unfinished,
    required_reason,
    reset_engine_skipped,
    summary,
    task_node,
    utc_text,
)
from etl_craft.services.runs.selection import RunSelector, required_run
from etl_craft.services.views import OperationResult


@dataclass(frozen=True)
class MarkRequest:
    pipeline_code: str
    status: str
    reason: str
    task_code: str | None = None
    rows: int | None = None
    stale: bool = False
    run_id: int | None = None
    run_key: str | None = None
    new_run: bool = False  # record a stand-in run instead of marking an existing one

    @property
    def selector(self) -> RunSelector:
        return RunSelector(self.run_id, self.run_key)

    def arguments(self) -> dict[str, object]:
        return asdict(self)

    def check(self) -> None:
        required_reason(self.reason, "mark")
        rules = [
            (self.status not in OWN_TASK_END, f"--status {self.status}", "one of " + ", ".join(OWN_TASK_END)),
            (self.stale and self.task_code is None, "--stale without --task_code", "--stale with --task_code"),
            (self.rows is not None and self.task_code is None, "--rows without --task_code", "--rows with a task"),
            (self.new_run and self.stale, "--new-run with --stale", "--stale only on an existing run"),
            (
                self.new_run and (self.run_id is not None or self.run_key is not None),
                "--new-run with a run selector",
                "--new-run alone: it records a new run",
            ),
            (self.rows is not None and self.rows < 0, f"--rows {self.rows}", "a row count of 0 or more"),
        ]
        for broken, found, expected in rules:
            if broken:
                raise UsageError("etl-craft mark", found=found, expected=expected)
        self.selector  # noqa: B018 - refuses --run-id with --run-key


def mark(ctx: OperationContext, request: MarkRequest) -> OperationResult:
    """`mark`: set a task's status under the selected run, or end the run itself with a status."""
    request.check()
    local_only(ctx, "mark")
    if request.new_run:
        from etl_craft.services.interventions.stand_in import record_stand_in

        return record_stand_in(ctx, request)
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, request.pipeline_code)
        graph = node = None
        if request.task_code is not None:
            graph = load_graph(conn, pipeline)
            node = task_node(graph, request.task_code)
        run = required_run(conn, pipeline, request.selector)
    if graph is None or node is None:
        return _mark_run(ctx, pipeline, run, request)
    return _mark_task(ctx, graph, run, node, request)


def _mark_run(ctx: OperationContext, pipeline: PipelineRow, run: RunRow, request: MarkRequest) -> OperationResult:
    run_id = run.pipeline_run_id
    now = utc_now()
    with ctx.db.read() as conn:
        owned = [a for rows in reads.attempts_of_run(conn, run_id).values() for a in rows if a.status in OWNED_ATTEMPT]
        codes = codes_of_task_runs(conn, run_id)
    if owned or (run.status == "IN-PROGRESS" and live_owner(run, now)):
        if owned:
            found = "task(s) running: " + "; ".join(describe_attempt(a, codes.get(a.task_run_id, "?")) for a in owned)
        else:
            found = f"it is supervised by {run.owner_id} (lease until {utc_text(run.lease_expires_at)})"
        raise RunStateError(
            f"run {run_id} of {pipeline.pipeline_code}",
            found=found,
            expected="no process running the run or any of its tasks",
            remedy="wait for it to end, or stop it with etl-craft cancel --pipeline_code "
            f"{pipeline.pipeline_code} --run-id {run_id} --reason '...'; if that process is gone, "
            f"etl-craft reconcile --pipeline_code {pipeline.pipeline_code} releases what it held",
        )
    reason = required_reason(request.reason, "mark")
    with ctx.db.write() as conn:
        previous = transitions.mark_run(
            conn, run_id, status=RunStatus(request.status), actor=ctx.actor, reason=reason, now=now
        )
    record_request(
        ctx.db, ctx.actor, "mark", request.arguments(), pipeline_id=pipeline.pipeline_id, pipeline_run_id=run_id
    )
    message = summary(
        pipeline.pipeline_code,
        run_id,
        request.status,
        f"marked {request.status} by {ctx.actor.name}: {reason} (was {previous.value}); its tasks are unchanged",
    )
    return operation_result(ctx, pipeline, message, run_id)


def _task_attempts(ctx: OperationContext, run_id: int, task_id: int) -> list[AttemptRow]:
    with ctx.db.read() as conn:
        row = reads.task_runs_of(conn, run_id).get(task_id)
        return reads.attempts_of_run(conn, run_id).get(row.task_run_id, []) if row else []


def _markable_attempts(
    ctx: OperationContext, pipeline: PipelineRow, run_id: int, node: TaskNode, stale: bool
) -> list[AttemptRow]:
    """The task's queued attempts (which a --stale mark cancels); refused while any attempt is live."""
    attempts = _task_attempts(ctx, run_id, node.task_id)
    owned = [a for a in attempts if a.status in OWNED_ATTEMPT]
    queued = [a for a in attempts if a.status == "QUEUED"]
    if owned or (queued and not stale):
        live = "; ".join(describe_attempt(a, node.code) for a in owned + queued)
        raise RunStateError(
            f"task {pipeline.pipeline_code}.{node.code} of run {run_id}",
            found=f"it has a live attempt: {live}" + ("; a live lease holds it" if stale else ""),
            expected="a task with no claimed, running or queued attempt",
            remedy=(
                "wait for it to end, or cancel the run"
                if stale
                else "wait for it to end, or cancel the run; if its process is known to be gone, "
                "add --stale (its expired attempts are reconciled first)"
            ),
        )
    return queued


def _mark_task(
    ctx: OperationContext, graph: Graph, run: RunRow, node: TaskNode, request: MarkRequest
) -> OperationResult:
    pipeline = graph.pipeline
    run_id = run.pipeline_run_id
    reason = required_reason(request.reason, "mark")
    notes: list[str] = []
    if request.stale:
        reason = f"stale: {reason}"
        report = reconcile(ctx.db, pipeline_id=pipeline.pipeline_id, task_id=node.task_id)
        notes += [
            f"reconciled first: {lost.message}" + ("; its task process was stopped" if lost.stopped_process else "")
            for lost in report.lost
        ]
    queued = _markable_attempts(ctx, pipeline, run_id, node, request.stale)
    now = utc_now()
    with ctx.db.write() as conn:
        current = reads.run(conn, run_id)
        assert current is not None
        reopened = None
        if RunStatus(current.status).terminal:
            other_unfinished(conn, current)
            reopened = transitions.reopen_run(
                conn, run_id, actor=ctx.actor, reason=reason, now=now, task_id=node.task_id
            )
        for attempt in queued:  # only with --stale: a queued attempt has no process to wait for
            transitions.cancel_attempt(conn, attempt.attempt_id, actor=ctx.actor, reason=reason, now=now)
            notes.append(f"queued attempt {attempt.attempt_number} cancelled")
        previous = transitions.mark_task(
            conn,
            pipeline_run_id=run_id,
            task_id=node.task_id,
            status=request.status,
            actor=ctx.actor,
            reason=reason,
            now=now,
            rows=request.rows,
        )
        resets = (
            reset_engine_skipped(conn, ctx, graph, run_id, reason, now, keep=node.task_id) if reopened else Resets()
        )
    record_request(
        ctx.db,
        ctx.actor,
        "mark",
        request.arguments(),
        pipeline_id=pipeline.pipeline_id,
        pipeline_run_id=run_id,
        task_id=node.task_id,
    )
    parts = [f"{node.code} marked {request.status} by {ctx.actor.name}: {reason} (was {previous or 'NOT RUN'})"]
    parts += notes
    if reopened is not None:
        parts.append(f"the run was reopened (was {reopened.value})")
    parts += resets.describe()
    parts += _has_data_note(graph, node, request)
    verdict = settle(ctx.db, graph, run_id, owner_id=None)
    if verdict is not None:
        again = " again" if reopened is not None else ""
        parts.append(
            f"the run ended {verdict.status.value}{again}" + (f": {verdict.message}" if verdict.message else "")
        )
        status = verdict.status.value
    else:
        status = "IN-PROGRESS"
        if reopened is not None or resets.reset:
            parts.append(f"etl-craft run --pipeline_code {pipeline.pipeline_code} resumes the run")
    return operation_result(
        ctx, pipeline, summary(pipeline.pipeline_code, run_id, status, "; ".join(parts)), run_id, node
    )


def _has_data_note(graph: Graph, node: TaskNode, request: MarkRequest) -> list[str]:
    """A SUCCESS mark without --rows wrote no rows as far as HAS_DATA dependencies can tell."""
    if request.status != "SUCCESS" or request.rows is not None:
        return []
    waiting = sorted(
        n.code
        for n in graph.tasks.values()
        for e in graph.local_edges(n.task_id)
        if e.upstream == node.task_id and e.type.value == "HAS_DATA"
    )
    if not waiting:
        return []
    return [f"without --rows its HAS_DATA dependents see no data: {', '.join(waiting)}"]
