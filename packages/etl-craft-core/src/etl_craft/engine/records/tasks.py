"""Writes to CFG_TASKS from the web UI's metadata editor: a task added to a pipeline, or retired
(ACTIVE_FLAG 'N', so its runs keep naming it). The guard triggers stamp the actor and record the
change in AUD_METADATA_CHANGES."""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.engine.schema.tables import cfg_tasks


def add_task(conn: sa.Connection, pipeline_id: int, code: str, task_type: str, handler: str) -> int:
    """A new active task of the pipeline; returns its id."""
    inserted = conn.execute(
        cfg_tasks.insert()
        .values(pipeline_id=pipeline_id, task_code=code, task_type=task_type, handler=handler)
        .returning(cfg_tasks.c.task_id)
    )
    return int(inserted.scalar_one())


def retire_task(conn: sa.Connection, pipeline_id: int, task_id: int) -> int:
    """Set the pipeline's active task's ACTIVE_FLAG to 'N'; returns the row count."""
    k = cfg_tasks.c
    return conn.execute(
        cfg_tasks.update()
        .where(k.task_id == task_id, k.pipeline_id == pipeline_id, k.active_flag == "Y")
        .values(active_flag="N")
    ).rowcount
