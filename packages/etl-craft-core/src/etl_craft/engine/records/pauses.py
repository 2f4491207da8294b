"""AUD_PIPELINE_PAUSES: at most one open pause per pipeline, opened and closed by guarded statements.

Each write is one statement whose outcome is checked, so two operators racing to pause (or resume)
can't both win: the second is told there was nothing to change.
"""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.engine.schema.tables import aud_pipeline_pauses as pauses


def open_pause(conn: sa.Connection, pipeline_id: int, *, actor: Actor, reason: str, now: datetime) -> bool:
    """Pause a pipeline; False when it was paused already. INSERT ... SELECT ... WHERE NOT EXISTS (an
    open pause) RETURNING the new id, and the unique index backs the guard against a concurrent pause."""
    open_already = sa.exists().where(pauses.c.pipeline_id == pipeline_id, pauses.c.resumed_at.is_(None))
    row = sa.select(
        sa.literal(pipeline_id, type_=pauses.c.pipeline_id.type),
        sa.literal(now, type_=pauses.c.paused_at.type),
        sa.literal(actor.name, type_=pauses.c.paused_by.type),
        sa.literal(actor.kind.value, type_=pauses.c.paused_by_kind.type),
        sa.literal(reason, type_=pauses.c.reason.type),
    ).where(~open_already)
    try:
        with conn.begin_nested():
            inserted = conn.execute(
                pauses.insert()
                .from_select(["pipeline_id", "paused_at", "paused_by", "paused_by_kind", "reason"], row)
                .returning(pauses.c.pipeline_pause_id)
            ).scalar_one_or_none()
    except sa.exc.IntegrityError:
        return False
    return inserted is not None  # the row count of INSERT ... SELECT, read portably


def close_pause(conn: sa.Connection, pipeline_id: int, *, actor: Actor, reason: str, now: datetime) -> bool:
    """Resume a pipeline; False when it was not paused."""
    result = conn.execute(
        pauses.update()
        .where(pauses.c.pipeline_id == pipeline_id, pauses.c.resumed_at.is_(None))
        .values(resumed_at=now, resumed_by=actor.name, resumed_by_kind=actor.kind.value, resume_reason=reason)
    )
    return result.rowcount == 1
