"""`explain`: why a task is in its state under a run, and what would make it run.

`explain()` is a pure function over a snapshot read in one transaction (the graph, the run, its task
runs, the task's attempts, the gate decisions and waits, the pause), so the same state always gives
the same explanation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

import sqlalchemy as sa

from etl_craft.core.errors import UnknownCodeError
from etl_craft.core.text import did_you_mean
from etl_craft.engine import reads
from etl_craft.engine.reads import AttemptRow, PauseRow, RunRow, TaskRunRow
from etl_craft.engine.schema import tables as t
from etl_craft.execution.graph import Graph, TaskNode, load_graph
from etl_craft.execution.readiness import NOT_RUN, Decision, Phase, TaskState, Verdict, decide, edge_verdict
from etl_craft.services.context import OperationContext
from etl_craft.services.runs.selection import RunSelector, selected_run
from etl_craft.services.views import AttemptView


@dataclass(frozen=True)
class Snapshot:
    graph: Graph
    task: TaskNode
    run: RunRow | None
    task_runs: dict[int, TaskRunRow]
    attempts: tuple[AttemptRow, ...]
    decisions: tuple[sa.Row, ...]
    waits: tuple[sa.Row, ...]
    pause: PauseRow | None
    now: datetime


@dataclass(frozen=True)
class DependencyView:
    upstream: str
    type: str
    upstream_status: str
    met: bool | None  # None: judged by a gate when the task is admitted
    reason: str


@dataclass(frozen=True)
class DecisionView:
    dependency: str
    result: str
    reason: str
    selected_pipeline_run_id: int | None
    selected_task_run_id: int | None
    selected_revision: int | None
    decided_at: datetime


@dataclass(frozen=True)
class GateWaitView:
    task_id: int | None
    next_check_at: datetime | None
    wait_until: datetime
    looks: int


@dataclass(frozen=True)
class Explanation:
    pipeline: str
    task: str
    task_id: int
    state: str
    pipeline_run_id: int | None
    run_status: str | None
    run_key: str | None
    paused_by: str | None
    pause_reason: str | None
    task_status: str
    attempts: tuple[AttemptView, ...]
    run_condition: str
    required_count: int
    dependencies: tuple[DependencyView, ...]
    decisions: tuple[DecisionView, ...]
    gate_waits: tuple[GateWaitView, ...]
    retry_at: datetime | None
    next_action: str
    skip_reason: str | None = None
    notes: tuple[str, ...] = field(default=())


def _phase(snapshot: Snapshot, task_id: int) -> TaskState:
    row = snapshot.task_runs.get(task_id)
    return TaskState(Phase(row.status), row.rows_written) if row else NOT_RUN


def _dependencies(snapshot: Snapshot) -> tuple[list[DependencyView], list[str], list[str]]:
    """Each dependency's view, the upstreams still open, and the FAILED upstreams blocking it."""
    views, pending, blocked = [], [], []
    for edge in snapshot.task.edges:
        if edge.cross_pipeline:
            views.append(
                DependencyView(
                    edge.upstream_code, edge.type.value, "-", None, "judged by a gate when the task is admitted"
                )
            )
            continue
        state = _phase(snapshot, edge.upstream)
        now = edge_verdict(edge, state, failure_final=False)
        final = edge_verdict(edge, state, failure_final=True)
        code = snapshot.graph.tasks[edge.upstream].code
        if now is Verdict.MET:
            reason = f"{code} ended {state.phase.value}"
        elif now is Verdict.UNMET:
            reason = f"{code} ended {state.phase.value}, which can't satisfy {edge.type.value}"
        elif state.phase is Phase.FAILED:
            reason = f"{code} FAILED; final once nothing else can start (a retry or rerun may still fix it)"
            blocked.append(code) if final is Verdict.UNMET else pending.append(code)
        else:
            reason = f"{code} has not finished"
            pending.append(code)
        views.append(
            DependencyView(
                code,
                edge.type.value,
                state.phase.value,
                now is Verdict.MET if now is not Verdict.PENDING else False,
                reason,
            )
        )
    return views, pending, blocked


def run_loop_view(snapshot: Snapshot) -> tuple[Decision, Decision]:
    """What the run loop decides for the run's tasks as things stand, and once nothing else can start
    (a FAILED upstream is final then): explain reports the run loop's own judgement, never its own."""
    states = {task_id: _phase(snapshot, task_id) for task_id in snapshot.graph.tasks}
    return decide(snapshot.graph, states), decide(snapshot.graph, states, failure_final=True)


