"""Bearer tokens and roles: who is asking, and whether their role reaches the endpoint's minimum.

Every request but `health` names a token in `Authorization: Bearer ...`. An accepted token's name
becomes the actor of everything the request does (AUD_ACTIONS, STARTED_BY, interventions). Its last
use is written at most once a minute, so readers don't turn every request into a write.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ApiRole
from etl_craft.core.errors import AccessDeniedError
from etl_craft.services.access.tokens import Bearer, Refusal, authenticate, record_use

LAST_USE_STEP = timedelta(minutes=1)
_bearer = HTTPBearer(auto_error=False, description="a token from etl-craft token create")


class NotAuthenticated(Exception):
    """No token, or one the Engine DB does not accept (answered 401, never naming the token)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _last_use_due(bearer: Bearer, now: datetime) -> bool:
    last = bearer.last_used_at
    if last is None:
        return True
    return (last if last.tzinfo else last.replace(tzinfo=UTC)) <= now - LAST_USE_STEP


def requires(role: ApiRole) -> Callable[..., Bearer]:
    """The dependency of an endpoint whose minimum role is `role`."""

    def check(
        request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
    ) -> Bearer:
        if credentials is None or credentials.scheme.lower() != "bearer" or not credentials.credentials:
            raise NotAuthenticated("no bearer token")
        now = utc_now()
        db = request.app.state.api.db
        judged = authenticate(db, credentials.credentials, now)
        if isinstance(judged, Refusal):
            raise NotAuthenticated(judged.reason)
        if not judged.role.includes(role):
            raise AccessDeniedError(
                f"{request.method} {request.url.path}",
                found=f"token {judged.actor.name!r} with role {judged.role.value}",
                expected=f"role {role.value} or above (viewer < operator < developer < admin)",
                remedy="use a token with that role (an admin creates one with etl-craft token create)",
            )
        if _last_use_due(judged, now):
            record_use(db, judged, now)
        return judged

    check.__name__ = f"requires_{role.value}"
    return check
