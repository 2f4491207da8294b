"""Reads of pipelines, tasks, runs, task runs and attempts. Nothing here writes.

Rows come back as frozen dataclasses whose field names are the lower-case column names, built with
`Cls(**row._mapping)`; each read is one set query (no per-task queries in loops).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from datetime import date, datetime
from decimal import Decimal
from typing import Any, TypeVar

import sqlalchemy as sa

from etl_craft.core.enums import OWNED_ATTEMPT, UNFINISHED_RUN
from etl_craft.core.errors import MetadataError
from etl_craft.core.text import close_matches
from etl_craft.engine import tables as t

R = TypeVar("R")


def _columns(table: sa.Table, cls: type) -> list[sa.ColumnElement[Any]]:
    return [table.c[f.name] for f in fields(cls)]


def _rows(cls: type[R], result: Iterable[sa.Row[Any]]) -> list[R]:
    return [cls(**row._mapping) for row in result]


@dataclass(frozen=True)
class PipelineRow:
    pipeline_id: int
    pipeline_code: str
    pipeline_name: str
    description: str | None
    run_schedule: str | None
    sla_in_hours: Decimal | None
    refresh_type: str
    pipeline_parameters: Any
    schedule_timezone: str | None
    catchup: str
    max_catchup_runs: int
    overlap_policy: str
    schedule_start_date: date | None


@dataclass(frozen=True)
class TaskRow:
    task_id: int
    task_code: str
    task_type: str
    pipeline_id: int
    handler: str
    run_condition: str | None
    run_condition_count: int | None


@dataclass(frozen=True)
class EdgeRow:
    task_dependency_id: int
    task_id: int
    depends_on_task_id: int
    depends_on_pipeline_id: int | None
    dependency_type: str
    consume_repairs: str


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


@dataclass(frozen=True)
class PauseRow:
    pipeline_pause_id: int
    pipeline_id: int
    paused_at: datetime
    paused_by: str
    reason: str


# --- pipelines and tasks ---------------------------------------------------------------------


def find_pipeline(conn: sa.Connection, code: str) -> PipelineRow:
    """The active pipeline with this code, else MetadataError naming close matches."""
    row = conn.execute(
        sa.select(*_columns(t.cfg_pipelines, PipelineRow)).where(
            t.cfg_pipelines.c.pipeline_code == code, t.cfg_pipelines.c.active_flag == "Y"
        )
    ).one_or_none()
    if row is not None:
        return PipelineRow(**row._mapping)
    codes = conn.execute(
        sa.select(t.cfg_pipelines.c.pipeline_code).where(t.cfg_pipelines.c.active_flag == "Y")
    ).scalars()
    matches = close_matches(code, list(codes))
    raise MetadataError(
        f"pipeline {code!r}",
        found="no active pipeline with this code",
        expected="the code of an active CFG_PIPELINES row",
        remedy=(f"did you mean {', '.join(matches)}? " if matches else "") + "etl-craft list shows every pipeline",
    )


def pipelines(conn: sa.Connection) -> list[PipelineRow]:
    query = (
        sa.select(*_columns(t.cfg_pipelines, PipelineRow))
        .where(t.cfg_pipelines.c.active_flag == "Y")
        .order_by(t.cfg_pipelines.c.pipeline_code)
    )
    return _rows(PipelineRow, conn.execute(query))


def pipeline_tasks(conn: sa.Connection, pipeline_id: int) -> list[TaskRow]:
    return tasks_of(conn, [pipeline_id])


def tasks_of(conn: sa.Connection, pipeline_ids: Iterable[int]) -> list[TaskRow]:
    """The active tasks of the pipelines, by task id."""
    query = (
        sa.select(*_columns(t.cfg_tasks, TaskRow))
        .where(t.cfg_tasks.c.pipeline_id.in_(list(pipeline_ids)), t.cfg_tasks.c.active_flag == "Y")
        .order_by(t.cfg_tasks.c.task_id)
    )
    return _rows(TaskRow, conn.execute(query))


_TASK_PARAMETERS = sa.select(
    t.cfg_task_parameters.c.task_id, t.cfg_task_parameters.c.parameter_name, t.cfg_task_parameters.c.parameter_value
).where(
    t.cfg_task_parameters.c.task_id.in_(sa.bindparam("task_ids", expanding=True)),
    t.cfg_task_parameters.c.active_flag == "Y",
)  # built once: every task process reads its parameters with it


def task_parameters(conn: sa.Connection, task_ids: Iterable[int]) -> dict[int, dict[str, str]]:
    params: dict[int, dict[str, str]] = {}
    ids = list(task_ids)
    if not ids:
        return params
    for task_id, name, value in conn.execute(_TASK_PARAMETERS, {"task_ids": ids}):
        params.setdefault(task_id, {})[name] = value
    return params


def pipeline_edges(conn: sa.Connection, pipeline_id: int) -> list[EdgeRow]:
    return [edge for _, edge in edges_of(conn, [pipeline_id])]


def edges_of(conn: sa.Connection, pipeline_ids: Iterable[int]) -> list[tuple[int, EdgeRow]]:
    """(pipeline id, edge): the active task dependencies of the pipelines' active tasks, in a pipeline
    and across pipelines.

    An edge to an inactive upstream task is kept (the graph check reports it); edges of inactive
    tasks are ignored.
    """
    down = t.cfg_tasks.alias("down")
    query = (
        sa.select(
            t.cfg_task_dependency.c.pipeline_id.label("etl_edge_pipeline_id"), *_columns(t.cfg_task_dependency, EdgeRow)
        )
        .join(down, down.c.task_id == t.cfg_task_dependency.c.task_id)
        .where(
            t.cfg_task_dependency.c.pipeline_id.in_(list(pipeline_ids)),
            t.cfg_task_dependency.c.active_flag == "Y",
            down.c.active_flag == "Y",
        )
        .order_by(t.cfg_task_dependency.c.task_dependency_id)
    )
    rows = conn.execute(query).all()
    return [(row.etl_edge_pipeline_id, EdgeRow(*row[1:])) for row in rows]


def task_codes(conn: sa.Connection, task_ids: Iterable[int]) -> dict[int, tuple[str, str, bool]]:
    """task id -> (pipeline code, task code, active) for the tasks edges name."""
    ids = list(task_ids)
    if not ids:
        return {}
    rows = conn.execute(
        sa.select(
            t.cfg_tasks.c.task_id,
            t.cfg_pipelines.c.pipeline_code,
            t.cfg_tasks.c.task_code,
            t.cfg_tasks.c.active_flag,
        )
        .join(t.cfg_pipelines, t.cfg_pipelines.c.pipeline_id == t.cfg_tasks.c.pipeline_id)
        .where(t.cfg_tasks.c.task_id.in_(ids))
    )
    return {r.task_id: (r.pipeline_code, r.task_code, r.active_flag == "Y") for r in rows}


def open_pause(conn: sa.Connection, pipeline_id: int) -> PauseRow | None:
    row = conn.execute(
        sa.select(*_columns(t.aud_pipeline_pauses, PauseRow)).where(
            t.aud_pipeline_pauses.c.pipeline_id == pipeline_id, t.aud_pipeline_pauses.c.resumed_at.is_(None)
        )
    ).one_or_none()
    return PauseRow(**row._mapping) if row else None


def open_pauses(conn: sa.Connection) -> dict[int, PauseRow]:
    """Every pipeline's open pause, by pipeline id (one query for all pipelines)."""
    query = sa.select(*_columns(t.aud_pipeline_pauses, PauseRow)).where(t.aud_pipeline_pauses.c.resumed_at.is_(None))
    return {r.pipeline_id: r for r in _rows(PauseRow, conn.execute(query))}


