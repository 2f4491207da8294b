"""Admitting a new run through its pipeline gates.

The run is created QUEUED and held with a lease while its gates are judged. A gate that waits on a
running upstream is looked at again on the schedule of `gates.next_look`, and the wait is stored in
AUD_GATE_WAITS, so a restarted caller resumes it without a new first look. The decisions are written
in the transaction that admits the run (QUEUED -> IN-PROGRESS) or, when a gate refuses, ends it
SKIPPED; only the caller that holds the run ever ends it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta

import sqlalchemy as sa

from etl_craft.config.model import ConnectorConfig, OrchestrationSettings
from etl_craft.core.actor import Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import DependencyType, InterventionAction, RunStatus
from etl_craft.engine import transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads import PipelineRow
from etl_craft.engine.records import gate_records
from etl_craft.engine.records.gate_records import BYPASSED, SATISFIED, UNSATISFIED, Decision, StoredWait
from etl_craft.execution.alert_channels.notify import gate_wait_hook
from etl_craft.execution.gates.judge import (
    Answer,
    GateEdge,
    Verdict,
    WaitState,
    average_seconds,
    judge,
    next_look,
    strongest,
)
from etl_craft.execution.run_loop.leases import Heartbeat, lease_until
from etl_craft.execution.run_loop.signals import StopSignals

log = logging.getLogger("etl_craft.admission")


@dataclass(frozen=True)
class Admitted:
    run_id: int
    status: str  # IN-PROGRESS when admitted, SKIPPED when a gate refused, QUEUED when left waiting
    reason: str = ""
    next_check_at: datetime | None = None  # QUEUED: when a gate looks again


def pipeline_edges(conn: sa.Connection, pipeline: PipelineRow) -> list[GateEdge]:
    return [
        GateEdge(
            pipeline_dependency_id=row.pipeline_dependency_id,
            task_dependency_id=None,
            upstream_pipeline_id=row.depends_on_pipeline_id,
            upstream_code=row.pipeline_code,
            type=DependencyType(row.dependency_type),
            consume_repairs=row.consume_repairs == "Y",
        )
        for row in gate_records.pipeline_gate_edges(conn, pipeline.pipeline_id)
    ]


def _decision(verdict: Verdict, result: str, reason: str | None = None) -> Decision:
    satisfied = result == SATISFIED
    return Decision(
        verdict.edge.pipeline_dependency_id,
        verdict.edge.task_dependency_id,
        result,
        reason or verdict.reason,
        verdict.run_id if satisfied else None,
        verdict.task_run_id if satisfied else None,
        verdict.revision if satisfied else None,
    )


def admit_lock(pipeline_id: int) -> str:
    """The lock under which a pipeline's runs are created, held and admitted, one caller at a time."""
    return f"admit:{pipeline_id}"


def decisions_for(
    verdicts: list[Verdict], gates_mode: str, bypass_reason: str | None
) -> tuple[list[Decision], list[Verdict]]:
    """Decisions to record, and the verdicts that refuse admission (none when bypassed)."""
    decisions, refusing = [], []
    for verdict in verdicts:
        if bypass_reason is not None:
            decisions.append(_decision(verdict, BYPASSED, f"{bypass_reason}; {verdict.reason}"))
        elif verdict.answer is Answer.SATISFIED:
            decisions.append(_decision(verdict, SATISFIED))
        elif gates_mode == "warn":
            decisions.append(_decision(verdict, BYPASSED, f"Dependency_gates is warn; {verdict.reason}"))
            log.warning("gate let through (Dependency_gates: warn): %s", verdict.reason)
        else:
            decisions.append(_decision(verdict, UNSATISFIED))
            refusing.append(verdict)
    return decisions, refusing


