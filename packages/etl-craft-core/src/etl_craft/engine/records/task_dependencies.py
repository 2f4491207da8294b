"""Writes to CFG_TASK_DEPENDENCY from the web UI's metadata editor: a dependency added, or retired
(ACTIVE_FLAG set to 'N', as project migrations retire metadata, so its history stays). The guard
triggers stamp the actor and record the change in AUD_METADATA_CHANGES."""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.engine.schema.tables import cfg_task_dependency


def add_dependency(conn: sa.Connection, pipeline_id: int, task_id: int, upstream_id: int, dependency_type: str) -> int:
    """A new active dependency of the task on another task of its pipeline; returns its id."""
    inserted = conn.execute(
        cfg_task_dependency.insert()
        .values(
            pipeline_id=pipeline_id, task_id=task_id, depends_on_task_id=upstream_id, dependency_type=dependency_type
        )
        .returning(cfg_task_dependency.c.task_dependency_id)
    )
    return int(inserted.scalar_one())


def retire_dependency(conn: sa.Connection, pipeline_id: int, dependency_id: int) -> int:
    """Set the active dependency's ACTIVE_FLAG to 'N'; returns the row count (0: none such in the pipeline)."""
    d = cfg_task_dependency.c
    return conn.execute(
        cfg_task_dependency.update()
        .where(d.task_dependency_id == dependency_id, d.pipeline_id == pipeline_id, d.active_flag == "Y")
        .values(active_flag="N")
    ).rowcount
