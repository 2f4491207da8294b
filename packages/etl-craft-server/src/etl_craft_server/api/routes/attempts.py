"""Task runs and attempts by id, and an attempt's log read from a byte offset."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query, Request
from fastapi.responses import JSONResponse

from etl_craft.core.enums import ApiRole
from etl_craft.core.text import BIGINT_MAX
from etl_craft.services.inspect.attempts import LOG_CHUNK_LIMIT
from etl_craft_server.api.endpoints import RowId, Viewer, endpoint, respond


@endpoint(
    "GET",
    "/task-runs/{task_run_id}",
    ApiRole.VIEWER,
    "task-run",
    "one task run and its attempts (etl-craft task-run)",
)
def task_run(request: Request, bearer: Viewer, task_run_id: RowId) -> JSONResponse:
    from etl_craft.services.inspect.attempts import task_run_detail

    return respond(request, bearer, "task-run", lambda ctx: task_run_detail(ctx, task_run_id))


@endpoint("GET", "/attempts/{attempt_id}", ApiRole.VIEWER, "attempt", "one attempt (etl-craft attempt)")
def attempt(request: Request, bearer: Viewer, attempt_id: RowId) -> JSONResponse:
    from etl_craft.services.inspect.attempts import attempt_detail

    return respond(request, bearer, "attempt", lambda ctx: attempt_detail(ctx, attempt_id))


@endpoint(
    "GET",
    "/attempts/{attempt_id}/log",
    ApiRole.VIEWER,
    "attempt-log",
    "an attempt's log from a byte offset (etl-craft attempt-log)",
)
def attempt_log(
    request: Request,
    bearer: Viewer,
    attempt_id: RowId,
    offset: Annotated[int, Query(ge=0, le=BIGINT_MAX, description="the byte to start at")] = 0,
    limit: Annotated[
        int, Query(ge=1, le=LOG_CHUNK_LIMIT, description="at most this many bytes; read on from next_offset")
    ] = LOG_CHUNK_LIMIT,
) -> JSONResponse:
    """Follow a running attempt by asking again from `next_offset` until `attempt_ended` is true and
    `next_offset` equals `size`."""
    from etl_craft.services.inspect.attempts import attempt_log

    return respond(request, bearer, "attempt-log", lambda ctx: attempt_log(ctx, attempt_id, offset, limit))