def _not_run(snapshot: Snapshot, run_cmd: str, pending: list[str], blocked: list[str]) -> tuple[str, str]:
    """The state and next action of a task that has not run under a run that goes on."""
    task_id = snapshot.task.task_id
    now, final = run_loop_view(snapshot)
    if task_id in now.skipped:
        return "unsatisfiable", (
            f"{now.skipped[task_id]}; it will not run under this run: a new run, or --force, runs it"
        )
    if task_id in final.skipped:
        failed = blocked or _failed_tasks(snapshot)
        return "blocked by a failure", (
            f"rerun {', '.join(failed)} ({run_cmd} --task_code {failed[0]} --rerun --reason ...), or let the run end"
        )
    if task_id in now.ready:
        return "not run", f"it is ready: {run_cmd} starts it"
    return "not run", f"it runs once {', '.join(pending + blocked) or 'its upstream tasks'} finish(es)"


def _failed_tasks(snapshot: Snapshot) -> list[str]:
    """The FAILED tasks of the run, when a failure blocks a task only through the tasks between them."""
    failed = [snapshot.graph.tasks[tid].code for tid, row in snapshot.task_runs.items() if row.status == "FAILED"]
    return sorted(failed) or ["the failed task"]


def explain(snapshot: Snapshot) -> Explanation:
    task, run = snapshot.task, snapshot.run
    pipeline = snapshot.graph.code
    row = snapshot.task_runs.get(task.task_id)
    status = row.status if row else "NOT RUN"
    dependencies, pending, blocked = _dependencies(snapshot)
    own_waits = tuple(w for w in snapshot.waits if w.task_id == task.task_id)
    live_wait = next((w for w in own_waits if w.next_check_at is not None), None)
    queued = next((a for a in reversed(snapshot.attempts) if a.status == "QUEUED"), None)
    retry_at = queued.not_before if queued and queued.not_before and queued.not_before > snapshot.now else None
    run_cmd = f"etl-craft run --pipeline_code {pipeline}"
    rerun_cmd = f"{run_cmd} --task_code {task.code} --rerun --reason ..."
    if run is None:
        state, action = "not run", f"no run is selected; {run_cmd} starts one"
    elif status == "SUCCESS":
        state, action = (
            "succeeded",
            f"nothing: it succeeded. To run it again: {rerun_cmd} --run-id {run.pipeline_run_id}",
        )
    elif status == "SKIPPED":
        state, action = (
            "skipped",
            "it will not run under this run; to run it anyway: "
            f"{run_cmd} --task_code {task.code} --force --run-id {run.pipeline_run_id}",
        )
    elif status == "CANCELLED":
        state, action = "cancelled", f"the run was cancelled; start a new run: {run_cmd}"
    elif retry_at is not None:
        state, action = (
            "retry scheduled",
            f"attempt {queued.attempt_number if queued else '?'} starts at {retry_at:%Y-%m-%d %H:%M:%S}Z",
        )
    elif status == "IN-PROGRESS":
        state, action = "running", "it is running; wait for its attempt to end"
    elif status == "FAILED":
        state, action = "failed", f"{run_cmd} resumes the run and gives it a new attempt, or {rerun_cmd}"
    elif snapshot.pause is not None:
        state, action = (
            "paused",
            f"the pipeline is paused; etl-craft resume --pipeline_code {pipeline} --reason ... lets it start",
        )
    elif live_wait is not None:
        state = "waiting on a gate"
        action = (
            f"it looks again at {live_wait.next_check_at:%Y-%m-%d %H:%M:%S}Z, "
            f"until {live_wait.wait_until:%Y-%m-%d %H:%M:%S}Z"
        )
    else:
        state, action = _not_run(snapshot, run_cmd, pending, blocked)
    return Explanation(
        pipeline=pipeline,
        task=task.code,
        task_id=task.task_id,
        state=state,
        pipeline_run_id=run.pipeline_run_id if run else None,
        run_status=run.status if run else None,
        run_key=run.run_key if run else None,
        paused_by=snapshot.pause.paused_by if snapshot.pause else None,
        pause_reason=snapshot.pause.reason if snapshot.pause else None,
        task_status=status,
        attempts=tuple(AttemptView.of(a) for a in snapshot.attempts),
        run_condition=task.run_condition.value,
        required_count=task.required,
        dependencies=tuple(dependencies),
        decisions=tuple(_decision_view(snapshot, d) for d in snapshot.decisions),
        gate_waits=tuple(GateWaitView(w.task_id, w.next_check_at, w.wait_until, w.looks) for w in snapshot.waits),
        retry_at=retry_at,
        next_action=action,
        skip_reason=row.error_message if row is not None and status == "SKIPPED" else None,
    )


