"""Web UI sessions: a random value in an HttpOnly cookie, of which the Engine DB keeps only the SHA-256.

A session lasts SESSION_HOURS from sign-in and ends at sign-out, when its user is disabled, or when
it expires. The CSRF token of a session is derived from the cookie's value (an HMAC keyed by it),
so forms carry a value only the holder of the cookie can compute and the server stores nothing more.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.enums import ActorKind, ApiRole
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads.ui_sessions import open_session
from etl_craft.engine.records import ui_sessions as session_records
from etl_craft.services.access.tokens import Bearer, digest

SESSION_HOURS = 12
LAST_SEEN_STEP = timedelta(minutes=1)  # a session's last use is written at most once a minute
_VALUE_BYTES = 32


@dataclass(frozen=True)
class UiSession:
    session_id: int
    caller: Bearer  # the user: actor of everything done through the UI, and the role it may use
    csrf_token: str
    expires_at: datetime


def csrf_token(value: str) -> str:
    return hmac.new(value.encode("utf-8"), b"etl-craft csrf", hashlib.sha256).hexdigest()


def csrf_matches(value: str, presented: str) -> bool:
    return hmac.compare_digest(csrf_token(value), presented)


def start_session(db: EngineDb, user: Bearer, address: str, now: datetime) -> tuple[str, UiSession]:
    """A new session for a user who has just signed in: the cookie's value (shown once) and the session."""
    value = secrets.token_urlsafe(_VALUE_BYTES)
    expires_at = now + timedelta(hours=SESSION_HOURS)
    with acting_as(user.actor):
        session_id = session_records.insert_session(
            db, session_sha256=digest(value), user_name=user.actor.name, address=address, now=now, expires_at=expires_at
        )
    return value, UiSession(session_id, user, csrf_token(value), expires_at)


def _aware(moment: datetime) -> datetime:
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def current_session(db: EngineDb, value: str, now: datetime) -> UiSession | None:
    """The session a cookie names, or None when it is unknown, ended, expired, or its user is disabled."""
    if not 0 < len(value) <= 128:
        return None
    with db.read() as conn:
        row = open_session(conn, digest(value))
    if row is None or row.disabled_at is not None or _aware(row.expires_at) <= now:
        return None
    caller = Bearer(None, Actor(row.user_name, ActorKind.HUMAN), ApiRole(row.role), row.last_seen_at)
    if _aware(row.last_seen_at) <= now - LAST_SEEN_STEP:
        with acting_as(caller.actor):
            session_records.touch_session(db, row.session_id, now)
    return UiSession(row.session_id, caller, csrf_token(value), _aware(row.expires_at))


def end_session(db: EngineDb, session: UiSession, value: str, now: datetime) -> bool:
    with acting_as(session.caller.actor):
        return session_records.end_session(db, digest(value), now) == 1
