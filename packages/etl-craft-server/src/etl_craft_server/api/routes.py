"""API v1 endpoints. Each calls exactly one service operation and returns the JSON document the CLI
prints for it with `--format json`.

ENDPOINTS is the one table of endpoint -> minimum role: the routes are registered from it, the
OpenAPI description names each role, and the role matrix test is generated from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal

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
from etl_craft_server.api.bodies import BackfillBody, CreateRunBody, MarkBody, ReasonBody, RerunBody
from etl_craft_server.api.problems import ErrorDocument

PROJECT = "default"  # the only project until projects in one Engine DB exist (S5.G)
MAX_PAGE = 100  # runs per page; a larger limit is refused, not silently cut
PROJECT_PATH = "/api/v1/projects/{project}"

Code = Annotated[str, Path(min_length=1, max_length=CODE_LIMIT, pattern=r"^[A-Za-z][A-Za-z0-9_]*$")]
RunId = Annotated[int, Path(ge=1, le=BIGINT_MAX)]
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


# --- reads ---------------------------------------------------------------------------------------


@endpoint("GET", "/api/v1/health", ApiRole.VIEWER, "health", "whether the server and its Engine DB answer")
def health(request: Request, bearer: Viewer) -> JSONResponse:
    """503 when the Engine DB does not answer."""
    from etl_craft.services.doctor.health import engine_db_health

    return respond(request, bearer, "health", engine_db_health)


@endpoint("GET", "/pipelines", ApiRole.VIEWER, "pipeline-list", "list the active pipelines (etl-craft list)")
def list_pipelines(request: Request, bearer: Viewer) -> JSONResponse:
    from etl_craft.services.inspect import list_pipelines

    return respond(request, bearer, "pipeline-list", list_pipelines)


@endpoint(
    "GET", "/pipelines/{pipeline_code}", ApiRole.VIEWER, "steps", "a pipeline's tasks and settings (etl-craft steps)"
)
def pipeline_detail(request: Request, bearer: Viewer, pipeline_code: Code) -> JSONResponse:
    from etl_craft.services.inspect import pipeline_steps

    return respond(request, bearer, "steps", lambda ctx: pipeline_steps(ctx, pipeline_code))


@endpoint(
    "GET", "/pipelines/{pipeline_code}/graph", ApiRole.VIEWER, "graph", "a pipeline's task graph (etl-craft graph)"
)
def pipeline_graph(request: Request, bearer: Viewer, pipeline_code: Code) -> JSONResponse:
    from etl_craft.services.inspect import pipeline_graph

    return respond(request, bearer, "graph", lambda ctx: pipeline_graph(ctx, pipeline_code))


@endpoint(
    "GET",
    "/pipelines/{pipeline_code}/runs",
    ApiRole.VIEWER,
    "history",
    "a pipeline's runs, newest first (etl-craft history)",
)
def list_runs(
    request: Request,
    bearer: Viewer,
    pipeline_code: Code,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE, description="runs per page")] = 20,
    before: Annotated[int | None, Query(ge=1, le=BIGINT_MAX, description="only runs older than this id")] = None,
    task_code: OptionalCode = None,
) -> JSONResponse:
    """Page on with `before` set to the last run id of a page."""
    from etl_craft.services.inspect import run_history

    return respond(
        request,
        bearer,
        "history",
        lambda ctx: run_history(ctx, pipeline_code, task_code=task_code, limit=limit, before=before),
    )


@endpoint("GET", "/pipelines/{pipeline_code}/status", ApiRole.VIEWER, "status", "the unfinished run (etl-craft status)")
def pipeline_status(request: Request, bearer: Viewer, pipeline_code: Code) -> JSONResponse:
    from etl_craft.services.inspect import run_status

    return respond(request, bearer, "status", lambda ctx: run_status(ctx, pipeline_code))


@endpoint(
    "GET", "/pipelines/{pipeline_code}/runs/{run_id}", ApiRole.VIEWER, "status", "one run (etl-craft status --run-id)"
)
def run_detail(request: Request, bearer: Viewer, pipeline_code: Code, run_id: RunId) -> JSONResponse:
    from etl_craft.services.inspect import run_status
    from etl_craft.services.runs.selection import RunSelector

    return respond(request, bearer, "status", lambda ctx: run_status(ctx, pipeline_code, RunSelector(run_id, None)))


@endpoint(
    "GET",
    "/pipelines/{pipeline_code}/runs/{run_id}/steps",
    ApiRole.VIEWER,
    "steps",
    "a run's tasks (etl-craft steps --run-id)",
)
def run_steps(request: Request, bearer: Viewer, pipeline_code: Code, run_id: RunId) -> JSONResponse:
    from etl_craft.services.inspect import pipeline_steps
    from etl_craft.services.runs.selection import RunSelector

    return respond(request, bearer, "steps", lambda ctx: pipeline_steps(ctx, pipeline_code, RunSelector(run_id, None)))


@endpoint(
    "GET",
    "/pipelines/{pipeline_code}/runs/{run_id}/tasks/{task_code}/explain",
    ApiRole.VIEWER,
    "explain",
    "why a task is in its state (etl-craft explain)",
)
def explain(request: Request, bearer: Viewer, pipeline_code: Code, run_id: RunId, task_code: Code) -> JSONResponse:
    from etl_craft.services.inspect.explain import explain_task
    from etl_craft.services.runs.selection import RunSelector

    return respond(
        request, bearer, "explain", lambda ctx: explain_task(ctx, pipeline_code, task_code, RunSelector(run_id, None))
    )


@endpoint("GET", "/audit", ApiRole.VIEWER, "audit", "command requests and metadata changes (etl-craft audit)")
def audit(
    request: Request,
    bearer: Viewer,
    pipeline_code: OptionalCode = None,
    since: Annotated[
        str | None, Query(max_length=64, description="an ISO date or timestamp (UTC without offset)")
    ] = None,
) -> JSONResponse:
    from etl_craft.services.inspect import audit, parse_since

    moment = parse_since(since) if since is not None else None
    return respond(request, bearer, "audit", lambda ctx: audit(ctx, pipeline_code, moment))


@endpoint("GET", "/lineage", ApiRole.VIEWER, "lineage", "column lineage of SQL tasks (etl-craft lineage)")
def lineage(
    request: Request,
    bearer: Viewer,
    table: Annotated[str | None, Query(min_length=1, max_length=512, description="schema.table")] = None,
    column: Annotated[str | None, Query(min_length=1, max_length=CODE_LIMIT)] = None,
    direction: Literal["both", "upstream", "downstream"] = "both",
    depth: Annotated[int, Query(ge=1, le=50)] = 3,
) -> JSONResponse:
    from etl_craft.services.targets.lineage import lineage

    return respond(
        request,
        bearer,
        "lineage",
        lambda ctx: lineage(
            ctx,
            table=table,
            column=column,
            upstream=direction == "upstream",
            downstream=direction == "downstream",
            depth=depth,
        ),
    )


@endpoint("GET", "/validate", ApiRole.VIEWER, "validate", "check the metadata and project files (etl-craft validate)")
def validate(request: Request, bearer: Viewer, pipeline_code: OptionalCode = None) -> JSONResponse:
    """Answers 200 with `valid: false` when a check fails (the CLI exits 1)."""
    from etl_craft.services.validate import validate

    return respond(request, bearer, "validate", lambda ctx: validate(ctx, pipeline_code))


# --- writes --------------------------------------------------------------------------------------


def _pause(verb: Literal["pause", "resume"]) -> Callable[..., JSONResponse]:
    def change(request: Request, bearer: Operator, pipeline_code: Code, body: ReasonBody) -> JSONResponse:
        from etl_craft.services.interventions.pause import set_pause

        return respond(request, bearer, "operation", lambda ctx: set_pause(ctx, verb, pipeline_code, body.reason))

    change.__name__ = f"{verb}_pipeline"
    change.__doc__ = f"{verb} the pipeline (etl-craft {verb})"
    return change


endpoint(
    "POST", "/pipelines/{pipeline_code}/pause", ApiRole.OPERATOR, "operation", "pause a pipeline (etl-craft pause)"
)(_pause("pause"))
endpoint(
    "POST", "/pipelines/{pipeline_code}/resume", ApiRole.OPERATOR, "operation", "resume a pipeline (etl-craft resume)"
)(_pause("resume"))


@endpoint(
    "POST", "/pipelines/{pipeline_code}/runs", ApiRole.OPERATOR, "operation", "create a run (etl-craft run --init-only)"
)
def create_run(request: Request, bearer: Operator, pipeline_code: Code, body: CreateRunBody) -> JSONResponse:
    """The run passes its pipeline gates and is left IN-PROGRESS for the overseer (`etl-craft server`),
    which runs its tasks; the token is its requester (STARTED_BY)."""
    from etl_craft.services.runs.execute import RunRequest, execute_run

    run = RunRequest(pipeline_code=pipeline_code, init_only=True, run_date=body.run_date, run_key=body.run_key)
    return respond(request, bearer, "operation", lambda ctx: execute_run(ctx, run))


def _control(verb: Literal["cancel", "reopen"]) -> Callable[..., JSONResponse]:
    def change(
        request: Request, bearer: Operator, pipeline_code: Code, run_id: RunId, body: ReasonBody
    ) -> JSONResponse:
        from etl_craft.services.interventions import cancel_reopen

        operation = cancel_reopen.cancel if verb == "cancel" else cancel_reopen.reopen
        control = cancel_reopen.RunControlRequest(pipeline_code, body.reason, run_id, None)
        return respond(request, bearer, "operation", lambda ctx: operation(ctx, control))

    change.__name__ = f"{verb}_run"
    change.__doc__ = f"{verb} the run (etl-craft {verb})"
    return change


endpoint(
    "POST",
    "/pipelines/{pipeline_code}/runs/{run_id}/cancel",
    ApiRole.OPERATOR,
    "operation",
    "cancel a run (etl-craft cancel)",
)(_control("cancel"))
endpoint(
    "POST",
    "/pipelines/{pipeline_code}/runs/{run_id}/reopen",
    ApiRole.OPERATOR,
    "operation",
    "reopen an ended run (etl-craft reopen)",
)(_control("reopen"))


@endpoint(
    "POST",
    "/pipelines/{pipeline_code}/runs/{run_id}/mark",
    ApiRole.OPERATOR,
    "operation",
    "mark a task or the run (etl-craft mark)",
)
def mark(request: Request, bearer: Operator, pipeline_code: Code, run_id: RunId, body: MarkBody) -> JSONResponse:
    from etl_craft.services.interventions.marks import MarkRequest, mark

    marking = MarkRequest(
        pipeline_code=pipeline_code,
        status=body.status,
        reason=body.reason,
        task_code=body.task_code,
        rows=body.rows,
        stale=body.stale,
        run_id=run_id,
    )
    marking.check()
    return respond(request, bearer, "operation", lambda ctx: mark(ctx, marking))


@endpoint(
    "POST",
    "/pipelines/{pipeline_code}/runs/{run_id}/tasks/{task_code}/rerun",
    ApiRole.OPERATOR,
    "operation",
    "run a finished task again (etl-craft run --rerun)",
)
def rerun(
    request: Request, bearer: Operator, pipeline_code: Code, run_id: RunId, task_code: Code, body: RerunBody
) -> JSONResponse:
    """Runs the task in the server's process and answers when it ends (with `with_downstream`, when
    every later task has run again)."""
    from etl_craft.services.runs.execute import RunRequest, execute_run

    run = RunRequest(
        pipeline_code=pipeline_code,
        task_code=task_code,
        run_id=run_id,
        rerun=True,
        with_downstream=body.with_downstream,
        reason=body.reason,
    )
    return respond(request, bearer, "operation", lambda ctx: execute_run(ctx, run))


@endpoint(
    "POST",
    "/pipelines/{pipeline_code}/backfills",
    ApiRole.OPERATOR,
    "backfill",
    "one run per date (etl-craft run --backfill)",
)
def backfill(request: Request, bearer: Operator, pipeline_code: Code, body: BackfillBody) -> JSONResponse:
    """Runs every date in the server's process, oldest first, and answers when they have run."""
    from etl_craft.services.runs.backfills import execute_backfill
    from etl_craft.services.runs.execute import RunRequest

    run = RunRequest(
        pipeline_code=pipeline_code,
        backfill=f"{body.first.isoformat()}:{body.last.isoformat()}",
        reason=body.reason,
    )
    run.check()
    return respond(request, bearer, "backfill", lambda ctx: execute_backfill(ctx, run, lambda _line: None))
