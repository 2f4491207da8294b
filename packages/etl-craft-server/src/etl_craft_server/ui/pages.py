"""The UI's pages. Each calls the same service operations as API v1 (never SQL of its own) and
renders their views; every action is a form post checked by auth.checked_form."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from etl_craft.core.actor import acting_as
from etl_craft.core.enums import ApiRole
from etl_craft.services.access.sessions import UiSession
from etl_craft.services.context import OperationContext
from etl_craft_server.ui.auth import signed_in
from etl_craft_server.ui.rendering import render

router = APIRouter()
Viewer = Annotated[UiSession, Depends(signed_in(ApiRole.VIEWER))]


def context_of(request: Request, session: UiSession) -> OperationContext:
    state = request.app.state.api
    return OperationContext(config=state.config, db=state.db, actor=session.caller.actor)


def call(request: Request, session: UiSession, operation: Any, *args: Any, **kwargs: Any) -> Any:
    """One service operation as the signed-in user."""
    with acting_as(session.caller.actor):
        return operation(context_of(request, session), *args, **kwargs)


@router.get("/")
def home() -> Response:
    return RedirectResponse("/ui/pipelines", status_code=303)


@router.get("/pipelines", response_class=HTMLResponse)
def pipelines(request: Request, session: Viewer) -> Response:
    from etl_craft.services.inspect import list_pipelines

    listed = call(request, session, list_pipelines)
    return render(request, "pipelines.html", {"pipelines": listed.pipelines})