def _decision_view(snapshot: Snapshot, d: sa.Row) -> DecisionView:
    names = {e.dependency_id: e.upstream_code for e in snapshot.task.edges if e.cross_pipeline}
    dependency = (
        names.get(d.task_dependency_id, "") if d.task_dependency_id else f"pipeline {d.upstream_code or ''}".strip()
    )
    return DecisionView(
        dependency,
        d.result,
        d.reason,
        d.selected_pipeline_run_id,
        d.selected_task_run_id,
        d.selected_revision,
        d.decided_at,
    )


def load_snapshot(
    ctx: OperationContext, pipeline_code: str, task_code: str, selector: RunSelector, now: datetime
) -> Snapshot:
    with ctx.db.snapshot() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        graph = load_graph(conn, pipeline)
        node = graph.by_code(task_code)
        if node is None:
            raise UnknownCodeError(
                f"task {pipeline_code}.{task_code}",
                found="no active task with this code in the pipeline",
                expected="the code of an active task",
                remedy="see etl-craft steps --pipeline_code "
                + pipeline_code
                + did_you_mean(task_code, [n.code for n in graph.tasks.values()]),
            )
        run = selected_run(conn, pipeline, selector)
        task_runs = reads.task_runs_of(conn, run.pipeline_run_id) if run else {}
        row = task_runs.get(node.task_id)
        attempts = (
            tuple(reads.attempts_of_run(conn, run.pipeline_run_id).get(row.task_run_id, [])) if run and row else ()
        )
        decisions: tuple[sa.Row, ...] = ()
        waits: tuple[sa.Row, ...] = ()
        if run is not None:
            d, up = t.aud_gate_decisions, t.cfg_pipelines
            deps = t.cfg_pipeline_dependency
            decisions = tuple(
                conn.execute(
                    sa.select(d, up.c.pipeline_code.label("upstream_code"))
                    .outerjoin(deps, deps.c.pipeline_dependency_id == d.c.pipeline_dependency_id)
                    .outerjoin(up, up.c.pipeline_id == deps.c.depends_on_pipeline_id)
                    .where(
                        d.c.pipeline_run_id == run.pipeline_run_id,
                        sa.or_(
                            d.c.pipeline_dependency_id.is_not(None),
                            d.c.task_dependency_id.in_(
                                [e.dependency_id for e in node.edges if e.cross_pipeline] or [0]
                            ),
                        ),
                    )
                    .order_by(d.c.decision_id)
                ).all()
            )
            waits = tuple(
                conn.execute(
                    sa.select(t.aud_gate_waits).where(
                        t.aud_gate_waits.c.pipeline_run_id == run.pipeline_run_id,
                        sa.or_(t.aud_gate_waits.c.task_id.is_(None), t.aud_gate_waits.c.task_id == node.task_id),
                    )
                ).all()
            )
        pause = reads.open_pause(conn, pipeline.pipeline_id)
    return Snapshot(graph, node, run, task_runs, attempts, decisions, waits, pause, now)


def explain_task(ctx: OperationContext, pipeline_code: str, task_code: str, selector: RunSelector) -> Explanation:
    from etl_craft.core.clock import utc_now

    return explain(load_snapshot(ctx, pipeline_code, task_code, selector, utc_now()))


def explanation_lines(e: Explanation) -> list[str]:
    lines = [f"{e.pipeline}.{e.task}: {e.state}"]
    if e.pipeline_run_id is not None:
        lines.append(
            f"run: pipeline_run_id={e.pipeline_run_id} key={e.run_key} status={e.run_status}; "
            f"task: status={e.task_status} attempts={len(e.attempts)}"
        )
    if e.paused_by:
        lines.append(f"paused by {e.paused_by}: {e.pause_reason}")
    if e.skip_reason:
        lines.append(f"skipped: {e.skip_reason}")
    lines.append(f"run_condition={e.run_condition} required_count={e.required_count}")
    for d in e.dependencies:
        met = "judged at admission" if d.met is None else str(d.met).lower()
        lines.append(f"{d.upstream}: {d.type} status={d.upstream_status} met={met}; {d.reason}")
    for decision in e.decisions:
        lines.append(f"decision {decision.dependency}: {decision.result}; {decision.reason}")
    for w in e.gate_waits:
        nxt = f"{w.next_check_at:%Y-%m-%d %H:%M:%S}Z" if w.next_check_at else "settled"
        lines.append(
            f"gate task_id={w.task_id if w.task_id is not None else '-'} next_check_at={nxt} "
            f"wait_until={w.wait_until:%Y-%m-%d %H:%M:%S}Z looks={w.looks}"
        )
    if e.retry_at:
        lines.append(f"retry_at={e.retry_at:%Y-%m-%d %H:%M:%S}Z")
    lines.append(f"next: {e.next_action}")
    return lines
