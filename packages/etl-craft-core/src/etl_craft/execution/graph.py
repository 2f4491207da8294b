"""A pipeline's task graph, derived from CFG_TASKS and CFG_TASK_DEPENDENCY, and checked before a run.

The graph is data: tasks, their run conditions and their edges. Edges to tasks of another pipeline
are kept (they are judged by gates when the task is admitted); within the pipeline, a self-dependency,
an inactive or unknown upstream, an impossible run condition or a cycle is refused with its own error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from etl_craft.core.enums import DependencyType, Handler, RunCondition
from etl_craft.core.errors import CycleError, EtlCraftError, GraphError, SelfDependencyError, UnknownTaskError
from etl_craft.engine import reads
from etl_craft.engine.reads import EdgeRow, PipelineRow, TaskRow


@dataclass(frozen=True)
class Edge:
    dependency_id: int
    upstream: int  # the upstream task id
    type: DependencyType
    upstream_pipeline_id: int | None = None  # set for a task of another pipeline
    consume_repairs: bool = True
    upstream_code: str = ""  # PIPE.task for another pipeline's task, else the task code

    @property
    def cross_pipeline(self) -> bool:
        return self.upstream_pipeline_id is not None


@dataclass(frozen=True)
class TaskNode:
    task_id: int
    code: str
    handler: Handler
    task_type: str
    run_condition: RunCondition
    run_condition_count: int | None
    edges: tuple[Edge, ...] = ()
    parameters: Mapping[str, str] = field(default_factory=dict)

    @property
    def required(self) -> int:
        """How many dependencies must be met: all of them, one, or RUN_CONDITION_COUNT."""
        if self.run_condition is RunCondition.ANY:
            return min(1, len(self.edges))
        if self.run_condition is RunCondition.N:
            return self.run_condition_count or 0
        return len(self.edges)

    @property
    def is_alert(self) -> bool:
        return self.handler is Handler.EMAIL_ALERT


@dataclass(frozen=True)
class Graph:
    pipeline: PipelineRow
    tasks: Mapping[int, TaskNode]

    @property
    def code(self) -> str:
        return self.pipeline.pipeline_code

    def by_code(self, code: str) -> TaskNode | None:
        return next((t for t in self.tasks.values() if t.code == code), None)

    def local_edges(self, task_id: int) -> list[Edge]:
        return [e for e in self.tasks[task_id].edges if not e.cross_pipeline]

    def downstream_of(self, task_id: int) -> set[int]:
        """Every task that depends, directly or through others, on `task_id` in this pipeline."""
        children: dict[int, set[int]] = {}
        for node in self.tasks.values():
            for edge in self.local_edges(node.task_id):
                children.setdefault(edge.upstream, set()).add(node.task_id)
        found: set[int] = set()
        stack = [task_id]
        while stack:
            for child in children.get(stack.pop(), ()):
                if child not in found:
                    found.add(child)
                    stack.append(child)
        return found

    def waves(self) -> list[list[TaskNode]]:
        """Topological levels, for display only: dispatch starts every ready task at once."""
        level: dict[int, int] = {}

        def depth(task_id: int) -> int:
            if task_id not in level:
                ups = [e.upstream for e in self.local_edges(task_id)]
                level[task_id] = 1 + max((depth(u) for u in ups), default=-1)
            return level[task_id]

        waves: dict[int, list[TaskNode]] = {}
        for node in self.tasks.values():
            waves.setdefault(depth(node.task_id), []).append(node)
        return [sorted(waves[i], key=lambda n: n.code) for i in sorted(waves)]


def build_graph(
    pipeline: PipelineRow,
    task_rows: Iterable[TaskRow],
    edge_rows: Iterable[EdgeRow],
    parameters: Mapping[int, Mapping[str, str]],
    upstream_names: Mapping[int, tuple[str, str, bool]],
) -> Graph:
    """Check and assemble the graph. `upstream_names` maps task ids to (pipeline code, code, active)."""
    graph, problems = assemble_graph(pipeline, task_rows, edge_rows, parameters, upstream_names)
    if problems:
        raise problems[0]
    return graph


def assemble_graph(
    pipeline: PipelineRow,
    task_rows: Iterable[TaskRow],
    edge_rows: Iterable[EdgeRow],
    parameters: Mapping[int, Mapping[str, str]],
    upstream_names: Mapping[int, tuple[str, str, bool]],
) -> tuple[Graph, list[GraphError]]:
    """The graph of every edge that passes, and every problem found, in the order build_graph raises them.

    `validate` reports all of them; a run refuses the graph on the first.
    """
    rows = list(task_rows)
    ids = {r.task_id for r in rows}
    code = pipeline.pipeline_code
    problems: list[GraphError] = []
    edges: dict[int, list[Edge]] = {r.task_id: [] for r in rows}
    for e in edge_rows:
        task_code = next(r.task_code for r in rows if r.task_id == e.task_id)
        cross = e.depends_on_pipeline_id is not None and e.depends_on_pipeline_id != pipeline.pipeline_id
        up_pipeline, up_code, up_active = upstream_names.get(e.depends_on_task_id, ("?", "?", False))
        if not cross and e.depends_on_task_id == e.task_id:
            problems.append(
                SelfDependencyError(
                    f"task {code}.{task_code}",
                    found="a dependency on itself",
                    expected="dependencies on other tasks",
                    remedy="retire the self-dependency row in a project migration",
                )
            )
            continue
        if not cross and (e.depends_on_task_id not in ids or not up_active or up_pipeline != code):
            problems.append(
                UnknownTaskError(
                    f"task {code}.{task_code}",
                    found=f"a dependency on {up_pipeline}.{up_code} (task id {e.depends_on_task_id}), "
                    "which is not an active task of this pipeline",
                    expected="dependencies on active tasks of the same pipeline, or DEPENDS_ON_PIPELINE_ID for another",
                    remedy="fix or retire the dependency in a project migration",
                )
            )
            continue
        edges[e.task_id].append(
            Edge(
                dependency_id=e.task_dependency_id,
                upstream=e.depends_on_task_id,
                type=DependencyType(e.dependency_type),
                upstream_pipeline_id=e.depends_on_pipeline_id if cross else None,
                consume_repairs=e.consume_repairs == "Y",
                upstream_code=f"{up_pipeline}.{up_code}" if cross else up_code,
            )
        )
    nodes = {}
    for r in rows:
        node = TaskNode(
            task_id=r.task_id,
            code=r.task_code,
            handler=Handler(r.handler),
            task_type=r.task_type,
            run_condition=RunCondition(r.run_condition or "ALL"),
            run_condition_count=r.run_condition_count,
            edges=tuple(edges[r.task_id]),
            parameters=dict(parameters.get(r.task_id, {})),
        )
        if node.run_condition is RunCondition.N and not 1 <= (node.run_condition_count or 0) <= len(node.edges):
            problems.append(
                GraphError(
                    f"task {code}.{node.code}",
                    found=f"RUN_CONDITION N with RUN_CONDITION_COUNT {node.run_condition_count} "
                    f"and {len(node.edges)} dependencies",
                    expected="a count between 1 and the number of dependencies",
                    remedy="change RUN_CONDITION_COUNT or the dependencies in a project migration",
                )
            )
        nodes[r.task_id] = node
    graph = Graph(pipeline, nodes)
    problems.extend(_cycles(graph))
    return graph, problems


def _cycles(graph: Graph) -> list[CycleError]:
    """One error per dependency cycle met by a depth-first walk (every cycle's tasks, once)."""
    state: dict[int, int] = {}  # 1 = on the current path, 2 = done
    path: list[int] = []
    found: list[CycleError] = []
    seen: set[frozenset[int]] = set()

    def visit(task_id: int) -> None:
        state[task_id] = 1
        path.append(task_id)
        for edge in graph.local_edges(task_id):
            if state.get(edge.upstream) == 1:
                cycle = [*path[path.index(edge.upstream) :], edge.upstream]
                if frozenset(cycle) in seen:
                    continue
                seen.add(frozenset(cycle))
                names = " -> ".join(graph.tasks[t].code for t in reversed(cycle))
                found.append(
                    CycleError(
                        f"pipeline {graph.code}",
                        found=f"a dependency cycle: {names}",
                        expected="a graph without cycles",
                        remedy="retire one of these dependencies in a project migration",
                    )
                )
            elif edge.upstream not in state:
                visit(edge.upstream)
        path.pop()
        state[task_id] = 2

    for task_id in sorted(graph.tasks):
        if task_id not in state:
            visit(task_id)
    return found


def load_graph(conn: sa.Connection, pipeline: PipelineRow) -> Graph:
    """Read the pipeline's active tasks, parameters and dependencies in a few set queries and check them."""
    found = load_graphs(conn, [pipeline])[pipeline.pipeline_id]
    if isinstance(found, EtlCraftError):
        raise found
    return found


def load_graphs(conn: sa.Connection, pipelines: Sequence[PipelineRow]) -> dict[int, Graph | EtlCraftError]:
    """The graphs of many pipelines from the same four set queries (an overseer after a tick due for
    many pipelines): each pipeline id maps to its graph, or to the first problem that refuses it."""
    task_rows = reads.tasks_of(conn, [p.pipeline_id for p in pipelines])
    edge_rows = reads.edges_of(conn, [p.pipeline_id for p in pipelines])
    params = reads.task_parameters(conn, [r.task_id for r in task_rows])
    names = reads.task_codes(conn, {e.depends_on_task_id for _, e in edge_rows})
    tasks_by: dict[int, list[TaskRow]] = {p.pipeline_id: [] for p in pipelines}
    edges_by: dict[int, list[EdgeRow]] = {p.pipeline_id: [] for p in pipelines}
    for task in task_rows:
        tasks_by[task.pipeline_id].append(task)
    for pipeline_id, edge in edge_rows:
        edges_by[pipeline_id].append(edge)
    found: dict[int, Graph | EtlCraftError] = {}
    for pipeline in pipelines:
        try:
            found[pipeline.pipeline_id] = build_graph(
                pipeline, tasks_by[pipeline.pipeline_id], edges_by[pipeline.pipeline_id], params, names
            )
        except EtlCraftError as problem:
            found[pipeline.pipeline_id] = problem
    return found
