"""Reads of the pipelines' metadata: pipelines, tasks, their dependencies and parameters, and pauses."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from etl_craft.core.errors import UnknownCodeError
from etl_craft.core.text import close_matches
from etl_craft.engine.reads.rows import columns_of, rows_of
from etl_craft.engine.schema import tables as t


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
    priority: int = 0  # the queue's order and the local pool's turn for waiting runs (S5.E)
    max_parallel_tasks: int | None = None  # per run; None: Orchestration.Max_parallel_tasks


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
        sa.select(*columns_of(t.cfg_pipelines, PipelineRow)).where(
            t.cfg_pipelines.c.pipeline_code == code, t.cfg_pipelines.c.active_flag == "Y"
        )
    ).one_or_none()
    if row is not None:
        return PipelineRow(**row._mapping)
    codes = conn.execute(
        sa.select(t.cfg_pipelines.c.pipeline_code).where(t.cfg_pipelines.c.active_flag == "Y")
    ).scalars()
    matches = close_matches(code, list(codes))
    raise UnknownCodeError(
        f"pipeline {code!r}",
        found="no active pipeline with this code",
        expected="the code of an active CFG_PIPELINES row",
        remedy=(f"did you mean {', '.join(matches)}? " if matches else "") + "etl-craft list shows every pipeline",
    )


def pipelines(conn: sa.Connection) -> list[PipelineRow]:
    query = (
        sa.select(*columns_of(t.cfg_pipelines, PipelineRow))
        .where(t.cfg_pipelines.c.active_flag == "Y")
        .order_by(t.cfg_pipelines.c.pipeline_code)
    )
    return rows_of(PipelineRow, conn.execute(query))


def pipeline_created(conn: sa.Connection, pipeline_id: int) -> datetime:
    """When the pipeline's row was added (CREATE_DATE): a schedule with no SCHEDULE_START_DATE starts then."""
    found: datetime = conn.execute(
        sa.select(t.cfg_pipelines.c.create_date).where(t.cfg_pipelines.c.pipeline_id == pipeline_id)
    ).scalar_one()
    return found


def pipelines_created(conn: sa.Connection) -> dict[int, datetime]:
    """pipeline_created of every active pipeline, in one statement."""
    query = sa.select(t.cfg_pipelines.c.pipeline_id, t.cfg_pipelines.c.create_date).where(
        t.cfg_pipelines.c.active_flag == "Y"
    )
    return {r.pipeline_id: r.create_date for r in conn.execute(query)}


def pipeline_tasks(conn: sa.Connection, pipeline_id: int) -> list[TaskRow]:
    return tasks_of(conn, [pipeline_id])


def tasks_of(conn: sa.Connection, pipeline_ids: Iterable[int]) -> list[TaskRow]:
    """The active tasks of the pipelines, by task id."""
    query = (
        sa.select(*columns_of(t.cfg_tasks, TaskRow))
        .where(t.cfg_tasks.c.pipeline_id.in_(list(pipeline_ids)), t.cfg_tasks.c.active_flag == "Y")
        .order_by(t.cfg_tasks.c.task_id)
    )
    return rows_of(TaskRow, conn.execute(query))


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
            t.cfg_task_dependency.c.pipeline_id.label("etl_edge_pipeline_id"),
            *columns_of(t.cfg_task_dependency, EdgeRow),
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
        sa.select(*columns_of(t.aud_pipeline_pauses, PauseRow)).where(
            t.aud_pipeline_pauses.c.pipeline_id == pipeline_id, t.aud_pipeline_pauses.c.resumed_at.is_(None)
        )
    ).one_or_none()
    return PauseRow(**row._mapping) if row else None


def open_pauses(conn: sa.Connection) -> dict[int, PauseRow]:
    """Every pipeline's open pause, by pipeline id (one query for all pipelines)."""
    query = sa.select(*columns_of(t.aud_pipeline_pauses, PauseRow)).where(t.aud_pipeline_pauses.c.resumed_at.is_(None))
    return {r.pipeline_id: r for r in rows_of(PauseRow, conn.execute(query))}


@dataclass(frozen=True)
class PipelineDependencyRow:
    pipeline_dependency_id: int
    pipeline_code: str  # the pipeline that waits
    depends_on_pipeline_code: str  # the pipeline it waits for
    dependency_type: str
    consume_repairs: bool
    pipeline_active: bool
    depends_on_active: bool


def pipeline_dependencies(conn: sa.Connection, pipeline_id: int | None) -> list[PipelineDependencyRow]:
    """Active CFG_PIPELINE_DEPENDENCY rows in both directions: what the pipeline waits for and what waits for it
    (every pipeline's, for None)."""
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
        .where(dep.c.active_flag == "Y")
        .order_by(dep.c.pipeline_dependency_id)
    )
    if pipeline_id is not None:
        query = query.where(sa.or_(dep.c.pipeline_id == pipeline_id, dep.c.depends_on_pipeline_id == pipeline_id))
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


def task(conn: sa.Connection, task_id: int) -> TaskRow | None:
    row = conn.execute(
        sa.select(*columns_of(t.cfg_tasks, TaskRow)).where(t.cfg_tasks.c.task_id == task_id)
    ).one_or_none()
    return TaskRow(**row._mapping) if row else None


def pipeline(conn: sa.Connection, pipeline_id: int) -> PipelineRow | None:
    row = conn.execute(
        sa.select(*columns_of(t.cfg_pipelines, PipelineRow)).where(t.cfg_pipelines.c.pipeline_id == pipeline_id)
    ).one_or_none()
    return PipelineRow(**row._mapping) if row else None