@dataclass(frozen=True)
class PipelineDependencyRow:
    pipeline_dependency_id: int
    pipeline_code: str  # the pipeline that waits
    depends_on_pipeline_code: str  # the pipeline it waits for
    dependency_type: str
    consume_repairs: bool
    pipeline_active: bool
    depends_on_active: bool


def pipeline_dependencies(conn: sa.Connection, pipeline_id: int) -> list[PipelineDependencyRow]:
    """Active CFG_PIPELINE_DEPENDENCY rows in both directions: what the pipeline waits for and what waits for it."""
    dep = t.cfg_pipeline_dependency
    down = t.cfg_pipelines.alias("down")
    up = t.cfg_pipelines.alias("up")
    query = (
        sa.select(
            dep.c.pipeline_dependency_id,
            down.c.pipeline_code,
            up.c.pipeline_code.label("up_code"),
            dep.c.dependency_type,
            dep.c.consume_repairs,
            down.c.active_flag,
            up.c.active_flag.label("up_active_flag"),
        )
        .join(down, down.c.pipeline_id == dep.c.pipeline_id)
        .join(up, up.c.pipeline_id == dep.c.depends_on_pipeline_id)
        .where(
            dep.c.active_flag == "Y",
            sa.or_(dep.c.pipeline_id == pipeline_id, dep.c.depends_on_pipeline_id == pipeline_id),
        )
        .order_by(dep.c.pipeline_dependency_id)
    )
    return [
        PipelineDependencyRow(
            pipeline_dependency_id=r.pipeline_dependency_id,
            pipeline_code=r.pipeline_code,
            depends_on_pipeline_code=r.up_code,
            dependency_type=r.dependency_type,
            consume_repairs=r.consume_repairs == "Y",
            pipeline_active=r.active_flag == "Y",
            depends_on_active=r.up_active_flag == "Y",
        )
        for r in conn.execute(query)
    ]


