"""`run --backfill FROM:TO --reason R`: one BACKFILL run per date, oldest first.

Backfill runs never feed or block other pipelines' gates, judge no dependency on another pipeline
(pipeline dependencies are recorded BYPASSED with a GATE_BYPASS intervention; FAILURE edges of tasks
count as unmet), and scripts get no offset and store none. Before every date the pipeline is checked
for another run: one that intervened stops the backfill with the exact command that resumes it.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import date, timedelta

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ENDED_WELL, InterventionAction, RunStatus, TriggerKind
from etl_craft.core.errors import ExitCode, RunStateError, StaleTransitionError, UsageError
from etl_craft.core.faults import fault_point
from etl_craft.engine import locks, reads, transitions
from etl_craft.engine.records import gate_records
from etl_craft.engine.records.actions import record_request
from etl_craft.execution.gates.admission import admit_lock
from etl_craft.execution.graph import Graph, load_graph
from etl_craft.execution.processes.identity import my_owner_id
from etl_craft.execution.run_loop.leases import lease_until
from etl_craft.execution.run_loop.reconcile import reconcile
from etl_craft.execution.run_loop.scope import Ending, Scope
from etl_craft.execution.run_loop.signals import StopSignals
from etl_craft.services.context import OperationContext
from etl_craft.services.runs.request import Progress, RunRequest, config_fingerprint, supervise
from etl_craft.services.targets.warehouse_file import require_warehouse_file

MAX_DATES = 366


@dataclass(frozen=True)
class BackfillDate:
    run_date: date
    pipeline_run_id: int | None
    status: str


@dataclass(frozen=True)
class BackfillView:
    pipeline: str
    first: date
    last: date
    status: str  # SUCCESS when every date ran, FAILED or INCOMPLETE when it stopped
    message: str
    exit_code: int
    dates: tuple[BackfillDate, ...] = field(default=())
    resume_command: str | None = None


def parse_range(text: str) -> tuple[date, date]:
    first_text, sep, last_text = text.partition(":")
    try:
        first, last = date.fromisoformat(first_text), date.fromisoformat(last_text)
    except ValueError:
        raise UsageError(
            "--backfill",
            found=repr(text),
            expected="FROM:TO as YYYY-MM-DD:YYYY-MM-DD",
            remedy="write both dates, e.g. --backfill 2026-10-01:2026-10-07",
        ) from None
    if not sep or last < first:
        raise UsageError(
            "--backfill",
            found=repr(text),
            expected="a first date no later than the last",
            remedy="give the earlier date first",
        )
    if (last - first).days + 1 > MAX_DATES:
        raise UsageError(
            "--backfill",
            found=f"{(last - first).days + 1} dates",
            expected=f"at most {MAX_DATES}",
            remedy=f"split the range into backfills of at most {MAX_DATES} dates",
        )
    return first, last


def _resume(graph: Graph, start: date, last: date, reason: str) -> str:
    return f"etl-craft run --pipeline_code {graph.code} --backfill {start}:{last} --reason {reason!r}"


def run_backfill(
    ctx: OperationContext,
    graph: Graph,
    request: RunRequest,
    first: date,
    last: date,
    signals: StopSignals,
    progress: Progress,
) -> BackfillView:
    pipeline = graph.pipeline
    owner = my_owner_id()
    total = (last - first).days + 1
    record_request(ctx.db, ctx.actor, "run", request.arguments(), pipeline_id=pipeline.pipeline_id)
    done: list[BackfillDate] = []
    for offset in range(total):
        day = first + timedelta(days=offset)
        if offset:
            fault_point("backfill_next_date")
        run_id = _start_date(ctx, graph, day, str(owner))
        if isinstance(run_id, str):
            return _stopped(graph, first, last, done, day, request, run_id, "INCOMPLETE", ExitCode.INCOMPLETE)
        outcome = supervise(ctx, graph, run_id, owner, Scope(), signals, progress, request)
        done.append(
            BackfillDate(day, run_id, outcome.run_status if outcome.ending is Ending.FINISHED else "IN-PROGRESS")
        )
        progress(f"{graph.code}: backfill {len(done)} of {total} date(s) done ({day} {done[-1].status})")
        if outcome.ending is not Ending.FINISHED:
            why = f"run {run_id} as of {day} was left unfinished ({outcome.message})"
            return _stopped(graph, first, last, done, day, request, why, "INCOMPLETE", ExitCode.INCOMPLETE)
        if outcome.run_status not in ENDED_WELL:
            why = f"run {run_id} as of {day} ended {outcome.run_status}: {outcome.message}"
            return _stopped(graph, first, last, done, day, request, why, "FAILED", ExitCode.FAILURE)
    message = f"{graph.code}: backfill {first}:{last} done, {total} run(s)"
    return BackfillView(graph.code, first, last, "SUCCESS", message, int(ExitCode.SUCCESS), tuple(done))


def _stopped(
    graph: Graph,
    first: date,
    last: date,
    done: list[BackfillDate],
    at: date,
    request: RunRequest,
    why: str,
    status: str,
    code: ExitCode,
) -> BackfillView:
    restart = at if status == "INCOMPLETE" and (not done or done[-1].run_date != at) else at + timedelta(days=1)
    resume = _resume(graph, restart, last, request.reason or "") if restart <= last else None
    message = f"{graph.code}: backfill stopped after {len(done)} of {(last - first).days + 1} date(s): {why}"
    if resume:
        message += f". Resume with: {resume}"
    return BackfillView(graph.code, first, last, status, message, int(code), tuple(done), resume)


def _start_date(ctx: OperationContext, graph: Graph, day: date, owner_id: str) -> int | str:
    """The run of one date, admitted without judging other pipelines; a reason string when another
    run of the pipeline is unfinished or it is paused."""
    pipeline = graph.pipeline
    now = utc_now()
    with locks.hold(ctx.db, admit_lock(pipeline.pipeline_id), timeout=60.0), ctx.db.write() as conn:
        pause = reads.open_pause(conn, pipeline.pipeline_id)
        if pause is not None:
            return f"the pipeline was paused by {pause.paused_by} ({pause.reason})"
        unfinished = reads.unfinished_runs(conn, pipeline.pipeline_id)
        if unfinished:
            other = unfinished[0]
            return f"run {other.pipeline_run_id} ({other.run_key}, {other.status}) is in progress"
        try:
            run_id = transitions.create_run(
                conn,
                pipeline_id=pipeline.pipeline_id,
                status=RunStatus.IN_PROGRESS,
                trigger_kind=TriggerKind.BACKFILL,
                actor=ctx.actor,
                now=now,
                run_key=f"backfill:{day}:{uuid.uuid4()}",
                run_date=day,
                owner_id=owner_id,
                lease_until=lease_until(now),
                config_sha256=config_fingerprint(ctx),
            )
        except StaleTransitionError as stale:
            return stale.found or "another run started"
        edges = gate_records.pipeline_gate_edges(conn, pipeline.pipeline_id)
        reason = "a backfill run does not judge dependencies on other pipelines"
        gate_records.record_decisions(
            conn,
            run_id,
            [gate_records.Decision(e.pipeline_dependency_id, None, gate_records.BYPASSED, reason) for e in edges],
            now,
        )
        for edge in edges:
            transitions.record_intervention(
                conn,
                run_id=run_id,
                action=InterventionAction.GATE_BYPASS,
                actor=ctx.actor,
                reason=f"{reason}: {edge.pipeline_code}",
                now=now,
            )
    return run_id


def execute_backfill(ctx: OperationContext, request: RunRequest, progress: Progress) -> BackfillView:
    """The backfill mode of `run`: refused while a run is in progress or the pipeline is paused."""
    request.check()
    assert request.backfill is not None
    first, last = parse_range(request.backfill)
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, request.pipeline_code)
        graph = load_graph(conn, pipeline)
        pause = reads.open_pause(conn, pipeline.pipeline_id)
    if pause is not None:
        raise RunStateError(
            f"pipeline {graph.code}",
            found=f"paused by {pause.paused_by} ({pause.reason})",
            expected="a pipeline that is not paused",
            remedy=f"resume it first: etl-craft resume --pipeline_code {graph.code} --reason ...",
        )
    reconcile(ctx.db, pipeline_id=pipeline.pipeline_id)
    _refuse_if_busy(ctx, graph)
    require_warehouse_file(ctx, graph)
    with StopSignals().installed() as signals:
        return run_backfill(ctx, graph, request, first, last, signals, progress)


def _refuse_if_busy(ctx: OperationContext, graph: Graph) -> None:
    with ctx.db.read() as conn:
        unfinished = reads.unfinished_runs(conn, graph.pipeline.pipeline_id)
    if unfinished:
        run = unfinished[0]
        raise RunStateError(
            f"pipeline {graph.code}",
            found=f"run {run.pipeline_run_id} ({run.run_key}, {run.status}) in progress",
            expected="no run in progress before a backfill starts",
            remedy="let it finish, or cancel it with etl-craft cancel",
        )
