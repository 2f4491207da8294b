"""Writes to CFG_PIPELINES from the web UI's metadata editor: a pipeline added, or its settings changed.
The guard triggers stamp the actor and record the change in AUD_METADATA_CHANGES."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from etl_craft.engine.schema.tables import cfg_pipelines


def update_pipeline(conn: sa.Connection, pipeline_id: int, values: Mapping[str, Any]) -> int:
    """Set the columns named in `values` on the active pipeline; returns the row count."""
    p = cfg_pipelines.c
    return conn.execute(
        cfg_pipelines.update().where(p.pipeline_id == pipeline_id, p.active_flag == "Y").values(**values)
    ).rowcount


def add_pipeline(conn: sa.Connection, values: Mapping[str, Any]) -> int:
    """A new active pipeline (`values` name PIPELINE_CODE, PIPELINE_NAME and REFRESH_TYPE at least)."""
    inserted = conn.execute(cfg_pipelines.insert().values(**values).returning(cfg_pipelines.c.pipeline_id))
    return int(inserted.scalar_one())
