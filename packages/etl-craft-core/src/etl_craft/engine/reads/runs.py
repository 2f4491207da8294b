"""Reads of runs, task runs and attempts: one run's whole state in one query, an attempt's subject,
the runs still unfinished, the recent ones. Nothing here writes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import date, datetime
from typing import Any

import sqlalchemy as sa

from etl_craft.core.enums import OWNED_ATTEMPT, UNFINISHED_RUN
from etl_craft.engine.reads.rows import columns_of, rows_of
from etl_craft.engine.schema import tables as t


@dataclass(frozen=True)
class RunRow:
    pipeline_run_id: int
    pipeline_id: int
    start_date: datetime
    end_date: datetime | None
    status: str
    sla_status: str | None
    run_date: date | None
    backfill: str
    run_key: str
    trigger_kind: str
    owner_id: str | None
    lease_expires_at: datetime | None
    output_revision: int
    started_by: str | None
    started_by_kind: str | None
    ended_by: str | None
    ended_by_kind: str | None
    repair_pending: str


@dataclass(frozen=True)
class TaskRunRow:
    task_run_id: int
    task_id: int
    pipeline_run_id: int
    start_date: datetime
    end_date: datetime | None
    status: str
    source_count: int | None
    target_count: int | None
    insert_count: int | None
    update_count: int | None
    delete_count: int | None
    error_message: str | None
    task_log: str | None
    attempt_count: int
    rows_written: int | None


@dataclass(frozen=True)
class AttemptRow:
    attempt_id: int
    task_run_id: int
    attempt_number: int
    status: str
    owner_id: str | None
    lease_expires_at: datetime | None
    heartbeat_at: datetime | None
    queued_at: datetime | None
    claimed_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    host: str | None
    pid: int | None
    process_start: str | None
    exit_code: int | None
    error_message: str | None
    log_path: str | None
    not_before: datetime | None
    retryable: bool
    cancel_requested_at: datetime | None = None  # a cancel asked its worker to stop it (S5.D)


# --- runs --------------------------------------------------------------------------------------


def run(conn: sa.Connection, run_id: int) -> RunRow | None:
    row = conn.execute(
        sa.select(*columns_of(t.aud_pipelines_run_log, RunRow)).where(
            t.aud_pipelines_run_log.c.pipeline_run_id == run_id
        )
    ).one_or_none()
    return RunRow(**row._mapping) if row else None


def run_by_key(conn: sa.Connection, pipeline_id: int, run_key: str) -> RunRow | None:
    row = conn.execute(
        sa.select(*columns_of(t.aud_pipelines_run_log, RunRow)).where(
            t.aud_pipelines_run_log.c.pipeline_id == pipeline_id, t.aud_pipelines_run_log.c.run_key == run_key
        )
    ).one_or_none()
    return RunRow(**row._mapping) if row else None


def unfinished_runs(conn: sa.Connection, pipeline_id: int) -> list[RunRow]:
    query = (
        sa.select(*columns_of(t.aud_pipelines_run_log, RunRow))
        .where(
            t.aud_pipelines_run_log.c.pipeline_id == pipeline_id,
            t.aud_pipelines_run_log.c.status.in_(UNFINISHED_RUN),
        )
        .order_by(t.aud_pipelines_run_log.c.pipeline_run_id)
    )
    return rows_of(RunRow, conn.execute(query))


def pipelines_with_unfinished_runs(conn: sa.Connection, pipeline_ids: Iterable[int]) -> set[int]:
    """Which of the pipelines have a QUEUED or IN-PROGRESS run (one query for all of them)."""
    runs = t.aud_pipelines_run_log
    query = (
        sa.select(runs.c.pipeline_id)
        .where(runs.c.pipeline_id.in_(list(pipeline_ids)), runs.c.status.in_(UNFINISHED_RUN))
        .distinct()
    )
    return set(conn.execute(query).scalars())


def recent_runs(
    conn: sa.Connection,
    pipeline_id: int,
    limit: int | None = 20,
    before: int | None = None,
    *,
    trigger_kind: str | None = None,
    status: str | None = None,
) -> list[RunRow]:
    runs = t.aud_pipelines_run_log
    query = (
        sa.select(*columns_of(runs, RunRow))
        .where(runs.c.pipeline_id == pipeline_id)
        .order_by(runs.c.pipeline_run_id.desc())
    )
    if before is not None:
        query = query.where(runs.c.pipeline_run_id < before)
    if trigger_kind is not None:
        query = query.where(runs.c.trigger_kind == trigger_kind)
    if status is not None:
        query = query.where(runs.c.status == status)
    if limit is not None:
        query = query.limit(limit)
    return rows_of(RunRow, conn.execute(query))


def latest_runs(conn: sa.Connection, pipeline_ids: Iterable[int]) -> dict[int, RunRow]:
    """Each pipeline's newest run, in one read (by pipeline id; a pipeline without runs is absent)."""
    runs = t.aud_pipelines_run_log
    ids = list(pipeline_ids)
    if not ids:
        return {}
    newest = (
        sa.select(sa.func.max(runs.c.pipeline_run_id)).where(runs.c.pipeline_id.in_(ids)).group_by(runs.c.pipeline_id)
    )
    query = sa.select(*columns_of(runs, RunRow)).where(runs.c.pipeline_run_id.in_(newest))
    return {r.pipeline_id: r for r in rows_of(RunRow, conn.execute(query))}


