"""An EMAIL_ALERT that can start before a task it reports on has ended is a warning naming both.

The rule (`ended_before_start`) is also checked against the scheduler's own ready-set rules
(`readiness.decide`) on many random graphs, by walking every order in which tasks can end.
"""

from __future__ import annotations

import random
from datetime import date

import pytest

from etl_craft.core.enums import DependencyType, Handler, RunCondition
from etl_craft.engine.reads import PipelineRow
from etl_craft.execution.graph import Edge, Graph, TaskNode
from etl_craft.execution.readiness import Phase, TaskState, decide
from etl_craft.services.validate.email_alerts import ended_before_start
from tests.core.validate.conftest import ValidateProject, clean, find
from tests.fixtures.harness import TaskSpec

ALERT = {"EMAIL_TO": "ops@example.com", "EMAIL_SUBJECT": "$$pipeline_code: $$status", "EMAIL_BODY": "$$error_message"}


def alert(run_condition: str | None = None, count: int | None = None) -> TaskSpec:
    return TaskSpec("alert", handler="EMAIL_ALERT", parameters=ALERT, run_condition=run_condition, count=count)


@pytest.mark.sqlite
def test_an_alert_starting_after_any_one_of_its_dependencies_warns_naming_the_others(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [TaskSpec("orders"), TaskSpec("stock"), alert("ANY")],
        [("alert", "orders", "ALWAYS"), ("alert", "stock", "ALWAYS")],
    )
    report = vp.check()
    finding = find(
        report,
        "WARN",
        "sales.alert",
        "dependencies: found no chain of dependencies that alert waits for in full from orders, stock",
        "so alert can start while orders, stock still run(s) and report them as not finished (COMPLETED_WITH_ERRORS)",
        "expected an alert that starts only after every task it reports on has ended",
        "make alert depend (ALWAYS) on orders, stock or on tasks waiting for them, with RUN_CONDITION ALL",
    )
    assert [f.message for f in report.findings] == [finding.message] and report.valid


@pytest.mark.sqlite
def test_a_task_starting_early_on_the_way_lets_the_alert_start_early(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [
            TaskSpec("extract"),
            TaskSpec("orders"),
            TaskSpec("stock"),
            TaskSpec("publish", run_condition="N", count=1),
            alert(),
        ],
        [
            ("orders", "extract", "SUCCESS"),
            ("stock", "extract", "SUCCESS"),
            ("publish", "orders", "SUCCESS"),
            ("publish", "stock", "SUCCESS"),
            ("alert", "publish", "ALWAYS"),
        ],
    )
    find(vp.check(), "WARN", "sales.alert", "in full from orders, stock, so alert can start")


@pytest.mark.sqlite
def test_a_chain_of_dependencies_waited_for_in_full_passes(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [TaskSpec("extract"), TaskSpec("orders"), TaskSpec("stock"), TaskSpec("publish"), alert()],
        [
            ("orders", "extract", "SUCCESS"),
            ("stock", "extract", "SUCCESS"),
            ("publish", "orders", "SUCCESS"),
            ("publish", "stock", "SUCCESS"),
            ("alert", "publish", "ALWAYS"),
        ],
    )
    clean(vp.check())


@pytest.mark.sqlite
def test_a_missing_last_task_fails_once_without_a_second_warning(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [TaskSpec("orders"), TaskSpec("stock"), alert()],
        [("alert", "orders", "ALWAYS")],
    )
    report = vp.check()
    find(report, "FAIL", "sales.alert", "no dependency on the pipeline's last task(s) stock")
    assert len(report.findings) == 1, report.lines


@pytest.mark.sqlite
def test_an_alert_watching_failures_only_is_not_judged(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [TaskSpec("orders"), TaskSpec("stock"), alert("ANY")],
        [("alert", "orders", "FAILURE"), ("alert", "stock", "FAILURE")],
    )
    clean(vp.check())


# --- the rule against the scheduler's ready-set rules --------------------------------------------------

PIPELINE = PipelineRow(1, "p", "p", None, None, None, "FULL", None, None, "N", 1, "SKIP", date(2026, 1, 1))


def random_graph(rng: random.Random, size: int) -> Graph:
    """A random DAG: each task depends on some earlier ones (ALWAYS), with a random run condition."""
    nodes = {}
    for task_id in range(1, size + 1):
        ups = rng.sample(range(1, task_id), k=rng.randint(0, min(3, task_id - 1)))
        edges = tuple(Edge(task_id * 10 + i, up, DependencyType.ALWAYS) for i, up in enumerate(ups))
        condition = rng.choice([RunCondition.ALL, RunCondition.ALL, RunCondition.ANY, RunCondition.N])
        count = rng.randint(1, len(edges)) if condition is RunCondition.N and edges else None
        if condition is RunCondition.N and not edges:
            condition = RunCondition.ALL
        nodes[task_id] = TaskNode(task_id, f"t{task_id}", Handler.PYTHON, "ETL", condition, count, edges)
    return Graph(PIPELINE, nodes)


def ended_when_ready(graph: Graph) -> dict[int, list[frozenset[int]]]:
    """For each task, every set of ended tasks in which the scheduler finds it ready to start."""
    seen: set[frozenset[int]] = set()
    found: dict[int, list[frozenset[int]]] = {t: [] for t in graph.tasks}
    stack = [frozenset[int]()]
    while stack:
        ended = stack.pop()
        if ended in seen:
            continue
        seen.add(ended)
        states = {t: TaskState(Phase.SUCCESS, 1) for t in ended}
        for task_id in decide(graph, states).ready:
            found[task_id].append(ended)
            stack.append(ended | {task_id})
    return found


@pytest.mark.unit
@pytest.mark.parametrize("seed", range(40))
def test_the_rule_is_exactly_what_the_scheduler_allows(seed: int) -> None:
    rng = random.Random(seed)
    graph = random_graph(rng, rng.randint(3, 8))
    before = ended_before_start(graph)
    for task_id, situations in ended_when_ready(graph).items():
        assert situations, f"seed {seed}: t{task_id} never became ready"
        certain = frozenset.intersection(*situations)  # ended in every situation it may start in
        assert before[task_id] == certain, f"seed {seed}: t{task_id}: {sorted(before[task_id])} != {sorted(certain)}"
