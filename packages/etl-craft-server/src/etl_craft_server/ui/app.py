"""The UI application, mounted under /ui by the API's app: its own error pages (HTML, not JSON)."""

from __future__ import annotations

from urllib.parse import quote

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException

from etl_craft.core import errors as e
from etl_craft.engine.retry import TRANSIENT, first_line
from etl_craft_server.api.problems import RETRY_AFTER_SECONDS, status_of
from etl_craft_server.ui import auth, brand_files, editor_pages, metadata_pages, pages
from etl_craft_server.ui.rendering import HERE, render


def _error_page(request: Request, title: str, message: str, remedy: str | None, status: int) -> HTMLResponse:
    return render(request, "error.html", {"title": title, "message": message, "remedy": remedy}, status=status)


async def _on_sign_in_needed(_request: Request, error: Exception) -> Response:
    assert isinstance(error, auth.SignInNeeded)
    return RedirectResponse(f"/ui/sign-in?next={quote(error.path, safe='/')}", status_code=303)


async def _on_etl_craft_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, e.EtlCraftError)
    status = status_of(error)
    title = {403: "Not allowed", 404: "Not found", 409: "Refused"}.get(status, "Refused")
    return _error_page(request, title, str(error), error.remedy, status)


async def _on_bad_input(request: Request, error: Exception) -> Response:
    assert isinstance(error, RequestValidationError)
    fields = "; ".join(
        ".".join(str(p) for p in item.get("loc", ())[1:]) + f": {item.get('msg')}" for item in error.errors()
    )
    return _error_page(
        request,
        "Not accepted",
        f"the form or address has values out of their rules ({fields})",
        "correct them and send again",
        422,
    )


async def _on_http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, StarletteHTTPException)
    return _error_page(
        request,
        "Not found" if error.status_code == 404 else "Refused",
        str(error.detail),
        "use the links on the pages",
        error.status_code,
    )


async def _on_engine_db_outage(request: Request, error: Exception) -> Response:
    message = f"the Engine DB did not answer ({first_line(error)})"
    page = _error_page(request, "The Engine DB does not answer", message, "reload the page in a few seconds", 503)
    page.headers["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return page


def build_ui() -> FastAPI:
    ui = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    ui.include_router(auth.router)
    ui.include_router(brand_files.router)
    ui.include_router(pages.router)
    ui.include_router(metadata_pages.router)
    ui.include_router(editor_pages.router)
    ui.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    ui.add_exception_handler(auth.SignInNeeded, _on_sign_in_needed)
    ui.add_exception_handler(e.EtlCraftError, _on_etl_craft_error)
    ui.add_exception_handler(RequestValidationError, _on_bad_input)
    ui.add_exception_handler(StarletteHTTPException, _on_http_error)
    for transient in TRANSIENT:
        ui.add_exception_handler(transient, _on_engine_db_outage)
    return ui
