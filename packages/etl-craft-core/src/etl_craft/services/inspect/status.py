"""`status`: one run's header, each task's state under it, and the tasks its failures block.

A task is blocked by failures when the ready-set rules skip it once a FAILED upstream is taken as final,
but would still be waiting while that failure may yet be retried. Tasks the engine already recorded
SKIPPED without running (no attempt, no operator mark) are judged again the same way, so an ended run
still names what its failures held back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from etl_craft.core.enums import InterventionAction
from etl_craft.engine import reads
from etl_craft.engine.reads import TaskRunRow
from etl_craft.engine.reads import audit as audit_trail
from etl_craft.execution.graph import Graph, load_graph
from etl_craft.execution.readiness import Phase, TaskState, decide
from etl_craft.services.context import OperationContext
from etl_craft.services.inspect.pipelines import NO_RUN_NAMED, PauseView, ordered
from etl_craft.services.runs.selection import RunSelector, required_run
from etl_craft.services.views import AttemptView, PipelineView, RunView, TaskRunView


@dataclass(frozen=True)
class StatusView:
    pipeline: PipelineView
    run: RunView
    duration_seconds: float | None  # None while the run is unfinished
    pause: PauseView | None
    tasks: tuple[TaskRunView, ...]  # every active task in wave order; NOT RUN without a row
    blocked_by_failures: tuple[str, ...]  # task codes


def blocked_by_failures(graph: Graph, task_runs: Mapping[int, TaskRunRow], marked: frozenset[int]) -> list[int]:
    """Task ids that can't run because an upstream FAILED (see the module docstring), in wave order."""
    states = {}
    for task_id, row in task_runs.items():
        engine_skipped = row.status == "SKIPPED" and row.attempt_count == 0 and task_id not in marked
        if not engine_skipped:
            states[task_id] = TaskState(Phase(row.status), row.rows_written)
    while_retryable = decide(graph, states).skipped
    once_final = decide(graph, states, failure_final=True).skipped
    return [
        node.task_id for node in ordered(graph) if node.task_id in once_final and node.task_id not in while_retryable
    ]


def run_status(ctx: OperationContext, pipeline_code: str, selector: RunSelector = NO_RUN_NAMED) -> StatusView:
    """The named run, else the pipeline's single unfinished run; none is refused with the remedy."""
    with ctx.db.snapshot() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        graph = load_graph(conn, pipeline)
        run = required_run(conn, pipeline, selector)
        task_runs = reads.task_runs_of(conn, run.pipeline_run_id)
        attempts = reads.attempts_of_run(conn, run.pipeline_run_id)
        pause = reads.open_pause(conn, pipeline.pipeline_id)
        marked = frozenset(
            i.task_id
            for i in audit_trail.interventions(conn, pipeline.pipeline_id, run_id=run.pipeline_run_id)
            if i.action == InterventionAction.MARK and i.task_id is not None
        )
    tasks = []
    for node in ordered(graph):
        row = task_runs.get(node.task_id)
        evidence = tuple(AttemptView.of(a) for a in attempts.get(row.task_run_id, ())) if row else ()
        tasks.append(TaskRunView.of(node.task_id, node.code, row, evidence))
    view = RunView.of(run, pipeline.pipeline_code)
    return StatusView(
        pipeline=PipelineView.of(pipeline),
        run=view,
        duration_seconds=view.duration_seconds,
        pause=PauseView.of(pause),
        tasks=tuple(tasks),
        blocked_by_failures=tuple(graph.tasks[t].code for t in blocked_by_failures(graph, task_runs, marked)),
    )
