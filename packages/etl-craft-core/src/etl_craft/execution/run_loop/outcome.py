"""How a settled run ends, and the one transaction that ends it.

Run outcome rules (interface §4.4): SUCCESS when every data task succeeded or was skipped, and not all
were skipped; SKIPPED when all were skipped; FAILED otherwise. EMAIL_ALERT tasks don't count unless
the pipeline has nothing else. The status, the SLA verdict and the pipeline-dependency consumption
commit together; a run that was cancelled or changed meanwhile is left as it is.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.core.actor import Actor, system_actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import RunStatus
from etl_craft.core.errors import StaleTransitionError
from etl_craft.core.sla import sla_verdict
from etl_craft.engine import reads, transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.records import gate_records
from etl_craft.execution.graph import Graph
from etl_craft.execution.readiness import Phase, TaskState

log = logging.getLogger("etl_craft.outcome")


@dataclass(frozen=True)
class RunVerdict:
    status: RunStatus
    message: str  # the part after "CODE: pipeline_run_id=N STATUS"


def judge_run(graph: Graph, states: Mapping[int, TaskState], skip_reasons: Mapping[int, str]) -> RunVerdict | None:
    """The run's status once every task is settled; None while any task has not run or is running."""
    if any(not states.get(t, TaskState(Phase.NOT_RUN)).phase.settled for t in graph.tasks):
        return None
    if not graph.tasks:
        return RunVerdict(RunStatus.SKIPPED, "the pipeline has no active tasks")
    data = [t for t in graph.tasks.values() if not t.is_alert] or list(graph.tasks.values())
    phases = {t.task_id: states[t.task_id].phase for t in data}
    if all(p is Phase.SKIPPED for p in phases.values()):
        return RunVerdict(RunStatus.SKIPPED, "every task was skipped")
    if all(p in (Phase.SUCCESS, Phase.SKIPPED) for p in phases.values()):
        return RunVerdict(RunStatus.SUCCESS, "")
    failed = [t for t in data if phases[t.task_id] not in (Phase.SUCCESS, Phase.SKIPPED)]
    parts = [
        f"{len(failed)} task(s) did not succeed: " + ", ".join(f"{t.code} ({phases[t.task_id].value})" for t in failed)
    ]
    failed_codes = {t.code for t in failed}
    because = sorted(
        graph.tasks[t].code
        for t, reason in skip_reasons.items()
        if any(f"{code} (FAILED" in reason or f"{code} (CANCELLED" in reason for code in failed_codes)
    )
    if because:
        parts.append("skipped because of the failure: " + ", ".join(because))
    return RunVerdict(RunStatus.FAILED, "; ".join(parts))


def settle(
    db: EngineDb,
    graph: Graph,
    run_id: int,
    *,
    owner_id: str | None,
    extra_skip_reasons: Mapping[int, str] = {},
    actor: Actor | None = None,
) -> RunVerdict | None:
    """End the run if every task is settled; returns the verdict it ended with, else None.
    `actor` is who ends it (ENDED_BY): the command's actor for a finalize step, else SYSTEM."""
    with db.write() as conn:
        task_runs = reads.task_runs_of(conn, run_id)
        states = {t: TaskState(Phase(r.status), r.rows_written) for t, r in task_runs.items()}
        reasons = {t: r.error_message or "" for t, r in task_runs.items() if r.status == "SKIPPED"}
        reasons.update(extra_skip_reasons)
        verdict = judge_run(graph, states, reasons)
        if verdict is None:
            return None
        ended = finalize(conn, graph, run_id, verdict, actor=actor or system_actor(), now=utc_now(), owner_id=owner_id)
    failed = {t for t, r in task_runs.items() if r.status == "FAILED"}
    failed_alerts = [n.code for n in graph.tasks.values() if n.is_alert and n.task_id in failed]
    if ended and failed_alerts and any(not n.is_alert for n in graph.tasks.values()):
        # Excluded from the run's status (Appendix B), so named here, where the run ends.
        log.error(
            "%s: pipeline_run_id=%s %s, alert task(s) that failed: %s (the run's status does not count them)",
            graph.code,
            run_id,
            verdict.status.value,
            ", ".join(failed_alerts),
        )
    return verdict if ended else None


def finalize(
    conn: sa.Connection,
    graph: Graph,
    run_id: int,
    verdict: RunVerdict,
    *,
    actor: Actor,
    now: datetime,
    owner_id: str | None,
) -> bool:
    """End the run in this transaction; False (and nothing written) when the run changed meanwhile."""
    run = reads.run(conn, run_id)
    if run is None or run.status != "IN-PROGRESS":
        return False
    try:
        transitions.finish_run(
            conn,
            run_id,
            status=verdict.status,
            actor=actor,
            now=now,
            owner_id=owner_id,
            sla_status=sla_verdict(graph.pipeline.sla_in_hours, run.start_date, now),
        )
    except StaleTransitionError:
        return False
    if verdict.status is RunStatus.SUCCESS:
        # Consumption in the same transaction as the ending, from the decisions made at admission.
        gate_records.consume_pipeline_decisions(conn, run_id, now)
    return True