# --- runs --------------------------------------------------------------------------------------


def run(conn: sa.Connection, run_id: int) -> RunRow | None:
    row = conn.execute(
        sa.select(*_columns(t.aud_pipelines_run_log, RunRow)).where(t.aud_pipelines_run_log.c.pipeline_run_id == run_id)
    ).one_or_none()
    return RunRow(**row._mapping) if row else None


def run_by_key(conn: sa.Connection, pipeline_id: int, run_key: str) -> RunRow | None:
    row = conn.execute(
        sa.select(*_columns(t.aud_pipelines_run_log, RunRow)).where(
            t.aud_pipelines_run_log.c.pipeline_id == pipeline_id, t.aud_pipelines_run_log.c.run_key == run_key
        )
    ).one_or_none()
    return RunRow(**row._mapping) if row else None


def unfinished_runs(conn: sa.Connection, pipeline_id: int) -> list[RunRow]:
    query = (
        sa.select(*_columns(t.aud_pipelines_run_log, RunRow))
        .where(
            t.aud_pipelines_run_log.c.pipeline_id == pipeline_id,
            t.aud_pipelines_run_log.c.status.in_(UNFINISHED_RUN),
        )
        .order_by(t.aud_pipelines_run_log.c.pipeline_run_id)
    )
    return _rows(RunRow, conn.execute(query))


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
    conn: sa.Connection, pipeline_id: int, limit: int | None = 20, before: int | None = None
) -> list[RunRow]:
    query = (
        sa.select(*_columns(t.aud_pipelines_run_log, RunRow))
        .where(t.aud_pipelines_run_log.c.pipeline_id == pipeline_id)
        .order_by(t.aud_pipelines_run_log.c.pipeline_run_id.desc())
    )
    if before is not None:
        query = query.where(t.aud_pipelines_run_log.c.pipeline_run_id < before)
    if limit is not None:
        query = query.limit(limit)
    return _rows(RunRow, conn.execute(query))


def task_runs_of(conn: sa.Connection, run_id: int) -> dict[int, TaskRunRow]:
    query = sa.select(*_columns(t.aud_task_run_log, TaskRunRow)).where(t.aud_task_run_log.c.pipeline_run_id == run_id)
    return {r.task_id: r for r in _rows(TaskRunRow, conn.execute(query))}


