"""One error shape for every refusal: the CLI's `etl-craft/error/1` document plus the remedy and the
HTTP status that fits the error's class. No traceback or credential ever reaches a response."""

from __future__ import annotations

import logging
from typing import Any

import sqlalchemy as sa
from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from etl_craft.core import errors as e
from etl_craft.core.sensitive import DEFAULT_PATTERNS, SensitiveNames
from etl_craft.core.text import REDACTED
from etl_craft.engine.retry import TRANSIENT, first_line
from etl_craft.services.documents import document

log = logging.getLogger("etl_craft.server.api")

RETRY_AFTER_SECONDS = 5
# Most specific first: the first class an error is an instance of gives its status.
STATUS_BY_ERROR: tuple[tuple[type[e.EtlCraftError], int], ...] = (
    (e.AccessDeniedError, 403),
    (e.UnknownCodeError, 404),
    (e.ResourceNotFoundError, 404),
    (e.UnknownTaskError, 404),
    (e.UsageError, 400),
    (e.StaleTransitionError, 409),
    (e.RunStateError, 409),
    (e.RunRefusedError, 409),
    (e.LockTimeoutError, 409),
    (e.RemoteUnsupportedError, 409),
    (e.EngineDbError, 503),
    (e.MigrationError, 503),
    (e.MetadataError, 422),
    (e.GraphError, 422),
    (e.ConfigurationError, 409),  # the server's craft-connector.yml can't do it (no Warehouse section, ...)
)


class ErrorDocument(BaseModel):
    """The body of every refusal (documented in the OpenAPI description)."""

    model_config = ConfigDict(populate_by_name=True)

    schema_: str = Field(alias="schema", examples=["etl-craft/error/1"])
    error: str
    message: str
    remedy: str | None
    exit_code: int
    exit_name: str
    http_status: int


def status_of(error: e.EtlCraftError) -> int:
    return next((status for cls, status in STATUS_BY_ERROR if isinstance(error, cls)), 500)


def error_response(
    error: e.EtlCraftError, status: int | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    status = status or status_of(error)
    body: dict[str, Any] = document("error", {**error.to_json(), "remedy": error.remedy, "http_status": status})
    if status == 503:
        headers = {**(headers or {}), "Retry-After": str(RETRY_AFTER_SECONDS)}
    return JSONResponse(body, status_code=status, headers=headers)


def unauthenticated(reason: str) -> JSONResponse:
    error = e.AccessDeniedError(
        "the request's credentials",
        found=reason,
        expected="Authorization: Bearer <a live token> or Basic <an enabled user and its password>",
        remedy="create a token with etl-craft token create, or a user with etl-craft user create",
    )
    return error_response(error, 401, {"WWW-Authenticate": 'Bearer realm="etl-craft", Basic realm="etl-craft"'})


async def on_etl_craft_error(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, e.EtlCraftError)
    return error_response(error)


async def on_engine_db_outage(_request: Request, error: Exception) -> JSONResponse:
    log.warning("the Engine DB did not answer: %s", first_line(error))
    outage = e.EngineDbError(
        "the Engine DB",
        found=f"no answer ({first_line(error)})",
        expected="a reachable Engine DB",
        remedy=f"try again in {RETRY_AFTER_SECONDS} seconds; the server keeps serving once the Engine DB answers",
    )
    return error_response(outage, 503)


def _field(location: tuple[Any, ...]) -> str:
    where = [str(part) for part in location if part not in ("body", "query", "path")]
    return ".".join(where) or "the request body"


# A body field whose value no answer repeats, whatever Redaction.Sensitive_patterns says: a user's
# password (POST /users) and anything the default patterns name.
SECRET_FIELDS = SensitiveNames((*DEFAULT_PATTERNS, "password"))


def shown_input(location: tuple[Any, ...], value: Any) -> str:
    """The value a 422 quotes: *** for a secret field, and a body quoted with its secrets masked."""
    if location and SECRET_FIELDS.matches(str(location[-1])):
        return REDACTED
    if isinstance(value, dict):
        value = {key: REDACTED if SECRET_FIELDS.matches(str(key)) else item for key, item in value.items()}
    return repr(value)


async def on_bad_input(_request: Request, error: Exception) -> JSONResponse:
    """A request FastAPI could not read into the endpoint's parameters: 422 naming each field."""
    assert isinstance(error, RequestValidationError)
    problems = []
    for item in error.errors():
        shown = shown_input(tuple(item.get("loc", ())), item.get("input"))
        shown = shown if len(shown) <= 60 else shown[:60] + "…"
        problems.append(f"{_field(tuple(item.get('loc', ())))} = {shown} ({item.get('msg', 'not valid')})")
    refusal = e.UsageError(
        "the request",
        found="; ".join(problems) or "input it could not read",
        remedy="correct the named fields; the OpenAPI description (/api/v1/openapi.json) gives each one's rules",
    )
    return error_response(refusal, 422)


def _allowed_methods(request: Request) -> str:
    """Every method some route serves at this path (Starlette names only the first route's)."""
    methods: set[str] = set()
    for route in request.app.routes:
        match, _ = route.matches(request.scope)  # PARTIAL: the path matches, the method does not
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


async def on_http_error(request: Request, error: Exception) -> JSONResponse:
    """Refusals made by the framework itself (an unknown path, a method the path lacks, a body that
    is not JSON), in the same shape as every other refusal."""
    assert isinstance(error, StarletteHTTPException)
    refusal = e.UsageError(
        "the request",
        found=str(error.detail),
        remedy="the OpenAPI description (/api/v1/openapi.json) lists every path, method and body",
    )
    status = 422 if error.status_code == 400 else error.status_code  # an unreadable body is bad input
    headers = dict(error.headers or {})
    if status == 405:
        headers["Allow"] = _allowed_methods(request)
    return error_response(refusal, status, headers)


async def on_unexpected(_request: Request, error: Exception) -> JSONResponse:
    """A bug: logged with its traceback on the server, a one-line 500 to the client."""
    log.error("unexpected %s in the HTTP API", type(error).__name__, exc_info=error)
    bug = e.EtlCraftError(
        f"unexpected {type(error).__name__} in the HTTP API",
        remedy="this is a bug in etl-craft; the server's log holds its traceback (include it when you report it)",
    )
    return error_response(bug, 500)


HANDLERS = (
    (e.EtlCraftError, on_etl_craft_error),
    (RequestValidationError, on_bad_input),
    (StarletteHTTPException, on_http_error),
    *((cls, on_engine_db_outage) for cls in TRANSIENT),
    (sa.exc.DBAPIError, on_unexpected),
    (Exception, on_unexpected),
)
