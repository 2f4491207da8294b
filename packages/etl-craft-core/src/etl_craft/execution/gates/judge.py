"""Gates: judging a dependency on another pipeline (or on another pipeline's task).

A gate answers SATISFIED (naming the upstream run, task run and revision it admits), UNSATISFIED
(final, with the reason) or WAIT (the upstream is still running; look again at `next_check_at`).
Only scheduled runs count: backfill runs never feed nor block a gate. The latest finished run
decides, and it must be newer than what the dependency last consumed; with CONSUME_REPAIRS = 'Y' a
newer output revision of the consumed run is newer too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

import sqlalchemy as sa

from etl_craft.core.enums import OWN_TASK_END, UNFINISHED_RUN, DependencyType
from etl_craft.engine.schema import tables as t

MAX_LOOKS = 30
_UPSTREAM_KINDS = ("SCHEDULE", "MANUAL", "ORCHESTRATOR", "STAND_IN")  # every kind but BACKFILL


class Answer(StrEnum):
    SATISFIED = "SATISFIED"
    UNSATISFIED = "UNSATISFIED"
    WAIT = "WAIT"


@dataclass(frozen=True)
class GateEdge:
    """One dependency on another pipeline: the pipeline itself, or one of its tasks."""

    pipeline_dependency_id: int | None
    task_dependency_id: int | None
    upstream_pipeline_id: int
    upstream_code: str  # PIPE, or PIPE.task
    type: DependencyType
    consume_repairs: bool
    upstream_task_id: int | None = None


@dataclass(frozen=True)
class Verdict:
    edge: GateEdge
    answer: Answer
    reason: str
    run_id: int | None = None  # the upstream run it selected
    task_run_id: int | None = None
    revision: int | None = None
    running_since: datetime | None = None  # WAIT: when the running upstream run started


@dataclass(frozen=True)
class _Candidate:
    pipeline_run_id: int
    status: str
    output_revision: int
    start_date: datetime
    task_run_id: int | None = None
    task_status: str | None = None
    rows_written: int | None = None


def _meets(edge: GateEdge, status: str, rows_written: int | None) -> bool:
    if edge.type is DependencyType.SUCCESS:
        return status == "SUCCESS"
    if edge.type is DependencyType.FAILURE:
        return status == "FAILED"
    if edge.type is DependencyType.ALWAYS:
        return status in OWN_TASK_END
    return status == "SUCCESS" and (rows_written or 0) > 0  # HAS_DATA


def _latest_runs(conn: sa.Connection, pipeline_id: int, limit: int = 20) -> list[sa.Row]:
    runs = t.aud_pipelines_run_log
    return list(
        conn.execute(
            sa.select(runs.c.pipeline_run_id, runs.c.status, runs.c.output_revision, runs.c.start_date)
            .where(runs.c.pipeline_id == pipeline_id, runs.c.trigger_kind.in_(_UPSTREAM_KINDS))
            .order_by(runs.c.pipeline_run_id.desc())
            .limit(limit)
        ).all()
    )


def _rows_written(conn: sa.Connection, run_id: int) -> int:
    return int(
        conn.execute(
            sa.select(sa.func.coalesce(sa.func.sum(t.aud_task_run_log.c.rows_written), 0)).where(
                t.aud_task_run_log.c.pipeline_run_id == run_id
            )
        ).scalar_one()
    )


def _last_consumed(conn: sa.Connection, edge: GateEdge) -> tuple[int, int] | None:
    c = t.aud_dependency_consumption
    key = (
        c.c.pipeline_dependency_id == edge.pipeline_dependency_id
        if edge.pipeline_dependency_id is not None
        else c.c.task_dependency_id == edge.task_dependency_id
    )
    row = conn.execute(
        sa.select(c.c.consumed_pipeline_run_id, c.c.consumed_revision)
        .where(key)
        .order_by(c.c.consumed_pipeline_run_id.desc(), c.c.consumed_revision.desc())
        .limit(1)
    ).first()
    return (row[0], row[1]) if row else None


def _candidate(conn: sa.Connection, edge: GateEdge) -> tuple[_Candidate | None, datetime | None]:
    """The latest finished upstream run (and task run) that can decide, and when a still running
    upstream run started (None when nothing upstream is running)."""
    running_since = None
    for run in _latest_runs(conn, edge.upstream_pipeline_id):
        if edge.upstream_task_id is None:
            if run.status in UNFINISHED_RUN:
                running_since = running_since or run.start_date
                continue
            if run.status == "CANCELLED":
                continue
            return _Candidate(
                run.pipeline_run_id,
                run.status,
                run.output_revision,
                run.start_date,
                rows_written=_rows_written(conn, run.pipeline_run_id) if edge.type is DependencyType.HAS_DATA else None,
            ), running_since
        task_run = conn.execute(
            sa.select(
                t.aud_task_run_log.c.task_run_id, t.aud_task_run_log.c.status, t.aud_task_run_log.c.rows_written
            ).where(
                t.aud_task_run_log.c.pipeline_run_id == run.pipeline_run_id,
                t.aud_task_run_log.c.task_id == edge.upstream_task_id,
            )
        ).first()
        finished = task_run is not None and task_run.status in OWN_TASK_END
        if not finished and run.status in UNFINISHED_RUN:
            running_since = running_since or run.start_date  # the task may still run under this run
            continue
        if not finished:
            continue
        assert task_run is not None
        return _Candidate(
            run.pipeline_run_id,
            run.status,
            run.output_revision,
            run.start_date,
            task_run.task_run_id,
            task_run.status,
            task_run.rows_written,
        ), running_since
    return None, running_since


def judge(conn: sa.Connection, edge: GateEdge) -> Verdict:
    """One gate, now: SATISFIED, UNSATISFIED, or WAIT while the upstream is still running."""
    candidate, running_since = _candidate(conn, edge)
    what = f"{edge.type.value} dependency on {edge.upstream_code}"
    if running_since is not None:
        return Verdict(
            edge,
            Answer.WAIT,
            f"{edge.upstream_code} is running (since {running_since:%Y-%m-%d %H:%M:%S}Z)",
            running_since=running_since,
        )
    if candidate is None:
        return Verdict(edge, Answer.UNSATISFIED, f"{edge.upstream_code} has no finished run, so the {what} is not met")
    status = candidate.task_status or candidate.status
    subject = (
        f"{edge.upstream_code} in run {candidate.pipeline_run_id}"
        if edge.upstream_task_id
        else f"{edge.upstream_code} last finished run {candidate.pipeline_run_id}"
    )
    shown = (
        status
        if edge.type is not DependencyType.HAS_DATA
        else f"{status} with {candidate.rows_written or 0} rows written"
    )
    if not _meets(edge, status, candidate.rows_written):
        return Verdict(edge, Answer.UNSATISFIED, f"{subject} ended {shown}, which does not satisfy the {what}")
    consumed = _last_consumed(conn, edge)
    selected = (candidate.pipeline_run_id, candidate.output_revision)
    if consumed is not None:
        newer = selected[0] > consumed[0] or (
            edge.consume_repairs and selected[0] == consumed[0] and selected[1] > consumed[1]
        )
        if not newer:
            return Verdict(
                edge,
                Answer.UNSATISFIED,
                f"{subject} (revision {selected[1]}) was already consumed by this dependency; "
                f"a newer run of {edge.upstream_code.split('.')[0]} is needed",
            )
    return Verdict(
        edge,
        Answer.SATISFIED,
        f"{subject} ended {shown} (revision {selected[1]})",
        candidate.pipeline_run_id,
        candidate.task_run_id,
        candidate.output_revision,
    )


# --- waiting ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WaitState:
    first_check_at: datetime
    looks: int
    wait_until: datetime


def average_seconds(conn: sa.Connection, pipeline_id: int, limit: int = 20) -> float | None:
    """The upstream's average real run length: SUCCESS and FAILED scheduled runs longer than 0 s."""
    runs = t.aud_pipelines_run_log
    rows = conn.execute(
        sa.select(runs.c.start_date, runs.c.end_date)
        .where(
            runs.c.pipeline_id == pipeline_id,
            runs.c.status.in_(("SUCCESS", "FAILED")),
            runs.c.trigger_kind.in_(("SCHEDULE", "MANUAL", "ORCHESTRATOR")),
            runs.c.end_date.is_not(None),
        )
        .order_by(runs.c.pipeline_run_id.desc())
        .limit(limit)
    ).all()
    spans = [(r.end_date - r.start_date).total_seconds() for r in rows]
    spans = [s for s in spans if s > 0]
    return sum(spans) / len(spans) if spans else None


def next_look(
    state: WaitState, now: datetime, running_since: datetime | None, average: float | None
) -> datetime | None:
    """When to look again, or None when the budget (time or looks) is spent.

    With a known average, looks fall at 70%, 80%, 90%, ... of it after the upstream run started;
    without one they are spread over the remaining budget. Looks are at least 1 s apart.
    """
    if now >= state.wait_until or state.looks >= MAX_LOOKS:
        return None
    floor = now + timedelta(seconds=1)
    if average is not None and running_since is not None:
        target = running_since + timedelta(seconds=average * (0.7 + 0.1 * state.looks))
    else:
        remaining = (state.wait_until - now).total_seconds()
        target = now + timedelta(seconds=remaining / max(1, MAX_LOOKS - state.looks))
    return min(max(floor, target), state.wait_until)


def strongest(verdicts: Sequence[Verdict]) -> Answer:
    if any(v.answer is Answer.UNSATISFIED for v in verdicts):
        return Answer.UNSATISFIED
    if any(v.answer is Answer.WAIT for v in verdicts):
        return Answer.WAIT
    return Answer.SATISFIED
