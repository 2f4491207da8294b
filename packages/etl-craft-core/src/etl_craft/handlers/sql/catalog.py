"""What the Engine DB says about SQL tasks: their parameters, and which writers share a target."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

import sqlalchemy as sa

from etl_craft.engine.schema.tables import aud_task_run_log, cfg_pipelines, cfg_task_parameters, cfg_tasks


@dataclass(frozen=True)
class SqlTaskRow:
    task_id: int
    pipeline_id: int
    pipeline_code: str
    task_code: str
    handler: str
    refresh_type: str
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"{self.pipeline_code}.{self.task_code}"

    @property
    def action(self) -> str | None:
        return self.parameters.get("SQL_ACTION")

    @property
    def target(self) -> str | None:
        return self.parameters.get("TARGET_OBJECT")


def target_key(parts: Sequence[str], database: str | None) -> str:
    """The one spelling of a target used for locks and records: lower case, the active database left out."""
    lowered = [p.lower() for p in parts]
    if len(lowered) == 3 and database is not None and lowered[0] == database.lower():
        lowered = lowered[1:]
    return ".".join(lowered)


def key_of(raw: str | None, database: str | None) -> str | None:
    if not raw:
        return None
    return target_key(raw.strip().split("."), database)


def active_tasks(
    conn: sa.Connection, handlers: Sequence[str] = ("SQL",), *, pipeline_id: int | None = None
) -> list[SqlTaskRow]:
    """Active tasks of active pipelines with the given handlers, with their active parameters."""
    query = (
        sa.select(
            cfg_tasks.c.task_id,
            cfg_tasks.c.pipeline_id,
            cfg_pipelines.c.pipeline_code,
            cfg_tasks.c.task_code,
            cfg_tasks.c.handler,
            cfg_pipelines.c.refresh_type,
        )
        .join(cfg_pipelines, cfg_pipelines.c.pipeline_id == cfg_tasks.c.pipeline_id)
        .where(
            cfg_tasks.c.active_flag == "Y",
            cfg_pipelines.c.active_flag == "Y",
            cfg_tasks.c.handler.in_(list(handlers)),
        )
        .order_by(cfg_pipelines.c.pipeline_code, cfg_tasks.c.task_code)
    )
    if pipeline_id is not None:
        query = query.where(cfg_tasks.c.pipeline_id == pipeline_id)
    rows = conn.execute(query).all()
    if not rows:
        return []
    params: dict[int, dict[str, str]] = defaultdict(dict)
    ids = [r.task_id for r in rows]
    for start in range(0, len(ids), 500):
        for p in conn.execute(
            sa.select(
                cfg_task_parameters.c.task_id,
                cfg_task_parameters.c.parameter_name,
                cfg_task_parameters.c.parameter_value,
            ).where(
                cfg_task_parameters.c.active_flag == "Y", cfg_task_parameters.c.task_id.in_(ids[start : start + 500])
            )
        ):
            if p.parameter_value is not None:
                params[p.task_id][p.parameter_name] = p.parameter_value
    return [
        SqlTaskRow(r.task_id, r.pipeline_id, r.pipeline_code, r.task_code, r.handler, r.refresh_type, params[r.task_id])
        for r in rows
    ]


def sibling_writers(conn: sa.Connection, pipeline_id: int, task_id: int, key: str, database: str | None) -> set[str]:
    """The actions of the other SQL tasks of this pipeline that write the same target and shape it."""
    writers = {"CREATE_TABLE", "OVERWRITE_TABLE", "APPEND_TABLE", "SCD1_MERGE", "SCD2_MERGE"}
    return {
        row.action
        for row in active_tasks(conn, pipeline_id=pipeline_id)
        if row.task_id != task_id and row.action in writers and key_of(row.target, database) == key
    }


def create_table_succeeded(
    conn: sa.Connection, pipeline_id: int, pipeline_run_id: int, key: str, database: str | None
) -> tuple[list[str], bool]:
    """This pipeline's CREATE_TABLE tasks for the target, and whether one succeeded in this run."""
    creators = [
        row
        for row in active_tasks(conn, pipeline_id=pipeline_id)
        if row.action == "CREATE_TABLE" and key_of(row.target, database) == key
    ]
    if not creators:
        return [], False
    succeeded = conn.execute(
        sa.select(sa.func.count())
        .select_from(aud_task_run_log)
        .where(
            aud_task_run_log.c.pipeline_run_id == pipeline_run_id,
            aud_task_run_log.c.task_id.in_([c.task_id for c in creators]),
            aud_task_run_log.c.status == "SUCCESS",
        )
    ).scalar_one()
    return [c.task_code for c in creators], bool(succeeded)