class PipelineAdmission:
    def __init__(
        self,
        db: EngineDb,
        orchestration: OrchestrationSettings,
        pipeline: PipelineRow,
        owner_id: str,
        actor: Actor,
        progress: Callable[[str], None],
        sleep: Callable[[float], bool],
        on_wait: Callable[[datetime, str], None] | None = None,
    ) -> None:
        """`sleep(seconds)` waits and returns False when the caller must stop (a signal arrived);
        `on_wait(first look, what it waits for)` is told after each look that keeps waiting (alerts)."""
        self.db, self.orchestration, self.pipeline = db, orchestration, pipeline
        self.owner_id, self.actor, self.progress, self.sleep = owner_id, actor, progress, sleep
        self.on_wait = on_wait

    def admit(self, run_id: int, bypass_reason: str | None = None) -> Admitted:
        """Judge until the run is admitted or refused, sleeping between looks (the foreground CLI)."""
        while True:
            result = self.admit_once(run_id, bypass_reason)
            if result.status != "QUEUED":
                return result
            assert result.next_check_at is not None
            if not self.sleep(max(0.0, (result.next_check_at - utc_now()).total_seconds())):
                return Admitted(run_id, "QUEUED", "stopped while waiting for its pipeline dependencies")

    def admit_once(self, run_id: int, bypass_reason: str | None = None) -> Admitted:
        """One look, never blocking: admitted, refused, or QUEUED with the time of the next look (the
        overseer calls this every loop without holding a thread or a slot for the wait)."""
        if self.orchestration.dependency_gates == "off" and bypass_reason is None:
            bypass_reason = "Dependency_gates is off"
        now = utc_now()
        with self.db.read() as conn:  # one read transaction: an overseer admits many runs per pass
            edges = pipeline_edges(conn, self.pipeline)
            stored = gate_records.load_wait(conn, run_id, None)
            if bypass_reason is None and stored is not None and stored.next_check_at and stored.next_check_at > now:
                return Admitted(run_id, "QUEUED", "waiting", stored.next_check_at)
            verdicts = (
                [judge(conn, edge) for edge in edges]
                if bypass_reason is None
                else [Verdict(edge, Answer.SATISFIED, f"{edge.upstream_code} not judged") for edge in edges]
            )
        if strongest(verdicts) is Answer.WAIT and bypass_reason is None:
            waited = self._wait(run_id, verdicts, stored, now)
            if isinstance(waited, datetime):
                return Admitted(run_id, "QUEUED", "waiting", waited)
            verdicts = waited
        return self._decide(run_id, verdicts, bypass_reason, now)

    def _wait(
        self, run_id: int, verdicts: list[Verdict], stored: StoredWait | None, now: datetime
    ) -> list[Verdict] | datetime:
        """Store the next look and return its time, or, when the budget is spent, the final verdicts."""
        minutes = self.orchestration.gate_wait_minutes
        state = (
            WaitState(stored.first_check_at, stored.looks, stored.wait_until)
            if stored
            else WaitState(now, 0, now + timedelta(minutes=minutes))
        )
        waiting = [v for v in verdicts if v.answer is Answer.WAIT]
        with self.db.read() as conn:
            average = average_seconds(conn, waiting[0].edge.upstream_pipeline_id)
        following = next_look(state, now, waiting[0].running_since, average) if minutes > 0 else None
        if following is None:
            spent = f"still running after waiting {minutes} minute(s) (Orchestration.Gate_wait_minutes)"
            return [
                Verdict(v.edge, Answer.UNSATISFIED, f"{v.reason}: {spent}") if v.answer is Answer.WAIT else v
                for v in verdicts
            ]
        with self.db.write() as conn:
            gate_records.save_wait(
                conn, run_id, None, StoredWait(state.first_check_at, following, state.looks + 1, state.wait_until)
            )
        names = ", ".join(v.edge.upstream_code for v in waiting)
        self.progress(
            f"{self.pipeline.pipeline_code}: pipeline_run_id={run_id} waits for {names} "
            f"(look {state.looks + 1}, next at {following:%H:%M:%S}Z)"
        )
        if self.on_wait is not None:
            self.on_wait(state.first_check_at, f"waiting for {names}")
        return following

    def _decide(self, run_id: int, verdicts: list[Verdict], bypass_reason: str | None, now: datetime) -> Admitted:
        decisions, refusing = decisions_for(verdicts, self.orchestration.dependency_gates, bypass_reason)
        with self.db.write() as conn:
            gate_records.record_decisions(conn, run_id, decisions, now)
            gate_records.settle_wait(conn, run_id, None)
            if refusing:
                transitions.finish_run(
                    conn,
                    run_id,
                    status=RunStatus.SKIPPED,
                    actor=self.actor,
                    now=now,
                    owner_id=self.owner_id,
                    from_status=RunStatus.QUEUED,
                )
                return Admitted(run_id, "SKIPPED", "upstream pipeline " + "; ".join(v.reason for v in refusing))
            transitions.start_run(conn, run_id, owner_id=self.owner_id, lease_until=lease_until(now), now=now)
            for decision in decisions:
                if decision.result == BYPASSED:
                    transitions.record_intervention(
                        conn,
                        run_id=run_id,
                        action=InterventionAction.GATE_BYPASS,
                        actor=self.actor,
                        reason=decision.reason,
                        now=now,
                    )
        return Admitted(run_id, "IN-PROGRESS")


def admit_held_run(
    db: EngineDb,
    config: ConnectorConfig,
    pipeline: PipelineRow,
    run_id: int,
    owner_id: str,
    actor: Actor,
    signals: StopSignals,
    progress: Callable[[str], None],
    *,
    bypass_reason: str | None = None,
) -> Admitted:
    """Judge the pipeline gates of a QUEUED run this caller holds, renewing its lease meanwhile and
    telling the alert channels when it waits long."""
    on_wait = gate_wait_hook(db, config, pipeline.pipeline_code, run_id)
    heartbeat = Heartbeat(db, owner_id, run_id, signals.wake)
    heartbeat.start()
    try:
        admission = PipelineAdmission(
            db, config.orchestration, pipeline, owner_id, actor, progress, signals.sleep, on_wait
        )
        return admission.admit(run_id, bypass_reason=bypass_reason)
    finally:
        heartbeat.stop()
