"""The FastAPI application of API v1: routes, the health check, error handlers and body limits."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.responses import JSONResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.enums import ApiRole
from etl_craft.core.errors import AccessDeniedError, UsageError
from etl_craft.engine.database import EngineDb
from etl_craft.services.access.tokens import Bearer
from etl_craft_server.api import problems
from etl_craft_server.api.access import (
    FAILURE_LIMIT,
    FAILURE_WINDOW_SECONDS,
    FailedSignIns,
    NotAuthenticated,
    TooManyFailures,
    requires,
)
from etl_craft_server.api.routes import ENDPOINTS, router

MAX_BODY_BYTES = 64 * 1024  # every request body is a few fields; a larger one is refused unread
OPENAPI_PATH = "/api/v1/openapi.json"


@dataclass(frozen=True)
class ApiState:
    """What every request uses: the loaded configuration and the server's Engine DB connection pool."""

    config: ConnectorConfig
    db: EngineDb


class BodyLimit:
    """Refuse a body announced larger than MAX_BODY_BYTES (413) before reading it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            length = dict(scope.get("headers", ())).get(b"content-length", b"0")
            if not length.isdigit() or int(length) > MAX_BODY_BYTES:
                refusal = UsageError(
                    "the request body",
                    found=f"{length.decode('latin-1')[:20]} bytes",
                    expected=f"at most {MAX_BODY_BYTES} bytes",
                    remedy="send only the fields the endpoint names",
                )
                await problems.error_response(refusal, 413)(scope, receive, send)
                return
        await self.app(scope, receive, send)


async def _on_too_many_failures(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, TooManyFailures)
    refusal = AccessDeniedError(
        f"sign-in for {error.what}",
        found=f"{FAILURE_LIMIT} failed sign-ins within {FAILURE_WINDOW_SECONDS // 60} minutes",
        expected="fewer failures",
        remedy=f"wait {error.retry_after} seconds, or use a bearer token",
    )
    return problems.error_response(refusal, 429, {"Retry-After": str(error.retry_after)})


async def _on_not_authenticated(_request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, NotAuthenticated)
    return problems.unauthenticated(error.reason)


def _roles_table() -> str:
    lines = ["| Method | Path | Minimum role |", "|---|---|---|"]
    lines += [f"| {e.method} | `{e.path}` | {e.role.value} |" for e in ENDPOINTS]
    return "\n".join(lines)


def build_app() -> FastAPI:
    """The application without an Engine DB: what the OpenAPI description is generated from."""
    app = FastAPI(
        title="etl-craft API",
        version="1",
        summary="Every etl-craft operation over HTTP, with the documents `--format json` prints.",
        description="Send `Authorization: Bearer <token>` (etl-craft token create) or `Authorization: Basic` "
        "with a user (etl-craft user create). Roles: viewer < operator < "
        "developer < admin; each endpoint names its minimum.\n\n" + _roles_table(),
        openapi_url=OPENAPI_PATH,
        docs_url="/api/v1/docs",
        redoc_url=None,
    )
    app.include_router(router)
    app.add_exception_handler(NotAuthenticated, _on_not_authenticated)
    app.add_exception_handler(TooManyFailures, _on_too_many_failures)
    for error_class, handler in problems.HANDLERS:
        app.add_exception_handler(error_class, handler)
    app.add_middleware(BodyLimit)
    return app


def create_app(config: ConnectorConfig, db: EngineDb) -> FastAPI:
    app = build_app()
    app.state.api = ApiState(config, db)
    app.state.failed_sign_ins = FailedSignIns()
    _serve_metrics(app, db)
    from etl_craft_server.ui.app import build_ui

    ui = build_ui()
    ui.state.api = app.state.api
    ui.state.failed_sign_ins = app.state.failed_sign_ins  # one limit for the API's and the UI's sign-ins
    app.mount("/ui", ui)
    return app


def _serve_metrics(app: FastAPI, db: EngineDb) -> None:
    """GET /metrics for Prometheus (viewer role, as every read): outside /api/v1 and its OpenAPI
    description, because its body is Prometheus text, not an etl-craft document."""
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    from etl_craft_server.metrics import metrics_registry, observe_statements

    registry = metrics_registry(db)
    observe_statements(db.engine)

    @app.get("/metrics", include_in_schema=False)
    def metrics(_bearer: Annotated[Bearer, Depends(requires(ApiRole.VIEWER))]) -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def openapi_text() -> str:
    """The OpenAPI description as committed in docs/reference/openapi.json."""
    import json

    return json.dumps(build_app().openapi(), indent=2, ensure_ascii=False) + "\n"
