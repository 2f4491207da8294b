"""Reads of AUD_UI_SESSIONS: the live session a web UI cookie names, with its user, in one query."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.engine.schema.tables import aud_ui_sessions, cfg_users


@dataclass(frozen=True)
class SessionRow:
    session_id: int
    user_name: str
    role: str
    disabled_at: datetime | None
    expires_at: datetime
    last_seen_at: datetime


def open_session(conn: sa.Connection, session_sha256: str) -> SessionRow | None:
    """The session with this hash that has not been ended (expiry is judged by the caller's clock)."""
    s, u = aud_ui_sessions.c, cfg_users.c
    query = (
        sa.select(s.session_id, u.user_name, u.role, u.disabled_at, s.expires_at, s.last_seen_at)
        .join_from(aud_ui_sessions, cfg_users, s.user_id == u.user_id)
        .where(s.session_sha256 == session_sha256, s.ended_at.is_(None))
    )
    row = conn.execute(query).one_or_none()
    return None if row is None else SessionRow(**row._mapping)
