"""Writes to AUD_UI_SESSIONS: a new session, its last use, its end."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema.tables import aud_ui_sessions, cfg_users


def insert_session(
    db: EngineDb, *, session_sha256: str, user_name: str, address: str, now: datetime, expires_at: datetime
) -> int:
    """One statement: the user's id is read inside the insert, so a user removed meanwhile inserts nothing."""
    user_id = sa.select(cfg_users.c.user_id).where(cfg_users.c.user_name == user_name).scalar_subquery()
    with db.write() as conn:
        statement = (
            aud_ui_sessions.insert()
            .values(
                session_sha256=session_sha256,
                user_id=user_id,
                address=address[:64],
                created_at=now,
                expires_at=expires_at,
                last_seen_at=now,
            )
            .returning(aud_ui_sessions.c.session_id)
        )
        return int(conn.execute(statement).scalar_one())


def touch_session(db: EngineDb, session_id: int, now: datetime) -> None:
    with db.write() as conn:
        conn.execute(
            aud_ui_sessions.update().where(aud_ui_sessions.c.session_id == session_id).values(last_seen_at=now)
        )


def end_session(db: EngineDb, session_sha256: str, now: datetime) -> int:
    """End the open session with this hash; the number of sessions ended (0 or 1)."""
    s = aud_ui_sessions.c
    with db.write() as conn:
        statement = (
            aud_ui_sessions.update()
            .where(s.session_sha256 == session_sha256, s.ended_at.is_(None))
            .values(ended_at=now)
        )
        return int(conn.execute(statement).rowcount)
