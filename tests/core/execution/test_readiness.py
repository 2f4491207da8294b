"""Ready-set rules and run outcomes, as pure functions over a graph and task states."""

from __future__ import annotations

import pytest

from etl_craft.core.enums import RunStatus
from etl_craft.core.errors import CycleError, GraphError, SelfDependencyError, UnknownTaskError
from etl_craft.core.sla import sla_verdict
from etl_craft.engine.reads import EdgeRow, PipelineRow, TaskRow
from etl_craft.execution.graph import Graph, build_graph
from etl_craft.execution.readiness import Phase, TaskState, decide
from etl_craft.execution.run_loop.outcome import judge_run

pytestmark = pytest.mark.unit

PIPELINE = PipelineRow(1, "P", "P", None, None, None, "FULL", None, None, "N", 1, "SKIP", None)


def graph(
    tasks: dict[str, tuple[str, ...]],
    edges: list[tuple[str, str, str]],
    handlers: dict[str, str] | None = None,
    conditions: dict[str, tuple[str, int | None]] | None = None,
) -> Graph:
    ids = {code: i + 1 for i, code in enumerate(tasks)}
    rows = [
        TaskRow(ids[c], c, "ETL", 1, (handlers or {}).get(c, "PYTHON"), *((conditions or {}).get(c, (None, None))))
        for c in tasks
    ]
    edge_rows = [EdgeRow(n + 1, ids[down], ids[up], None, kind, "Y") for n, (down, up, kind) in enumerate(edges)]
    names = {i: ("P", c, True) for c, i in ids.items()}
    return build_graph(PIPELINE, rows, edge_rows, {}, names)


def ids(g: Graph, *codes: str) -> tuple[int, ...]:
    return tuple(sorted(g.by_code(c).task_id for c in codes))  # type: ignore[union-attr]


def states(g: Graph, **phases: str | tuple[str, int]) -> dict[int, TaskState]:
    found = {}
    for code, value in phases.items():
        phase, rows = (value, None) if isinstance(value, str) else value
        found[g.by_code(code).task_id] = TaskState(Phase(phase), rows)  # type: ignore[union-attr]
    return found


CHAIN = {"a": (), "b": (), "c": ()}


def test_every_task_without_dependencies_is_ready_at_once() -> None:
    g = graph({"a": (), "b": (), "c": ()}, [("c", "a", "SUCCESS")])
    assert decide(g, {}).ready == ids(g, "a", "b")


def test_a_success_edge_waits_then_runs() -> None:
    g = graph(CHAIN, [("b", "a", "SUCCESS"), ("c", "b", "SUCCESS")])
    assert decide(g, states(g, a="IN-PROGRESS")).waiting == ids(g, "b", "c")
    assert decide(g, states(g, a="SUCCESS")).ready == ids(g, "b")


def test_a_failed_upstream_is_not_final_while_other_work_can_start() -> None:
    g = graph(CHAIN, [("b", "a", "SUCCESS"), ("c", "a", "FAILURE")])
    pending = decide(g, states(g, a="FAILED"))
    assert pending.ready == () and pending.skipped == {} and pending.waiting == ids(g, "b", "c")
    final = decide(g, states(g, a="FAILED"), failure_final=True)
    assert final.ready == ids(g, "c")
    assert final.skipped == {
        g.by_code("b").task_id: "its dependencies can no longer be met: a (FAILED, SUCCESS needed)"
    }  # type: ignore[union-attr]


def test_skips_cascade_and_always_edges_still_run() -> None:
    g = graph(
        {"a": (), "b": (), "c": (), "alert": ()},
        [("b", "a", "SUCCESS"), ("c", "b", "SUCCESS"), ("alert", "c", "ALWAYS")],
    )
    final = decide(g, states(g, a="FAILED"), failure_final=True)
    assert set(final.skipped) == set(ids(g, "b", "c"))
    assert final.ready == ids(g, "alert")


def test_a_failure_edge_on_a_succeeded_task_is_skipped() -> None:
    g = graph({"a": (), "alert": ()}, [("alert", "a", "FAILURE")])
    decision = decide(g, states(g, a="SUCCESS"))
    assert decision.skipped == {
        g.by_code("alert").task_id: "its dependencies can no longer be met: a (SUCCESS, FAILURE needed)"
    }  # type: ignore[union-attr]


def test_b42_has_data_means_rows_were_written() -> None:
    g = graph({"a": (), "b": ()}, [("b", "a", "HAS_DATA")])
    assert decide(g, states(g, a=("SUCCESS", 3))).ready == ids(g, "b")
    nothing = decide(g, states(g, a=("SUCCESS", 0)))
    assert nothing.skipped == {
        g.by_code(
            "b"
        ).task_id: "its dependencies can no longer be met: a (SUCCESS with 0 rows written, HAS_DATA needed)"
    }  # type: ignore[union-attr]


