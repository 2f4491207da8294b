"""How an API v1 endpoint is declared: `endpoint` registers a route and its row of ENDPOINTS, the one
table of endpoint -> minimum role (the OpenAPI description names each role, and the role matrix test
is generated from it); `respond` runs one service operation as the caller and answers its document.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import JSONResponse

from etl_craft.core.actor import acting_as
from etl_craft.core.enums import ApiRole
from etl_craft.core.errors import UnknownCodeError
from etl_craft.core.text import BIGINT_MAX, CODE_LIMIT
from etl_craft.services.access.tokens import Bearer
from etl_craft.services.context import OperationContext
from etl_craft.services.documents import document
from etl_craft_server.api.access import requires
from etl_craft_server.api.problems import ErrorDocument

PROJECT = "default"  # the only project until projects in one Engine DB exist (S5.G)
MAX_PAGE = 100  # runs per page; a larger limit is refused, not silently cut
PROJECT_PATH = "/api/v1/projects/{project}"

Code = Annotated[str, Path(min_length=1, max_length=CODE_LIMIT, pattern=r"^[A-Za-z][A-Za-z0-9_]*$")]
RunId = Annotated[int, Path(ge=1, le=BIGINT_MAX)]
RowId = RunId  # a task run or attempt id: the same rules
OptionalCode = Annotated[str | None, Query(min_length=1, max_length=CODE_LIMIT)]


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str
    role: ApiRole
    kind: str  # the document it returns (etl-craft/<kind>/1)
    summary: str


ENDPOINTS: list[Endpoint] = []
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorDocument, "description": meaning}
    for status, meaning in (
        (400, "a combination of values the operation refuses (a usage error)"),
        (
            401,
            "no credentials, a token unknown, revoked or expired, or a user unknown, disabled or with a wrong password",
        ),
        (403, "the token's or user's role is below the endpoint's minimum"),
        (404, "an unknown project, pipeline, task or run, named in the message"),
        (409, "a refused transition: the run or pipeline is not in a state that allows it"),
        (413, "a request body over 64 KiB"),
        (429, "too many failed sign-ins for this user or address; try again after Retry-After seconds"),
        (422, "a field or parameter out of its rules, named with the value found"),
        (503, "the Engine DB does not answer; try again after Retry-After seconds"),
    )
}
router = APIRouter()


def project_scope(project: Annotated[str, Path(max_length=CODE_LIMIT)]) -> str:
    if project != PROJECT:
        raise UnknownCodeError(
            f"project {project!r}",
            found="no project with this name",
            expected=f"{PROJECT!r} (one project per Engine DB until projects land)",
            remedy=f"use /api/v1/projects/{PROJECT}/...",
        )
    return project


def endpoint(method: str, path: str, role: ApiRole, kind: str, summary: str) -> Callable[[Callable[..., Any]], Any]:
    """Register a route and its row of ENDPOINTS."""

    scoped = not path.startswith("/api/v1/")
    full_path = PROJECT_PATH + path if scoped else path

    def register(function: Callable[..., Any]) -> Any:
        ENDPOINTS.append(Endpoint(method, full_path, role, kind, summary))
        return router.api_route(
            full_path,
            methods=[method],
            summary=summary,
            description=f"{function.__doc__ or summary}\n\nMinimum role: **{role.value}**. "
            f"Returns the `etl-craft/{kind}/1` document.",
            response_class=JSONResponse,
            dependencies=[Depends(project_scope)] if scoped else [],
            responses={200: {"description": f"an etl-craft/{kind}/1 document"}, **ERROR_RESPONSES},
        )(function)

    return register


def respond(request: Request, bearer: Bearer, kind: str, call: Callable[[OperationContext], Any]) -> JSONResponse:
    """Run one service operation as the token's actor and answer its document."""
    state = request.app.state.api
    ctx = OperationContext(config=state.config, db=state.db, actor=bearer.actor)
    with acting_as(bearer.actor):
        view = call(ctx)
    return JSONResponse(document(kind, view))


Viewer = Annotated[Bearer, Depends(requires(ApiRole.VIEWER))]
Operator = Annotated[Bearer, Depends(requires(ApiRole.OPERATOR))]
Admin = Annotated[Bearer, Depends(requires(ApiRole.ADMIN))]
