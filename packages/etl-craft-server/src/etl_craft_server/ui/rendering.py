"""Jinja2 rendering of the UI's pages: one environment, autoescaped, with the session on every page."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
from fastapi import Request
from fastapi.responses import HTMLResponse

from etl_craft.core.enums import ApiRole

HERE = Path(__file__).parent
_environment = jinja2.Environment(
    loader=jinja2.FileSystemLoader(HERE / "templates"),
    autoescape=True,
    undefined=jinja2.StrictUndefined,  # a misspelt name fails the page's test instead of showing nothing
    trim_blocks=True,
    lstrip_blocks=True,
)


def _moment(value: datetime | None) -> str:
    return "" if value is None else value.strftime("%Y-%m-%d %H:%M:%S")


def _duration(start: datetime | None, end: datetime | None) -> str:
    if start is None or end is None:
        return ""
    seconds = int((end - start).total_seconds())
    return f"{seconds // 3600}h{seconds // 60 % 60:02d}m" if seconds >= 3600 else f"{seconds // 60}m{seconds % 60:02d}s"


_SHORT = {"SUCCESS": "ok", "FAILED": "fail", "IN-PROGRESS": "run", "SKIPPED": "skip", "CANCELLED": "stop"}
_environment.filters["moment"] = _moment
_environment.filters["short"] = lambda status: _SHORT.get(status, "·")
_environment.globals["duration"] = _duration
_environment.filters["state_class"] = lambda status: "state-" + (status or "none").lower().replace(" ", "-")


def render(request: Request, template: str, context: dict[str, Any], status: int = 200) -> HTMLResponse:
    session = getattr(request.state, "session", None)
    role = session.caller.role if session else None
    page = _environment.get_template(template).render(
        request=request,
        session=session,
        can_operate=bool(role and role.includes(ApiRole.OPERATOR)),
        can_develop=bool(role and role.includes(ApiRole.DEVELOPER)),
        **context,
    )
    headers = {"Cache-Control": "no-store", "Content-Security-Policy": CONTENT_SECURITY_POLICY}
    return HTMLResponse(page, status_code=status, headers=headers)


# Only our own script and stylesheet; no inline script, no frame, no other site.
CONTENT_SECURITY_POLICY = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "frame-ancestors 'none'; form-action 'self'; base-uri 'none'"
)