def test_any_starts_as_soon_as_one_dependency_is_met() -> None:
    g = graph(
        {"a": (), "b": (), "c": ()}, [("c", "a", "SUCCESS"), ("c", "b", "SUCCESS")], conditions={"c": ("ANY", None)}
    )
    assert decide(g, states(g, a="SUCCESS", b="IN-PROGRESS")).ready == ids(g, "c")
    assert decide(g, states(g, a="SKIPPED", b="IN-PROGRESS")).waiting == ids(g, "c")
    skipped = decide(g, states(g, a="SKIPPED", b="SKIPPED")).skipped
    assert (
        "only 0 of its dependencies can still be met and 1 are needed (RUN_CONDITION ANY)"
        in skipped[g.by_code("c").task_id]
    )  # type: ignore[union-attr]


def test_n_needs_its_count() -> None:
    g = graph(
        {"a": (), "b": (), "c": (), "d": ()},
        [("d", "a", "SUCCESS"), ("d", "b", "SUCCESS"), ("d", "c", "SUCCESS")],
        conditions={"d": ("N", 2)},
    )
    assert decide(g, states(g, a="SUCCESS", b="IN-PROGRESS", c="IN-PROGRESS")).waiting == ids(g, "d")
    assert decide(g, states(g, a="SUCCESS", b="SUCCESS", c="IN-PROGRESS")).ready == ids(g, "d")
    assert g.by_code("d").task_id in decide(g, states(g, a="SKIPPED", b="SKIPPED", c="IN-PROGRESS")).skipped  # type: ignore[union-attr]


def test_graph_errors_name_what_is_wrong() -> None:
    with pytest.raises(SelfDependencyError, match=r"task P\.a"):
        graph({"a": ()}, [("a", "a", "SUCCESS")])
    with pytest.raises(CycleError, match=r"a dependency cycle: (a -> b -> c -> a|b -> c -> a -> b|c -> a -> b -> c)"):
        graph(CHAIN, [("b", "a", "SUCCESS"), ("c", "b", "SUCCESS"), ("a", "c", "SUCCESS")])
    with pytest.raises(GraphError, match="RUN_CONDITION_COUNT 3 and 1 dependencies"):
        graph({"a": (), "b": ()}, [("b", "a", "SUCCESS")], conditions={"b": ("N", 3)})
    rows = [TaskRow(1, "a", "ETL", 1, "PYTHON", None, None)]
    with pytest.raises(UnknownTaskError, match=r"Q\.x"):
        build_graph(PIPELINE, rows, [EdgeRow(1, 1, 9, None, "SUCCESS", "Y")], {}, {9: ("Q", "x", True)})


def test_waves_and_downstream_are_derived() -> None:
    g = graph(
        {"a": (), "b": (), "c": (), "d": ()}, [("b", "a", "SUCCESS"), ("c", "b", "SUCCESS"), ("d", "a", "ALWAYS")]
    )
    assert [[n.code for n in wave] for wave in g.waves()] == [["a"], ["b", "d"], ["c"]]
    assert g.downstream_of(g.by_code("a").task_id) == set(ids(g, "b", "c", "d"))  # type: ignore[union-attr]


def test_b30_run_outcomes_and_all_skipped_runs_end_skipped() -> None:
    g = graph(
        {"a": (), "b": (), "alert": ()},
        [("b", "a", "SUCCESS"), ("alert", "b", "FAILURE")],
        handlers={"alert": "EMAIL_ALERT"},
    )
    assert judge_run(g, states(g, a="SUCCESS"), {}) is None
    ok = judge_run(g, states(g, a="SUCCESS", b="SUCCESS", alert="SKIPPED"), {})
    assert ok is not None and ok.status is RunStatus.SUCCESS
    # An alert's failure doesn't change a data pipeline's outcome.
    alert_failed = judge_run(g, states(g, a="SUCCESS", b="SUCCESS", alert="FAILED"), {})
    assert alert_failed is not None and alert_failed.status is RunStatus.SUCCESS
    failed = judge_run(
        g,
        states(g, a="FAILED", b="SKIPPED", alert="SUCCESS"),
        {g.by_code("b").task_id: "its dependencies can no longer be met: a (FAILED, SUCCESS needed)"},
    )  # type: ignore[union-attr]
    assert failed is not None and failed.status is RunStatus.FAILED
    assert failed.message == "1 task(s) did not succeed: a (FAILED); skipped because of the failure: b"
    skipped = judge_run(g, states(g, a="SKIPPED", b="SKIPPED", alert="SKIPPED"), {})
    assert skipped is not None and skipped.status is RunStatus.SKIPPED


def test_the_sla_verdict() -> None:
    from datetime import UTC, datetime
    from decimal import Decimal

    start = datetime(2026, 1, 1, tzinfo=UTC)
    assert sla_verdict(None, start, start) is None
    assert sla_verdict(Decimal("1.5"), start, datetime(2026, 1, 1, 1, 30, tzinfo=UTC)) == "MET"
    assert sla_verdict(Decimal("1.5"), start, datetime(2026, 1, 1, 1, 31, tzinfo=UTC)) == "BREACHED"
