"""Which tasks of a run may start now, which must wait and which can never run (ready-set rules).

Pure functions over the graph and each task's state under the run. Dependency types (interface §4.2):
SUCCESS needs a SUCCESS upstream, FAILURE a FAILED one, ALWAYS any end, HAS_DATA a SUCCESS that wrote
rows. A FAILED upstream is not final while other work can still start (a retry or a rerun may fix it):
the run loop passes `failure_final=True` only once nothing else can start. Edges to another
pipeline's tasks are judged by gates at admission; here they only keep a run condition possible.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from etl_craft.core.enums import DependencyType, RunCondition
from etl_craft.execution.graph import Edge, Graph, TaskNode


class Phase(StrEnum):
    NOT_RUN = "NOT RUN"
    ACTIVE = "IN-PROGRESS"  # a live attempt, or a retry waiting for its time
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    CANCELLED = "CANCELLED"

    @property
    def settled(self) -> bool:
        return self not in (Phase.NOT_RUN, Phase.ACTIVE)


@dataclass(frozen=True)
class TaskState:
    phase: Phase
    rows_written: int | None = None


NOT_RUN = TaskState(Phase.NOT_RUN)


class Verdict(StrEnum):
    MET = "met"
    UNMET = "unmet"
    PENDING = "pending"


def edge_verdict(edge: Edge, upstream: TaskState, *, failure_final: bool) -> Verdict:
    """Whether one in-pipeline dependency is met, can no longer be met, or is still open."""
    phase = upstream.phase
    if phase in (Phase.NOT_RUN, Phase.ACTIVE) or (phase is Phase.FAILED and not failure_final):
        return Verdict.PENDING
    if edge.type is DependencyType.ALWAYS:
        return Verdict.MET
    if edge.type is DependencyType.SUCCESS:
        return Verdict.MET if phase is Phase.SUCCESS else Verdict.UNMET
    if edge.type is DependencyType.HAS_DATA:
        return Verdict.MET if phase is Phase.SUCCESS and (upstream.rows_written or 0) > 0 else Verdict.UNMET
    return Verdict.MET if phase is Phase.FAILED else Verdict.UNMET  # FAILURE


def describe_upstream(graph: Graph, edge: Edge, state: TaskState) -> str:
    upstream = graph.tasks[edge.upstream].code
    detail = state.phase.value
    if edge.type is DependencyType.HAS_DATA and state.phase is Phase.SUCCESS:
        detail = f"SUCCESS with {state.rows_written or 0} rows written"
    return f"{upstream} ({detail}, {edge.type.value} needed)"


@dataclass(frozen=True)
class Decision:
    ready: tuple[int, ...]  # may start now (another pipeline's dependencies are judged at admission)
    skipped: Mapping[int, str]  # can never run under this run: task id -> reason
    waiting: tuple[int, ...]  # some dependency is still open


def _judge(
    graph: Graph, node: TaskNode, states: Mapping[int, TaskState], failure_final: bool
) -> tuple[str, str | None]:
    """('ready' | 'wait' | 'skip', reason) for a task that has not run."""
    local = [e for e in node.edges if not e.cross_pipeline]
    cross = len(node.edges) - len(local)
    verdicts = [(e, edge_verdict(e, states.get(e.upstream, NOT_RUN), failure_final=failure_final)) for e in local]
    met = sum(v is Verdict.MET for _, v in verdicts)
    pending = sum(v is Verdict.PENDING for _, v in verdicts)
    required = node.required
    if met + pending + cross < required:
        unmet = [
            describe_upstream(graph, e, states.get(e.upstream, NOT_RUN)) for e, v in verdicts if v is Verdict.UNMET
        ]
        if node.run_condition is RunCondition.ALL:
            reason = "its dependencies can no longer be met: " + ", ".join(unmet)
        else:
            possible = met + pending + cross
            reason = (
                f"only {possible} of its dependencies can still be met and {required} are needed "
                f"(RUN_CONDITION {node.run_condition.value}): " + ", ".join(unmet)
            )
        return "skip", reason
    if met >= required or (met + cross >= required and pending == 0):
        return "ready", None
    return "wait", None


def decide(graph: Graph, states: Mapping[int, TaskState], *, failure_final: bool = False) -> Decision:
    """Apply the ready-set rules to every task that has not run, cascading skips to a fixed point."""
    current = dict(states)
    skipped: dict[int, str] = {}
    while True:
        ready, waiting, new_skips = [], [], {}
        for task_id, node in graph.tasks.items():
            if current.get(task_id, NOT_RUN).phase is not Phase.NOT_RUN:
                continue
            verdict, reason = _judge(graph, node, current, failure_final)
            if verdict == "skip":
                new_skips[task_id] = reason or ""
            elif verdict == "ready":
                ready.append(task_id)
            else:
                waiting.append(task_id)
        if not new_skips:
            return Decision(tuple(sorted(ready)), skipped, tuple(sorted(waiting)))
        skipped.update(new_skips)
        for task_id in new_skips:
            current[task_id] = TaskState(Phase.SKIPPED)
