"""`list`, `graph` and `steps`: what the pipelines are, how their tasks depend on each other, and each
task's settings with its status under a run. Read-only; nothing here records an action."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from etl_craft.core.enums import RunCondition
from etl_craft.engine import reads
from etl_craft.engine.reads import PauseRow
from etl_craft.execution.graph import Graph, TaskNode, load_graph
from etl_craft.services.context import OperationContext
from etl_craft.services.runs.selection import RunSelector, required_run, selected_run
from etl_craft.services.views import PipelineView, RunView

NO_RUN_NAMED = RunSelector()  # neither --run-id nor --run-key


@dataclass(frozen=True)
class PauseView:
    paused_at: datetime
    paused_by: str
    reason: str

    @classmethod
    def of(cls, row: PauseRow | None) -> PauseView | None:
        return None if row is None else cls(row.paused_at, row.paused_by, row.reason)


@dataclass(frozen=True)
class ListedPipeline:
    pipeline_id: int
    pipeline_code: str
    pipeline_name: str
    description: str | None
    refresh_type: str
    run_schedule: str | None
    schedule_timezone: str | None
    sla_in_hours: float | None
    pause: PauseView | None  # None unless the pipeline is paused


@dataclass(frozen=True)
class PipelineList:
    pipelines: tuple[ListedPipeline, ...]


def list_pipelines(ctx: OperationContext) -> PipelineList:
    """Every active pipeline by code, with its open pause if it has one."""
    with ctx.db.snapshot() as conn:
        rows = reads.pipelines(conn)
        pauses = reads.open_pauses(conn)
    listed = []
    for row in rows:
        view = PipelineView.of(row)
        listed.append(
            ListedPipeline(
                pipeline_id=view.pipeline_id,
                pipeline_code=view.pipeline_code,
                pipeline_name=view.pipeline_name,
                description=view.description,
                refresh_type=view.refresh_type,
                run_schedule=view.run_schedule,
                schedule_timezone=row.schedule_timezone,
                sla_in_hours=view.sla_in_hours,
                pause=PauseView.of(pauses.get(row.pipeline_id)),
            )
        )
    return PipelineList(tuple(listed))


# --- graph -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskDependencyView:
    task_code: str
    depends_on: str  # the upstream task's code, or PIPE.TASK for another pipeline's task
    dependency_type: str
    cross_pipeline: bool
    consume_repairs: bool


@dataclass(frozen=True)
class EarlyStarter:
    """An ANY or N task: listed in the wave after all its upstreams, it may start once `required` are met."""

    task_code: str
    run_condition: str
    required: int
    dependencies: int


@dataclass(frozen=True)
class PipelineDependencyView:
    pipeline_code: str  # the pipeline that waits
    depends_on_pipeline_code: str
    dependency_type: str
    consume_repairs: bool
    active: bool  # False when either pipeline has been retired while this row stayed active


@dataclass(frozen=True)
class GraphView:
    pipeline: PipelineView
    waves: tuple[tuple[str, ...], ...]  # task codes per topological level, for display
    early_starters: tuple[EarlyStarter, ...]
    task_dependencies: tuple[TaskDependencyView, ...]
    pipeline_dependencies: tuple[PipelineDependencyView, ...]  # both directions


def _early(node: TaskNode) -> EarlyStarter | None:
    if node.run_condition is RunCondition.ALL or node.required >= len(node.edges):
        return None
    return EarlyStarter(node.code, node.run_condition.value, node.required, len(node.edges))


def ordered(graph: Graph) -> list[TaskNode]:
    """The tasks in wave order (each wave by code): the order every inspection command lists them in."""
    return [node for wave in graph.waves() for node in wave]


def pipeline_graph(ctx: OperationContext, pipeline_code: str) -> GraphView:
    """The checked task graph (a graph error raises with its own exit code) and the pipeline's dependencies."""
    with ctx.db.snapshot() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        graph = load_graph(conn, pipeline)
        pipeline_deps = reads.pipeline_dependencies(conn, pipeline.pipeline_id)
    nodes = ordered(graph)
    return GraphView(
        pipeline=PipelineView.of(pipeline),
        waves=tuple(tuple(node.code for node in wave) for wave in graph.waves()),
        early_starters=tuple(e for e in map(_early, nodes) if e is not None),
        task_dependencies=tuple(
            TaskDependencyView(
                node.code, edge.upstream_code, edge.type.value, edge.cross_pipeline, edge.consume_repairs
            )
            for node in nodes
            for edge in node.edges
        ),
        pipeline_dependencies=tuple(
            PipelineDependencyView(
                d.pipeline_code,
                d.depends_on_pipeline_code,
                d.dependency_type,
                d.consume_repairs,
                d.pipeline_active and d.depends_on_active,
            )
            for d in pipeline_deps
        ),
    )


# --- steps -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepView:
    task_id: int
    task_code: str
    status: str | None  # under the run (NOT RUN without a row); None when no run is shown
    task_run_id: int | None
    handler: str
    task_type: str
    run_condition: str
    run_condition_count: int | None
    parameters: Mapping[str, str]  # every active parameter, by name (sensitive values shown as ***)


@dataclass(frozen=True)
class StepsView:
    pipeline: PipelineView
    run: RunView | None  # None when no run was named and none is unfinished
    steps: tuple[StepView, ...]


def pipeline_steps(ctx: OperationContext, pipeline_code: str, selector: RunSelector = NO_RUN_NAMED) -> StepsView:
    """Each active task with its settings, and its status under the named run or the single unfinished one.

    With no selector and no unfinished run the steps come without statuses; a named run must exist, and
    several unfinished runs are refused with the candidates (nothing is chosen by recency).
    """
    with ctx.db.snapshot() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        graph = load_graph(conn, pipeline)
        run = required_run(conn, pipeline, selector) if selector.explicit else selected_run(conn, pipeline, selector)
        task_runs = reads.task_runs_of(conn, run.pipeline_run_id) if run else {}
    steps = []
    for node in ordered(graph):
        row = task_runs.get(node.task_id)
        status = None if run is None else row.status if row else "NOT RUN"
        steps.append(
            StepView(
                task_id=node.task_id,
                task_code=node.code,
                status=status,
                task_run_id=row.task_run_id if row else None,
                handler=node.handler.value,
                task_type=node.task_type,
                run_condition=node.run_condition.value,
                run_condition_count=node.run_condition_count,
                parameters=dict(sorted(ctx.config.redaction.shown(node.handler.value, node.parameters).items())),
            )
        )
    return StepsView(PipelineView.of(pipeline), RunView.of(run, pipeline.pipeline_code) if run else None, tuple(steps))
