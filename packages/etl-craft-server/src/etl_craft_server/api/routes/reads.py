"""The read endpoints: pipelines, runs, explain, audit, lineage, validate and health."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import Query, Request
from fastapi.responses import JSONResponse

from etl_craft.core.enums import ApiRole
from etl_craft.core.text import BIGINT_MAX, CODE_LIMIT
from etl_craft_server.api.endpoints import MAX_PAGE, Code, OptionalCode, RunId, Viewer, endpoint, respond


@endpoint("GET", "/api/v1/health", ApiRole.VIEWER, "health", "whether the server and its Engine DB answer")
def health(request: Request, bearer: Viewer) -> JSONResponse:
    """503 when the Engine DB does not answer."""
    from etl_craft.services.doctor.health import engine_db_health

    return respond(request, bearer, "health", engine_db_health)


@endpoint("GET", "/api/v1/workers", ApiRole.VIEWER, "workers", "the worker agents that run attempts, and their health")
def workers(request: Request, bearer: Viewer) -> JSONResponse:
    """An empty `workers` list until worker agents exist (the queue pool provider): `attempts_run_by`
    says which processes run attempts meanwhile."""
    from etl_craft.services.doctor.workers import worker_health

    return respond(request, bearer, "workers", worker_health)


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
