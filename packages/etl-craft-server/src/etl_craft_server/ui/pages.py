"""The UI's pages. Each calls the same service operations as API v1 (never SQL of its own) and
renders their views; every action is a form post checked by auth.checked_form (role and CSRF),
confirmed by a required checkbox, and done as the signed-in user."""

from __future__ import annotations

from typing import Annotated, Any, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from etl_craft.core.actor import acting_as
from etl_craft.core.enums import ApiRole
from etl_craft.core.text import BIGINT_MAX, CODE_LIMIT, OPERATOR_TEXT_LIMIT
from etl_craft.services.access.sessions import UiSession
from etl_craft.services.context import OperationContext
from etl_craft_server.ui.auth import checked_form, signed_in
from etl_craft_server.ui.graphs import pipeline_svg
from etl_craft_server.ui.rendering import render

router = APIRouter()
Viewer = Annotated[UiSession, Depends(signed_in(ApiRole.VIEWER))]
OperatorForm = Annotated[UiSession, Depends(checked_form(ApiRole.OPERATOR))]
Code = Annotated[str, Path(min_length=1, max_length=CODE_LIMIT, pattern=r"^[A-Za-z][A-Za-z0-9_]*$")]
RunId = Annotated[int, Path(ge=1, le=BIGINT_MAX)]
Reason = Annotated[str, Form(min_length=1, max_length=OPERATOR_TEXT_LIMIT)]
Confirmed = Annotated[Literal["yes"], Form()]  # the required checkbox of every action
Choice = Annotated[str | None, Query(max_length=16)]


def context_of(request: Request, session: UiSession) -> OperationContext:
    state = request.app.state.api
    return OperationContext(config=state.config, db=state.db, actor=session.caller.actor)


def call(request: Request, session: UiSession, operation: Any, *args: Any, **kwargs: Any) -> Any:
    """One service operation as the signed-in user."""
    with acting_as(session.caller.actor):
        return operation(context_of(request, session), *args, **kwargs)


def done(path: str, message: str) -> Response:
    """Back to the page the action was on, which shows what happened."""
    return RedirectResponse(f"{path}?{urlencode({'done': message})}", status_code=303)


def _blank(value: str | None) -> str | None:
    return value or None  # an empty filter field means no filter


@router.get("/")
def home() -> Response:
    return RedirectResponse("/ui/pipelines", status_code=303)


# --- pipelines -----------------------------------------------------------------------------------