def task_runs_of(conn: sa.Connection, run_id: int) -> dict[int, TaskRunRow]:
    query = sa.select(*columns_of(t.aud_task_run_log, TaskRunRow)).where(t.aud_task_run_log.c.pipeline_run_id == run_id)
    return {r.task_id: r for r in rows_of(TaskRunRow, conn.execute(query))}


@dataclass(frozen=True)
class TaskRunCell:
    """What a runs x tasks grid shows of a task run: a narrow row, read for many runs at once."""

    task_run_id: int
    task_id: int
    pipeline_run_id: int
    status: str
    start_date: datetime
    end_date: datetime | None
    attempt_count: int
    error_message: str | None


def task_run_cells(conn: sa.Connection, run_ids: Iterable[int]) -> dict[int, dict[int, TaskRunCell]]:
    """The task rows of several runs in one read: by run id, then by task id."""
    ids = list(run_ids)
    found: dict[int, dict[int, TaskRunCell]] = {run_id: {} for run_id in ids}
    if ids:
        query = sa.select(*columns_of(t.aud_task_run_log, TaskRunCell)).where(
            t.aud_task_run_log.c.pipeline_run_id.in_(ids)
        )
        for row in rows_of(TaskRunCell, conn.execute(query)):
            found[row.pipeline_run_id][row.task_id] = row
    return found


def task_runs_of_task(
    conn: sa.Connection, task_id: int, from_run_id: int | None = None, to_run_id: int | None = None
) -> dict[int, TaskRunRow]:
    """One task's rows by run id, in runs `from_run_id` to `to_run_id` (a task belongs to one pipeline,
    so the bounds limit the read to the runs a history page lists, however deep the page)."""
    query = sa.select(*columns_of(t.aud_task_run_log, TaskRunRow)).where(t.aud_task_run_log.c.task_id == task_id)
    if from_run_id is not None:
        query = query.where(t.aud_task_run_log.c.pipeline_run_id >= from_run_id)
    if to_run_id is not None:
        query = query.where(t.aud_task_run_log.c.pipeline_run_id <= to_run_id)
    return {r.pipeline_run_id: r for r in rows_of(TaskRunRow, conn.execute(query))}


def attempts_of_run(conn: sa.Connection, run_id: int) -> dict[int, list[AttemptRow]]:
    """Attempts by task run id, oldest first."""
    query = (
        sa.select(*columns_of(t.aud_task_attempts, AttemptRow))
        .join(t.aud_task_run_log, t.aud_task_run_log.c.task_run_id == t.aud_task_attempts.c.task_run_id)
        .where(t.aud_task_run_log.c.pipeline_run_id == run_id)
        .order_by(t.aud_task_attempts.c.task_run_id, t.aud_task_attempts.c.attempt_number)
    )
    found: dict[int, list[AttemptRow]] = {}
    for row in rows_of(AttemptRow, conn.execute(query)):
        found.setdefault(row.task_run_id, []).append(row)
    return found


def attempts_of_task_run(conn: sa.Connection, task_run_id: int) -> list[AttemptRow]:
    """One task run's attempts, oldest first."""
    query = (
        sa.select(*columns_of(t.aud_task_attempts, AttemptRow))
        .where(t.aud_task_attempts.c.task_run_id == task_run_id)
        .order_by(t.aud_task_attempts.c.attempt_number)
    )
    return rows_of(AttemptRow, conn.execute(query))


