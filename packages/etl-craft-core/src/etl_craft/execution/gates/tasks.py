"""Admitting an attempt whose task depends on tasks of other pipelines.

Judged when the task is ready inside its own pipeline; the dependencies on other pipelines count
toward its run condition with its own. SATISFIED starts the attempt (the decisions go into the claim's
transaction); WAIT leaves the task waiting without a slot, with the wait stored in AUD_GATE_WAITS;
UNSATISFIED records the task SKIPPED with the decisions and their reasons. A backfill judges none of
them: SUCCESS, HAS_DATA and ALWAYS edges count as met, FAILURE edges as unmet.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

from etl_craft.config.model import OrchestrationSettings
from etl_craft.core.enums import DependencyType
from etl_craft.engine.database import EngineDb
from etl_craft.engine.records import gate_records
from etl_craft.engine.records.gate_records import StoredWait
from etl_craft.execution.gates.admission import decisions_for
from etl_craft.execution.gates.judge import Answer, GateEdge, Verdict, WaitState, average_seconds, judge, next_look
from etl_craft.execution.graph import Graph, TaskNode
from etl_craft.execution.readiness import NOT_RUN, TaskState, edge_verdict
from etl_craft.execution.readiness import Verdict as LocalVerdict

BACKFILL_FAILURE = "backfills don't evaluate FAILURE dependencies on other pipelines"
BACKFILL_BYPASS = "a backfill run does not judge dependencies on other pipelines"


@dataclass(frozen=True)
class TaskAdmission:
    answer: Answer
    decisions: list[gate_records.Decision]
    reason: str = ""
    next_check_at: datetime | None = None
    waiting_since: datetime | None = None  # WAIT: when the task's first look found it waiting


def cross_edges(node: TaskNode) -> list[GateEdge]:
    return [
        GateEdge(
            pipeline_dependency_id=None,
            task_dependency_id=e.dependency_id,
            upstream_pipeline_id=e.upstream_pipeline_id or 0,
            upstream_code=e.upstream_code,
            type=e.type,
            consume_repairs=e.consume_repairs,
            upstream_task_id=e.upstream,
        )
        for e in node.edges
        if e.cross_pipeline
    ]


class TaskGates:
    def __init__(self, db: EngineDb, orchestration: OrchestrationSettings) -> None:
        self.db, self.orchestration = db, orchestration

    def admit(
        self,
        graph: Graph,
        node: TaskNode,
        states: Mapping[int, TaskState],
        run_id: int,
        now: datetime,
        *,
        backfill: bool,
        bypass_reason: str | None = None,
    ) -> TaskAdmission:
        edges = cross_edges(node)
        local_met = sum(
            edge_verdict(e, states.get(e.upstream, NOT_RUN), failure_final=True) is LocalVerdict.MET
            for e in node.edges
            if not e.cross_pipeline
        )
        if backfill:
            verdicts = [
                Verdict(e, Answer.UNSATISFIED, BACKFILL_FAILURE)
                if e.type is DependencyType.FAILURE
                else Verdict(e, Answer.SATISFIED, BACKFILL_BYPASS)
                for e in edges
            ]
            decisions = [
                gate_records.Decision(
                    None,
                    v.edge.task_dependency_id,
                    "UNSATISFIED" if v.answer is Answer.UNSATISFIED else "BYPASSED",
                    v.reason,
                )
                for v in verdicts
            ]
            met = local_met + sum(v.answer is Answer.SATISFIED for v in verdicts)
            if met >= node.required:
                return TaskAdmission(Answer.SATISFIED, decisions)
            return TaskAdmission(Answer.UNSATISFIED, decisions, BACKFILL_FAILURE)
        if bypass_reason is None and self.orchestration.dependency_gates == "off":
            bypass_reason = "Dependency_gates is off"
        with self.db.read() as conn:
            stored = gate_records.load_wait(conn, run_id, node.task_id)
            if bypass_reason is None and stored and stored.next_check_at and stored.next_check_at > now:
                return TaskAdmission(Answer.WAIT, [], "waiting", stored.next_check_at, stored.first_check_at)
            verdicts = (
                [judge(conn, e) for e in edges]
                if bypass_reason is None
                else [Verdict(e, Answer.SATISFIED, e.upstream_code) for e in edges]
            )
        return self._combine(node, run_id, local_met, verdicts, stored, now, bypass_reason)

    def _combine(
        self,
        node: TaskNode,
        run_id: int,
        local_met: int,
        verdicts: list[Verdict],
        stored: StoredWait | None,
        now: datetime,
        bypass_reason: str | None,
    ) -> TaskAdmission:
        mode = self.orchestration.dependency_gates
        counted = [v for v in verdicts if v.answer is not Answer.WAIT]
        decisions, refusing = decisions_for(counted, mode, bypass_reason)
        met = local_met + len(counted) - len(refusing)
        waiting = [v for v in verdicts if v.answer is Answer.WAIT]
        if met >= node.required:
            return TaskAdmission(
                Answer.SATISFIED,
                decisions
                + [
                    gate_records.Decision(
                        None, v.edge.task_dependency_id, "BYPASSED", f"not needed by the run condition; {v.reason}"
                    )
                    for v in waiting
                ],
            )
        if waiting and met + len(waiting) >= node.required:
            following = self._next_look(run_id, node, waiting, stored, now)
            if following is not None:
                since = stored.first_check_at if stored else now
                names = ", ".join(v.edge.upstream_code for v in waiting)
                return TaskAdmission(Answer.WAIT, [], "waiting for " + names, following, since)
            spent = f"still running after waiting {self.orchestration.gate_wait_minutes} minute(s)"
            decisions += [
                gate_records.Decision(None, v.edge.task_dependency_id, "UNSATISFIED", f"{v.reason}: {spent}")
                for v in waiting
            ]
            refusing += waiting
        reason = "dependencies on other pipelines not met: " + "; ".join(v.reason for v in refusing)
        return TaskAdmission(Answer.UNSATISFIED, decisions, reason)

    def _next_look(
        self, run_id: int, node: TaskNode, waiting: list[Verdict], stored: StoredWait | None, now: datetime
    ) -> datetime | None:
        minutes = self.orchestration.gate_wait_minutes
        if minutes <= 0:
            return None
        state = (
            WaitState(stored.first_check_at, stored.looks, stored.wait_until)
            if stored
            else WaitState(now, 0, now + timedelta(minutes=minutes))
        )
        with self.db.read() as conn:
            average = average_seconds(conn, waiting[0].edge.upstream_pipeline_id)
        following = next_look(state, now, waiting[0].running_since, average)
        if following is not None:
            with self.db.write() as conn:
                gate_records.save_wait(
                    conn,
                    run_id,
                    node.task_id,
                    StoredWait(state.first_check_at, following, state.looks + 1, state.wait_until),
                )
        return following