@router.get("/pipelines", response_class=HTMLResponse)
def pipelines(
    request: Request,
    session: Viewer,
    text: Annotated[str | None, Query(max_length=CODE_LIMIT)] = None,
    status: Choice = None,
    done: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    from etl_craft.services.inspect.grid import RUN_STATUSES, pipelines_overview

    overview = call(request, session, pipelines_overview, _blank(text), _blank(status))
    statuses = (*RUN_STATUSES, "NONE")
    return render(request, "pipelines.html", {"overview": overview, "statuses": statuses, "done": done})


def _pause(verb: Literal["pause", "resume"]) -> Any:
    def change(
        request: Request, session: OperatorForm, pipeline_code: Code, reason: Reason, confirm: Confirmed
    ) -> Response:
        from etl_craft.services.interventions.pause import set_pause

        result = call(request, session, set_pause, verb, pipeline_code, reason)
        return done("/ui/pipelines", result.message)

    change.__name__ = f"{verb}_pipeline"
    return change


router.post("/pipelines/{pipeline_code}/pause")(_pause("pause"))
router.post("/pipelines/{pipeline_code}/resume")(_pause("resume"))


# --- a pipeline ----------------------------------------------------------------------------------


def _grid(request: Request, session: UiSession, code: str, runs: int, kind: str | None, status: str | None) -> Any:
    from etl_craft.services.inspect.grid import run_grid

    return call(request, session, run_grid, code, limit=runs, trigger_kind=_blank(kind), status=_blank(status))


RunsShown = Annotated[int, Query(ge=1, le=100)]


@router.get("/pipelines/{pipeline_code}", response_class=HTMLResponse)
def pipeline(
    request: Request,
    session: Viewer,
    pipeline_code: Code,
    runs: RunsShown = 25,
    kind: Choice = None,
    status: Choice = None,
    run: Annotated[int | None, Query(ge=1, le=BIGINT_MAX)] = None,
    done: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    from etl_craft.services.inspect import pipeline_graph
    from etl_craft.services.inspect.grid import RUN_KINDS, RUN_STATUSES

    graph = call(request, session, pipeline_graph, pipeline_code)
    grid = _grid(request, session, pipeline_code, runs, kind, status)
    selected = next((r for r in grid.runs if r.run.pipeline_run_id == run), grid.runs[0] if grid.runs else None)
    context = {
        "graph": graph,
        "grid": grid,
        "selected": selected,
        "svg": pipeline_svg(graph, selected),
        "kinds": RUN_KINDS,
        "statuses": RUN_STATUSES,
        "grid_url": f"/ui/pipelines/{pipeline_code}/grid?"
        + urlencode({"runs": runs, "kind": kind or "", "status": status or ""}),
        "done": done,
    }
    return render(request, "pipeline.html", context)


@router.get("/pipelines/{pipeline_code}/grid", response_class=HTMLResponse)
def pipeline_grid(
    request: Request,
    session: Viewer,
    pipeline_code: Code,
    runs: RunsShown = 25,
    kind: Choice = None,
    status: Choice = None,
) -> Response:
    """The grid alone: what the page's script fetches to refresh it without a reload."""
    grid = _grid(request, session, pipeline_code, runs, kind, status)
    return render(request, "_grid.html", {"grid": grid})


@router.post("/pipelines/{pipeline_code}/runs")
def create_run(request: Request, session: OperatorForm, pipeline_code: Code, confirm: Confirmed) -> Response:
    """A run left IN-PROGRESS for the overseer, as the API's POST .../runs."""
    from etl_craft.services.runs.execute import RunRequest, execute_run

    result = call(request, session, execute_run, RunRequest(pipeline_code=pipeline_code, init_only=True))
    return done(f"/ui/pipelines/{pipeline_code}", result.message)


@router.post("/pipelines/{pipeline_code}/backfills")
def backfill(
    request: Request,
    session: OperatorForm,
    pipeline_code: Code,
    first: Annotated[str, Form(max_length=10)],
    last: Annotated[str, Form(max_length=10)],
    reason: Reason,
    confirm: Confirmed,
) -> Response:
    from etl_craft.services.runs.backfills import execute_backfill
    from etl_craft.services.runs.execute import RunRequest

    run = RunRequest(pipeline_code=pipeline_code, backfill=f"{first}:{last}", reason=reason)
    run.check()
    result = call(request, session, execute_backfill, run, lambda _line: None)
    return done(f"/ui/pipelines/{pipeline_code}", getattr(result, "message", "backfill done"))


# --- a run ---------------------------------------------------------------------------------------


@router.get("/pipelines/{pipeline_code}/runs/{run_id}", response_class=HTMLResponse)
def run_page(
    request: Request,
    session: Viewer,
    pipeline_code: Code,
    run_id: RunId,
    task: Annotated[str | None, Query(max_length=CODE_LIMIT)] = None,
    done: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    from etl_craft.services.inspect import run_status
    from etl_craft.services.inspect.explain import explain_task
    from etl_craft.services.runs.selection import RunSelector

    status = call(request, session, run_status, pipeline_code, RunSelector(run_id, None))
    explained = call(request, session, explain_task, pipeline_code, task, RunSelector(run_id, None)) if task else None
    context = {"status": status, "explained": explained, "task": task, "done": done}
    return render(request, "run.html", context)


def _run_path(pipeline_code: str, run_id: int) -> str:
    return f"/ui/pipelines/{pipeline_code}/runs/{run_id}"


def _control(verb: Literal["cancel", "reopen"]) -> Any:
    def change(
        request: Request, session: OperatorForm, pipeline_code: Code, run_id: RunId, reason: Reason, confirm: Confirmed
    ) -> Response:
        from etl_craft.services.interventions import cancel_reopen

        operation = cancel_reopen.cancel if verb == "cancel" else cancel_reopen.reopen
        result = call(request, session, operation, cancel_reopen.RunControlRequest(pipeline_code, reason, run_id, None))
        return done(_run_path(pipeline_code, run_id), result.message)

    change.__name__ = f"{verb}_run"
    return change


router.post("/pipelines/{pipeline_code}/runs/{run_id}/cancel")(_control("cancel"))
router.post("/pipelines/{pipeline_code}/runs/{run_id}/reopen")(_control("reopen"))


@router.post("/pipelines/{pipeline_code}/runs/{run_id}/tasks/{task_code}/rerun")
def rerun(
    request: Request,
    session: OperatorForm,
    pipeline_code: Code,
    run_id: RunId,
    task_code: Code,
    reason: Reason,
    confirm: Confirmed,
    with_downstream: Annotated[Literal["yes"] | None, Form()] = None,
) -> Response:
    from etl_craft.services.runs.execute import RunRequest, execute_run

    run = RunRequest(
        pipeline_code=pipeline_code,
        task_code=task_code,
        run_id=run_id,
        rerun=True,
        with_downstream=with_downstream == "yes",
        reason=reason,
    )
    result = call(request, session, execute_run, run)
    return done(_run_path(pipeline_code, run_id), result.message)


@router.post("/pipelines/{pipeline_code}/runs/{run_id}/mark")
def mark(
    request: Request,
    session: OperatorForm,
    pipeline_code: Code,
    run_id: RunId,
    status: Annotated[Literal["SUCCESS", "FAILED", "SKIPPED"], Form()],
    reason: Reason,
    confirm: Confirmed,
    task_code: Annotated[str | None, Form(max_length=CODE_LIMIT)] = None,
) -> Response:
    from etl_craft.services.interventions.marks import MarkRequest, mark

    marking = MarkRequest(
        pipeline_code=pipeline_code, status=status, reason=reason, task_code=_blank(task_code), run_id=run_id
    )
    marking.check()
    result = call(request, session, mark, marking)
    return done(_run_path(pipeline_code, run_id), result.message)


# --- an attempt ----------------------------------------------------------------------------------

AttemptId = Annotated[int, Path(ge=1, le=BIGINT_MAX)]
Offset = Annotated[int, Query(ge=0, le=BIGINT_MAX)]


@router.get("/attempts/{attempt_id}", response_class=HTMLResponse)
def attempt_page(request: Request, session: Viewer, attempt_id: AttemptId) -> Response:
    from etl_craft.services.inspect.attempts import attempt_detail, attempt_log

    detail = call(request, session, attempt_detail, attempt_id)
    log = call(request, session, attempt_log, attempt_id)
    return render(request, "attempt.html", {"detail": detail, "log": log})


@router.get("/attempts/{attempt_id}/log")
def attempt_log_chunk(request: Request, session: Viewer, attempt_id: AttemptId, offset: Offset = 0) -> Response:
    """What the page's script appends while it follows a running attempt (the API's log reader)."""
    from etl_craft.services.inspect.attempts import attempt_detail, attempt_log

    log = call(request, session, attempt_log, attempt_id, offset)
    status = call(request, session, attempt_detail, attempt_id).attempt.status
    finished = log.attempt_ended and log.next_offset >= log.size
    body = {"text": log.text, "next_offset": log.next_offset, "finished": finished, "status": status}
    return JSONResponse(body, headers={"Cache-Control": "no-store"})