@dataclass(frozen=True)
class RunState:
    """A run as its supervisor sees it: the run row, whether its pipeline is paused, its task runs by
    task id and their attempts by task run id (oldest first)."""

    run: RunRow
    paused: bool
    task_runs: dict[int, TaskRunRow]
    attempts: dict[int, list[AttemptRow]]

    def latest_attempt(self, task_id: int) -> AttemptRow | None:
        task_run = self.task_runs.get(task_id)
        found = self.attempts.get(task_run.task_run_id, []) if task_run else []
        return found[-1] if found else None

    def attempt(self, attempt_id: int) -> AttemptRow | None:
        return next((a for rows in self.attempts.values() for a in rows if a.attempt_id == attempt_id), None)


_RUN_FIELDS = [f.name for f in fields(RunRow)]
_TASK_RUN_FIELDS = [f.name for f in fields(TaskRunRow)]
_ATTEMPT_FIELDS = [f.name for f in fields(AttemptRow)]


def _run_state_query() -> sa.Select[Any]:
    """run_state's statement, built once: a supervisor runs it on every step, and a statement object
    that is reused also keeps its cache key (SQLAlchemy memoizes it)."""
    runs, pauses = t.aud_pipelines_run_log, t.aud_pipeline_pauses
    task_runs, attempts = t.aud_task_run_log, t.aud_task_attempts
    paused = sa.exists().where(pauses.c.pipeline_id == runs.c.pipeline_id, pauses.c.resumed_at.is_(None))
    return (
        sa.select(
            *columns_of(runs, RunRow),
            paused.label("paused"),
            *(task_runs.c[name].label(f"t_{name}") for name in _TASK_RUN_FIELDS),
            *(attempts.c[name].label(f"a_{name}") for name in _ATTEMPT_FIELDS),
        )
        .select_from(runs)
        .outerjoin(task_runs, task_runs.c.pipeline_run_id == runs.c.pipeline_run_id)
        .outerjoin(attempts, attempts.c.task_run_id == task_runs.c.task_run_id)
        .where(runs.c.pipeline_run_id == sa.bindparam("run_id", type_=runs.c.pipeline_run_id.type))
        .order_by(task_runs.c.task_run_id, attempts.c.attempt_number)
    )


_RUN_STATE = _run_state_query()


def run_state(conn: sa.Connection, run_id: int) -> RunState | None:
    """One query, one round trip: the run with its pause, outer-joined to its task runs and their
    attempts (the run's columns repeat on each row). A supervisor reads this on every step."""
    rows = conn.execute(_RUN_STATE, {"run_id": run_id}).all()
    if not rows:
        return None
    task_runs: dict[int, TaskRunRow] = {}
    attempts: dict[int, list[AttemptRow]] = {}
    for row in rows:
        values = row._mapping
        task_id = values["t_task_id"]
        if task_id is None:
            break  # the run has no task run yet: its one row is the run alone
        if task_id not in task_runs:
            task_runs[task_id] = TaskRunRow(**{name: values[f"t_{name}"] for name in _TASK_RUN_FIELDS})
        if values["a_attempt_id"] is not None:
            attempts.setdefault(values["t_task_run_id"], []).append(
                AttemptRow(**{name: values[f"a_{name}"] for name in _ATTEMPT_FIELDS})
            )
    first = rows[0]._mapping
    run = RunRow(**{name: first[name] for name in _RUN_FIELDS})
    return RunState(run, bool(first["paused"]), task_runs, attempts)


def attempt(conn: sa.Connection, attempt_id: int) -> AttemptRow | None:
    row = conn.execute(
        sa.select(*columns_of(t.aud_task_attempts, AttemptRow)).where(t.aud_task_attempts.c.attempt_id == attempt_id)
    ).one_or_none()
    return AttemptRow(**row._mapping) if row else None


def owned_attempts(conn: sa.Connection, pipeline_id: int | None = None) -> list[AttemptRow]:
    """Claimed or running attempts (optionally of one pipeline's runs): the reconciler checks their owners."""
    query = sa.select(*columns_of(t.aud_task_attempts, AttemptRow)).where(
        t.aud_task_attempts.c.status.in_(OWNED_ATTEMPT)
    )
    if pipeline_id is not None:
        query = (
            query.join(t.aud_task_run_log, t.aud_task_run_log.c.task_run_id == t.aud_task_attempts.c.task_run_id)
            .join(
                t.aud_pipelines_run_log,
                t.aud_pipelines_run_log.c.pipeline_run_id == t.aud_task_run_log.c.pipeline_run_id,
            )
            .where(t.aud_pipelines_run_log.c.pipeline_id == pipeline_id)
        )
    return rows_of(AttemptRow, conn.execute(query))


