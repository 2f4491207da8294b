"""Which tasks a run's failures hold back: pure checks of `status.blocked_by_failures` over built graphs."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from etl_craft.engine.reads import EdgeRow, PipelineRow, TaskRow, TaskRunRow
from etl_craft.execution.graph import Graph, build_graph
from etl_craft.services.inspect.status import blocked_by_failures

pytestmark = pytest.mark.unit

PIPELINE = PipelineRow(1, "P", "P", None, None, None, "FULL", None, None, "N", 1, "SKIP", None)
OTHER_TASK = 99  # a task of pipeline 2


def make_graph(tasks: dict[str, str | None], edges: list[tuple[str, str, str]], cross: tuple[str, ...] = ()) -> Graph:
    """`tasks`: code -> run condition; `edges`: (task, upstream, type); `cross`: tasks that also wait
    for another pipeline's task."""
    ids = {code: i for i, code in enumerate(tasks, start=1)}
    rows = [TaskRow(ids[c], c, "ETL", 1, "PYTHON", cond, None) for c, cond in tasks.items()]
    edge_rows = [EdgeRow(n, ids[down], ids[up], None, kind, "Y") for n, (down, up, kind) in enumerate(edges, start=1)]
    edge_rows += [EdgeRow(100 + n, ids[down], OTHER_TASK, 2, "SUCCESS", "Y") for n, down in enumerate(cross, start=1)]
    names = {i: ("P", c, True) for c, i in ids.items()} | {OTHER_TASK: ("Q", "feed", True)}
    return build_graph(PIPELINE, rows, edge_rows, {}, names)


def row(graph: Graph, code: str, status: str, *, attempts: int = 1, rows_written: int | None = None) -> TaskRunRow:
    node = graph.by_code(code)
    assert node is not None
    now = datetime(2026, 1, 31, tzinfo=UTC)
    return TaskRunRow(
        node.task_id,
        node.task_id,
        7,
        now,
        now,
        status,
        None,
        None,
        None,
        None,
        None,
        None,
        None,
        attempts,
        rows_written,
    )


def blocked(graph: Graph, *rows: TaskRunRow, marked: frozenset[int] = frozenset()) -> list[str]:
    return [graph.tasks[t].code for t in blocked_by_failures(graph, {r.task_id: r for r in rows}, marked)]


def test_a_failure_blocks_its_waiters_and_theirs_but_not_an_always_dependent() -> None:
    g = make_graph(
        {"feed": None, "load": None, "publish": None, "cleanup": None},
        [("load", "feed", "SUCCESS"), ("publish", "load", "SUCCESS"), ("cleanup", "feed", "ALWAYS")],
    )
    assert blocked(g, row(g, "feed", "FAILED")) == ["load", "publish"]
    assert blocked(g, row(g, "feed", "IN-PROGRESS")) == []
    assert blocked(g, row(g, "feed", "SUCCESS")) == []


def test_a_task_waiting_on_a_running_upstream_is_blocked_when_another_upstream_failed() -> None:
    g = make_graph({"a": None, "b": None, "c": None}, [("c", "a", "SUCCESS"), ("c", "b", "SUCCESS")])
    assert blocked(g, row(g, "a", "FAILED"), row(g, "b", "IN-PROGRESS")) == ["c"]


def test_any_and_n_tasks_are_blocked_only_when_too_few_can_still_be_met() -> None:
    tasks = {"a": None, "b": None, "c": None, "any": "ANY"}
    edges = [("any", "a", "SUCCESS"), ("any", "b", "SUCCESS"), ("any", "c", "SUCCESS")]
    g = make_graph(tasks, edges)
    assert blocked(g, row(g, "a", "FAILED")) == []  # b or c may still succeed
    assert blocked(g, row(g, "a", "FAILED"), row(g, "b", "FAILED"), row(g, "c", "FAILED")) == ["any"]


def test_what_no_failure_causes_is_not_reported() -> None:
    g = make_graph({"feed": None, "load": None}, [("load", "feed", "HAS_DATA")])
    assert blocked(g, row(g, "feed", "SUCCESS", rows_written=0)) == []  # unmet for lack of rows, not a failure
    h = make_graph({"feed": None, "alert": None}, [("alert", "feed", "FAILURE")])
    assert blocked(h, row(h, "feed", "FAILED")) == []  # the alert may run


def test_engine_skipped_tasks_are_judged_again_but_marked_ones_are_left_alone() -> None:
    g = make_graph(
        {"feed": None, "load": None, "publish": None}, [("load", "feed", "SUCCESS"), ("publish", "load", "SUCCESS")]
    )
    failed = row(g, "feed", "FAILED")
    skipped = [row(g, "load", "SKIPPED", attempts=0), row(g, "publish", "SKIPPED", attempts=0)]
    assert blocked(g, failed, *skipped) == ["load", "publish"]
    load = g.by_code("load")
    assert load is not None
    assert blocked(g, failed, *skipped, marked=frozenset({load.task_id})) == []


def test_a_task_that_also_waits_for_another_pipeline_is_blocked_by_a_local_failure() -> None:
    g = make_graph({"feed": None, "join": None}, [("join", "feed", "SUCCESS")], cross=("join",))
    assert blocked(g, row(g, "feed", "FAILED")) == ["join"]
    assert blocked(g, row(g, "feed", "SUCCESS")) == []
