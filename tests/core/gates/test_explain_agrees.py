"""`explain` and the scheduler agree: over generated graphs and task states, what explain says about a
task that has not run is what the ready-set rules (the scheduler's `decide`) do with it."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from etl_craft.core.enums import DependencyType, Handler, RunCondition
from etl_craft.engine.reads import PipelineRow, RunRow, TaskRunRow
from etl_craft.execution.graph import Edge, Graph, TaskNode
from etl_craft.execution.readiness import Phase, TaskState, decide
from etl_craft.services.inspect.explain import Snapshot, explain

pytestmark = pytest.mark.unit

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
PIPELINE = PipelineRow(1, "p", "p", None, None, None, "FULL", None, None, "N", 0, "SKIP", None)
RUN = RunRow(
    7, 1, NOW, None, "IN-PROGRESS", None, None, "N", "manual:x", "MANUAL", None, None, 1, "me", "HUMAN", None, None, "N"
)
# What a task that ran can have ended in, with the rows it wrote (HAS_DATA looks at them).
ENDS = [("SUCCESS", 0), ("SUCCESS", 3), ("FAILED", None), ("SKIPPED", None), ("IN-PROGRESS", None)]


def _graph(rng: random.Random, size: int) -> Graph:
    nodes = {}
    dependency_id = 0
    for task_id in range(1, size + 1):
        ups = rng.sample(range(1, task_id), k=rng.randint(0, min(3, task_id - 1)))
        edges = []
        for upstream in ups:
            dependency_id += 1
            edges.append(Edge(dependency_id, upstream, rng.choice(list(DependencyType)), upstream_code=f"t{upstream}"))
        condition = rng.choice(list(RunCondition)) if edges else RunCondition.ALL
        count = rng.randint(1, len(edges)) if condition is RunCondition.N else None
        nodes[task_id] = TaskNode(task_id, f"t{task_id}", Handler.PYTHON, "SCRIPT", condition, count, tuple(edges))
    return Graph(PIPELINE, nodes)


def _task_run(task_id: int, status: str, rows: int | None) -> TaskRunRow:
    return TaskRunRow(100 + task_id, task_id, 7, NOW, None, status, None, None, None, None, None, None, None, 1, rows)


def _snapshot(graph: Graph, task_runs: dict[int, TaskRunRow], task_id: int) -> Snapshot:
    return Snapshot(graph, graph.tasks[task_id], RUN, task_runs, (), (), (), None, NOW)


@pytest.mark.parametrize("seed", range(40))
def test_explain_says_what_the_scheduler_does(seed: int) -> None:
    rng = random.Random(seed)
    graph = _graph(rng, rng.randint(3, 9))
    task_runs = {}
    for task_id in graph.tasks:
        if rng.random() < 0.5:
            status, rows = rng.choice(ENDS)
            task_runs[task_id] = _task_run(task_id, status, rows)
    states = {tid: TaskState(Phase(row.status), row.rows_written) for tid, row in task_runs.items()}
    now = decide(graph, states)
    final = decide(graph, states, failure_final=True)
    for task_id in graph.tasks:
        if task_id in task_runs:
            continue
        said = explain(_snapshot(graph, task_runs, task_id))
        context = f"seed {seed}, task t{task_id}: {said.state}; {said.next_action}"
        if task_id in now.skipped:
            assert said.state == "unsatisfiable", context
            assert now.skipped[task_id] in said.next_action, context
        elif task_id in final.skipped:
            assert said.state == "blocked by a failure", context
        elif task_id in now.ready:
            assert (said.state, said.next_action) == (
                "not run",
                "it is ready: etl-craft run --pipeline_code p starts it",
            )
        else:
            assert task_id in now.waiting, context
            assert said.state == "not run" and said.next_action.startswith("it runs once"), context


def test_a_task_behind_a_skipped_one_is_unsatisfiable_as_the_scheduler_cascades() -> None:
    """t1 wrote no rows, so t2 (HAS_DATA) can never run, so neither can t3 (SUCCESS on t2): explain
    reports t3 unsatisfiable, as the scheduler skips it, instead of waiting for t2 to finish."""
    edges = {2: (Edge(1, 1, DependencyType.HAS_DATA),), 3: (Edge(2, 2, DependencyType.SUCCESS),)}
    nodes = {
        i: TaskNode(i, f"t{i}", Handler.PYTHON, "SCRIPT", RunCondition.ALL, None, edges.get(i, ())) for i in (1, 2, 3)
    }
    graph = Graph(PIPELINE, nodes)
    said = explain(_snapshot(graph, {1: _task_run(1, "SUCCESS", 0)}, 3))
    assert said.state == "unsatisfiable"
    assert said.next_action == (
        "its dependencies can no longer be met: t2 (SKIPPED, SUCCESS needed); "
        "it will not run under this run: a new run, or --force, runs it"
    )