@dataclass(frozen=True)
class AttemptSubject:
    """What a task process knows of its own attempt: its task, task run, run and pipeline. Its
    supervisor hands it over (ChildSpec); a task process started cold reads it (attempt_subject)."""

    attempt_id: int
    attempt_number: int
    task_run_id: int
    pipeline_run_id: int
    run_key: str
    run_date: date | None
    start_date: datetime
    trigger_kind: str
    task_id: int
    task_code: str
    task_type: str
    handler: str
    pipeline_id: int
    pipeline_code: str
    refresh_type: str
    consumes: bool  # SATISFIED gate decisions were recorded with the attempt's claim: its success consumes them


def _attempt_subject_query() -> sa.Select[Any]:
    a, tr, r, tk, p, d = (
        t.aud_task_attempts,
        t.aud_task_run_log,
        t.aud_pipelines_run_log,
        t.cfg_tasks,
        t.cfg_pipelines,
        t.aud_gate_decisions,
    )
    consumes = sa.exists().where(
        d.c.pipeline_run_id == tr.c.pipeline_run_id,  # the indexed column: decisions are kept per run
        d.c.attempt_id == a.c.attempt_id,
        d.c.result == "SATISFIED",
        d.c.selected_pipeline_run_id.is_not(None),
    )
    return (
        sa.select(
            a.c.attempt_id,
            a.c.attempt_number,
            a.c.task_run_id,
            tr.c.pipeline_run_id,
            r.c.run_key,
            r.c.run_date,
            r.c.start_date,
            r.c.trigger_kind,
            tk.c.task_id,
            tk.c.task_code,
            tk.c.task_type,
            tk.c.handler,
            p.c.pipeline_id,
            p.c.pipeline_code,
            p.c.refresh_type,
            consumes.label("consumes"),
        )
        .select_from(
            a.join(tr, tr.c.task_run_id == a.c.task_run_id)
            .join(r, r.c.pipeline_run_id == tr.c.pipeline_run_id)
            .join(tk, tk.c.task_id == tr.c.task_id)
            .join(p, p.c.pipeline_id == r.c.pipeline_id)
        )
        .where(a.c.attempt_id == sa.bindparam("attempt_id", type_=a.c.attempt_id.type))
    )


_ATTEMPT_SUBJECT = _attempt_subject_query()  # built once, as run_state's statement


def attempt_subject(conn: sa.Connection, attempt_id: int) -> AttemptSubject | None:
    """One joined read, for a task process started without its subject."""
    row = conn.execute(_ATTEMPT_SUBJECT, {"attempt_id": attempt_id}).one_or_none()
    return AttemptSubject(**{**row._mapping, "consumes": bool(row.consumes)}) if row else None


_STORED_OFFSET = sa.select(t.aud_task_offset_tracker.c.offset_type, t.aud_task_offset_tracker.c.offset_value).where(
    t.aud_task_offset_tracker.c.task_id == sa.bindparam("task_id", type_=t.aud_task_offset_tracker.c.task_id.type)
)


def stored_offset(conn: sa.Connection, task_id: int) -> tuple[str, str | None] | None:
    """The task's stored offset (type, value), if it has one."""
    row = conn.execute(_STORED_OFFSET, {"task_id": task_id}).one_or_none()
    return (row.offset_type, row.offset_value) if row else None


def task_run(conn: sa.Connection, task_run_id: int) -> TaskRunRow | None:
    row = conn.execute(
        sa.select(*columns_of(t.aud_task_run_log, TaskRunRow)).where(t.aud_task_run_log.c.task_run_id == task_run_id)
    ).one_or_none()
    return TaskRunRow(**row._mapping) if row else None


def consumed(conn: sa.Connection, task_run_id: int) -> bool:
    """Whether a downstream consumed this task run (then it must keep its status)."""
    found = conn.execute(
        sa.select(t.aud_dependency_consumption.c.consumption_id)
        .where(t.aud_dependency_consumption.c.consumed_task_run_id == task_run_id)
        .limit(1)
    ).first()
    return found is not None
