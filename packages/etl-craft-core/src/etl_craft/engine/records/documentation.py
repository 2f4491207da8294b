"""AUD_TASK_DOCUMENTATION: the versions of each task's DOCUMENTATION text, one row per change."""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from etl_craft.engine.schema import tables as t


@dataclass(frozen=True)
class DocumentedTask:
    task_id: int
    pipeline_code: str
    task_code: str
    text: str
    latest_version: int | None
    latest_hash: str | None


def documented_tasks(conn: sa.Connection) -> list[DocumentedTask]:
    """Every active task with a DOCUMENTATION parameter and its latest recorded version, in one query."""
    docs, task, pipe, params = t.aud_task_documentation, t.cfg_tasks, t.cfg_pipelines, t.cfg_task_parameters
    latest = (
        sa.select(
            docs.c.task_id,
            docs.c.version,
            docs.c.documentation_hash,
            sa.func.row_number().over(partition_by=docs.c.task_id, order_by=docs.c.version.desc()).label("position"),
        )
    ).subquery("latest")
    query = (
        sa.select(task.c.task_id, pipe.c.pipeline_code, task.c.task_code, params.c.parameter_value,
                  latest.c.version, latest.c.documentation_hash)
        .join(pipe, (pipe.c.pipeline_id == task.c.pipeline_id) & (pipe.c.active_flag == "Y"))
        .join(params, (params.c.task_id == task.c.task_id) & (params.c.parameter_name == "DOCUMENTATION")
              & (params.c.active_flag == "Y"))
        .outerjoin(latest, (latest.c.task_id == task.c.task_id) & (latest.c.position == 1))
        .where(task.c.active_flag == "Y", params.c.parameter_value.is_not(None))
        .order_by(pipe.c.pipeline_code, task.c.task_code)
    )  # fmt: skip
    return [DocumentedTask(*row) for row in conn.execute(query)]


def record_versions(conn: sa.Connection, versions: list[dict[str, object]]) -> None:
    """Insert the new versions (task_id, version, documentation_hash, documentation) in one statement."""
    if versions:
        conn.execute(t.aud_task_documentation.insert(), versions)
