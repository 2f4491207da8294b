"""Who is asking, and whether their role reaches the endpoint's minimum.

A request names a bearer token (`Authorization: Bearer ...`, for programs) or a user and password
(`Authorization: Basic ...`, for people until the web UI brings sessions). The accepted token's or
user's name becomes the actor of everything the request does (AUD_ACTIONS, STARTED_BY,
interventions). A token's last use is written at most once a minute, so readers don't turn every
request into a write. Failed sign-ins are counted per user and per client address: the sixth within
15 minutes is refused with 429 until the window passes.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBasic, HTTPBasicCredentials, HTTPBearer

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ApiRole
from etl_craft.core.errors import AccessDeniedError
from etl_craft.services.access.tokens import Bearer, Refusal, authenticate, record_use
from etl_craft.services.access.users import sign_in

LAST_USE_STEP = timedelta(minutes=1)
FAILURE_LIMIT = 5
FAILURE_WINDOW_SECONDS = 15 * 60
_bearer = HTTPBearer(auto_error=False, description="a token from etl-craft token create")
_basic = HTTPBasic(auto_error=False, description="a user from etl-craft user create, and its password")


class NotAuthenticated(Exception):
    """No credentials, or ones the Engine DB does not accept (answered 401, never naming a secret)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TooManyFailures(Exception):
    """Sign-ins refused for a while after repeated failures (answered 429 with Retry-After)."""

    def __init__(self, what: str, retry_after: int) -> None:
        super().__init__(what)
        self.what = what
        self.retry_after = retry_after


class FailedSignIns:
    """Recent failed sign-ins per user name and per client address, in this process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[str, deque[float]] = defaultdict(deque)

    def _recent(self, key: str, now: float) -> deque[float]:
        times = self._failures[key]
        while times and times[0] <= now - FAILURE_WINDOW_SECONDS:
            times.popleft()
        return times

    def check(self, keys: list[str]) -> None:
        now = time.monotonic()
        with self._lock:
            for key in keys:
                times = self._recent(key, now)
                if len(times) >= FAILURE_LIMIT:
                    raise TooManyFailures(key, int(times[0] + FAILURE_WINDOW_SECONDS - now) + 1)

    def failed(self, keys: list[str]) -> None:
        now = time.monotonic()
        with self._lock:
            for key in keys:
                self._recent(key, now).append(now)


def _last_use_due(bearer: Bearer, now: datetime) -> bool:
    last = bearer.last_used_at
    if last is None:
        return True
    return (last if last.tzinfo else last.replace(tzinfo=UTC)) <= now - LAST_USE_STEP


def _user(request: Request, basic: HTTPBasicCredentials, now: datetime) -> Bearer:
    failures: FailedSignIns = request.app.state.failed_sign_ins
    address = request.client.host if request.client else "unknown"
    keys = [f"user {basic.username!r}", f"address {address}"]
    failures.check(keys)
    judged = sign_in(request.app.state.api.db, basic.username, basic.password, now)
    if isinstance(judged, Refusal):
        if judged.guess:
            failures.failed(keys)
        raise NotAuthenticated(judged.reason)
    return judged


def _token(request: Request, token: str, now: datetime) -> Bearer:
    db = request.app.state.api.db
    judged = authenticate(db, token, now)
    if isinstance(judged, Refusal):
        raise NotAuthenticated(judged.reason)
    if _last_use_due(judged, now):
        record_use(db, judged, now)
    return judged


def requires(role: ApiRole) -> Callable[..., Bearer]:
    """The dependency of an endpoint whose minimum role is `role`."""

    def check(
        request: Request,
        bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
        basic: Annotated[HTTPBasicCredentials | None, Depends(_basic)],
    ) -> Bearer:
        now = utc_now()
        if bearer is not None and bearer.credentials:
            caller = _token(request, bearer.credentials, now)
        elif basic is not None and basic.username:
            caller = _user(request, basic, now)
        else:
            raise NotAuthenticated("no bearer token and no user")
        if not caller.role.includes(role):
            raise AccessDeniedError(
                f"{request.method} {request.url.path}",
                found=f"{caller.actor.name!r} with role {caller.role.value}",
                expected=f"role {role.value} or above (viewer < operator < developer < admin)",
                remedy="use a token or user with that role (an admin creates them with etl-craft token or user)",
            )
        return caller

    check.__name__ = f"requires_{role.value}"
    return check
