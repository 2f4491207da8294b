"""Who is signed in to the web UI, sign-in and sign-out, and the CSRF check of every form post.

The session cookie is HttpOnly, SameSite=Lax, scoped to /ui, and Secure as
Orchestration.Ui_cookie_secure says. Before sign-in there is no session, so the sign-in form is
protected by a double-submit cookie instead: a random value in a cookie that the form must repeat.
Failed sign-ins count towards the same per-user and per-address limit as the API's Basic sign-ins.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ApiRole
from etl_craft.core.errors import AccessDeniedError
from etl_craft.services.access.sessions import UiSession, csrf_matches, current_session, end_session, start_session
from etl_craft.services.access.tokens import Refusal
from etl_craft.services.access.users import sign_in
from etl_craft_server.api.access import FAILURE_LIMIT, FAILURE_WINDOW_SECONDS, FailedSignIns, TooManyFailures
from etl_craft_server.ui.rendering import render

SESSION_COOKIE = "etl_craft_session"
SIGN_IN_COOKIE = "etl_craft_sign_in"
COOKIE_PATH = "/ui"
router = APIRouter()


class SignInNeeded(Exception):
    """No live session: the browser is sent to the sign-in page, and back to `path` after it."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        self.path = path


def _secure(request: Request) -> bool:
    setting = request.app.state.api.config.orchestration.ui_cookie_secure
    return setting == "always" or (setting == "auto" and request.url.scheme == "https")


def _set_cookie(request: Request, response: Response, name: str, value: str, max_age: int | None) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path=COOKIE_PATH, httponly=True, samesite="lax", secure=_secure(request)
    )


def _address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _session(request: Request) -> UiSession | None:
    value = request.cookies.get(SESSION_COOKIE)
    return current_session(request.app.state.api.db, value, utc_now()) if value else None


def signed_in(role: ApiRole) -> Callable[[Request], UiSession]:
    """The dependency of a page whose minimum role is `role`; without a session, off to sign-in."""

    def check(request: Request) -> UiSession:
        session = _session(request)
        if session is None:
            raise SignInNeeded(request.url.path + (f"?{request.url.query}" if request.url.query else ""))
        if not session.caller.role.includes(role):
            raise AccessDeniedError(
                f"{request.method} {request.url.path}",
                found=f"{session.caller.actor.name!r} with role {session.caller.role.value}",
                expected=f"role {role.value} or above (viewer < operator < developer < admin)",
                remedy="ask an admin for that role (etl-craft user), or sign in as a user who has it",
            )
        request.state.session = session
        return session

    check.__name__ = f"signed_in_{role.value}"
    return check


def checked_form(role: ApiRole) -> Callable[[Request], Awaitable[UiSession]]:
    """The dependency of a form post: a session with `role`, and the session's CSRF token in the form."""
    session_of = signed_in(role)

    async def check(request: Request) -> UiSession:
        session = session_of(request)
        form = await request.form()
        presented = form.get("csrf_token")
        if not isinstance(presented, str) or not csrf_matches(request.cookies[SESSION_COOKIE], presented):
            raise AccessDeniedError(
                f"the form posted to {request.url.path}",
                found="no CSRF token, or one that is not this session's",
                expected="the token the page put in the form",
                remedy="reload the page and submit the form from it",
            )
        return session

    check.__name__ = f"form_{role.value}"
    return check


def _safe_next(path: str) -> str:
    """Only a path inside the UI: never a redirect to another site."""
    return path if path.startswith("/ui/") and not path.startswith("/ui//") and "\\" not in path else "/ui/pipelines"


def _sign_in_page(request: Request, next_path: str, message: str | None = None, status: int = 200) -> HTMLResponse:
    value = secrets.token_urlsafe(24)
    response = render(
        request,
        "sign_in.html",
        {"next": _safe_next(next_path), "form_token": value, "message": message},
        status=status,
    )
    _set_cookie(request, response, SIGN_IN_COOKIE, value, max_age=3600)
    return response


@router.get("/sign-in", response_class=HTMLResponse)
def sign_in_form(request: Request, next: str = "/ui/pipelines") -> Response:
    if _session(request) is not None:
        return RedirectResponse(_safe_next(next), status_code=303)
    return _sign_in_page(request, next)


@router.post("/sign-in", response_class=HTMLResponse)
def sign_in_post(
    request: Request,
    user_name: Annotated[str, Form(max_length=256)],
    password: Annotated[str, Form(max_length=2048)],
    form_token: Annotated[str, Form(max_length=128)],
    next: Annotated[str, Form(max_length=2048)] = "/ui/pipelines",
) -> Response:
    expected = request.cookies.get(SIGN_IN_COOKIE, "")
    if not expected or not hmac.compare_digest(expected, form_token):
        return _sign_in_page(request, next, "The sign-in form expired: sign in again from this page.", 400)
    failures: FailedSignIns = request.app.state.failed_sign_ins
    keys = [f"user {user_name!r}", f"address {_address(request)}"]
    try:
        failures.check(keys)
    except TooManyFailures as refusal:
        message = (
            f"{FAILURE_LIMIT} failed sign-ins for {refusal.what} within {FAILURE_WINDOW_SECONDS // 60} minutes: "
            f"wait {refusal.retry_after} seconds before trying again."
        )
        page = _sign_in_page(request, next, message, 429)
        page.headers["Retry-After"] = str(refusal.retry_after)
        return page
    db = request.app.state.api.db
    now = utc_now()
    judged = sign_in(db, user_name, password, now)
    if isinstance(judged, Refusal):
        if judged.guess:
            failures.failed(keys)
        return _sign_in_page(request, next, f"Not signed in: {judged.reason}.", 401)
    value, session = start_session(db, judged, _address(request), now)
    response = RedirectResponse(_safe_next(next), status_code=303)
    _set_cookie(request, response, SESSION_COOKIE, value, max_age=int((session.expires_at - now).total_seconds()))
    response.delete_cookie(SIGN_IN_COOKIE, path=COOKIE_PATH)
    return response


@router.post("/sign-out")
def sign_out(request: Request, session: Annotated[UiSession, Depends(checked_form(ApiRole.VIEWER))]) -> Response:
    end_session(request.app.state.api.db, session, request.cookies[SESSION_COOKIE], utc_now())
    response = RedirectResponse("/ui/sign-in", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path=COOKIE_PATH)
    return response