def task_runs_of_task(conn: sa.Connection, task_id: int, from_run_id: int | None = None) -> dict[int, TaskRunRow]:
    """One task's rows by run id, in runs from `from_run_id` on (a task belongs to one pipeline, so the
    floor bounds the read to the runs a history lists)."""
    query = sa.select(*_columns(t.aud_task_run_log, TaskRunRow)).where(t.aud_task_run_log.c.task_id == task_id)
    if from_run_id is not None:
        query = query.where(t.aud_task_run_log.c.pipeline_run_id >= from_run_id)
    return {r.pipeline_run_id: r for r in _rows(TaskRunRow, conn.execute(query))}


def attempts_of_run(conn: sa.Connection, run_id: int) -> dict[int, list[AttemptRow]]:
    """Attempts by task run id, oldest first."""
    query = (
        sa.select(*_columns(t.aud_task_attempts, AttemptRow))
        .join(t.aud_task_run_log, t.aud_task_run_log.c.task_run_id == t.aud_task_attempts.c.task_run_id)
        .where(t.aud_task_run_log.c.pipeline_run_id == run_id)
        .order_by(t.aud_task_attempts.c.task_run_id, t.aud_task_attempts.c.attempt_number)
    )
    found: dict[int, list[AttemptRow]] = {}
    for row in _rows(AttemptRow, conn.execute(query)):
        found.setdefault(row.task_run_id, []).append(row)
    return found


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
            *_columns(runs, RunRow),
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
        sa.select(*_columns(t.aud_task_attempts, AttemptRow)).where(t.aud_task_attempts.c.attempt_id == attempt_id)
    ).one_or_none()
    return AttemptRow(**row._mapping) if row else None


def owned_attempts(conn: sa.Connection, pipeline_id: int | None = None) -> list[AttemptRow]:
    """Claimed or running attempts (optionally of one pipeline's runs): the reconciler checks their owners."""
    query = sa.select(*_columns(t.aud_task_attempts, AttemptRow)).where(t.aud_task_attempts.c.status.in_(OWNED_ATTEMPT))
    if pipeline_id is not None:
        query = (
            query.join(t.aud_task_run_log, t.aud_task_run_log.c.task_run_id == t.aud_task_attempts.c.task_run_id)
            .join(
                t.aud_pipelines_run_log,
                t.aud_pipelines_run_log.c.pipeline_run_id == t.aud_task_run_log.c.pipeline_run_id,
            )
            .where(t.aud_pipelines_run_log.c.pipeline_id == pipeline_id)
        )
    return _rows(AttemptRow, conn.execute(query))


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
        sa.select(*_columns(t.aud_task_run_log, TaskRunRow)).where(t.aud_task_run_log.c.task_run_id == task_run_id)
    ).one_or_none()
    return TaskRunRow(**row._mapping) if row else None


def task(conn: sa.Connection, task_id: int) -> TaskRow | None:
    row = conn.execute(sa.select(*_columns(t.cfg_tasks, TaskRow)).where(t.cfg_tasks.c.task_id == task_id)).one_or_none()
    return TaskRow(**row._mapping) if row else None


def pipeline(conn: sa.Connection, pipeline_id: int) -> PipelineRow | None:
    row = conn.execute(
        sa.select(*_columns(t.cfg_pipelines, PipelineRow)).where(t.cfg_pipelines.c.pipeline_id == pipeline_id)
    ).one_or_none()
    return PipelineRow(**row._mapping) if row else None


def consumed(conn: sa.Connection, task_run_id: int) -> bool:
    """Whether a downstream consumed this task run (then it must keep its status)."""
    found = conn.execute(
        sa.select(t.aud_dependency_consumption.c.consumption_id)
        .where(t.aud_dependency_consumption.c.consumed_task_run_id == task_run_id)
        .limit(1)
    ).first()
    return found is not None
