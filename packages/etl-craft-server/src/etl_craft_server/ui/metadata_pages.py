"""The UI's audit, lineage and metadata editor pages (the editor needs the developer role)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, PlainTextResponse, Response

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ApiRole
from etl_craft.core.text import CODE_LIMIT
from etl_craft.services.access.sessions import UiSession
from etl_craft_server.ui.auth import checked_form, signed_in
from etl_craft_server.ui.graphs import lineage_svg
from etl_craft_server.ui.pages import Code, Viewer, call, done
from etl_craft_server.ui.rendering import render

router = APIRouter()
Developer = Annotated[UiSession, Depends(signed_in(ApiRole.DEVELOPER))]
DeveloperForm = Annotated[UiSession, Depends(checked_form(ApiRole.DEVELOPER))]
AUDIT_DAYS = 7  # the audit page's default window: the trail is read since then, never all of it


@router.get("/audit", response_class=HTMLResponse)
def audit_page(
    request: Request,
    session: Viewer,
    pipeline: Annotated[str | None, Query(max_length=CODE_LIMIT)] = None,
    since: Annotated[str | None, Query(max_length=64)] = None,
    actor: Annotated[str | None, Query(max_length=128)] = None,
) -> Response:
    from etl_craft.services.inspect import audit, parse_since

    moment = parse_since(since) if since else utc_now() - timedelta(days=AUDIT_DAYS)
    trail = call(request, session, audit, pipeline or None, moment)
    who = (actor or "").strip()
    actions = [a for a in trail.actions if not who or a.actor == who]
    changes = [c for c in trail.metadata_changes if not who or c.actor == who]
    context = {"trail": trail, "actions": actions[::-1], "changes": changes[::-1], "actor": who, "since": moment}
    return render(request, "audit.html", context)


@router.get("/lineage", response_class=HTMLResponse)
def lineage_page(
    request: Request,
    session: Viewer,
    table: Annotated[str | None, Query(max_length=512)] = None,
    column: Annotated[str | None, Query(max_length=CODE_LIMIT)] = None,
    direction: Literal["both", "upstream", "downstream"] = "both",
    depth: Annotated[int, Query(ge=1, le=50)] = 3,
) -> Response:
    from etl_craft.services.targets.lineage import lineage

    found = call(
        request,
        session,
        lineage,
        table=table or None,
        column=(column or None) if table else None,
        upstream=direction == "upstream",
        downstream=direction == "downstream",
        depth=depth,
    )
    context = {"found": found, "direction": direction, "svg": lineage_svg(found)}
    return render(request, "lineage.html", context)


def _editor(request: Request, session: UiSession, pipeline_code: str, task_code: str) -> dict[str, object]:
    from etl_craft.services.inspect import pipeline_steps

    steps = call(request, session, pipeline_steps, pipeline_code)
    step = next((s for s in steps.steps if s.task_code == task_code), None)
    if step is None:
        from etl_craft.core.errors import UnknownCodeError

        raise UnknownCodeError(
            f"task {pipeline_code}.{task_code}",
            found="no active task with this code in the pipeline",
            remedy="open the task from its pipeline's page",
        )
    return {"steps": steps, "step": step, "result": None, "name": "", "value": ""}


@router.get("/pipelines/{pipeline_code}/tasks/{task_code}/parameters", response_class=HTMLResponse)
def parameters_form(
    request: Request,
    session: Developer,
    pipeline_code: Code,
    task_code: Code,
    done: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    context = _editor(request, session, pipeline_code, task_code)
    return render(request, "parameters.html", {**context, "done": done})


@router.post("/pipelines/{pipeline_code}/tasks/{task_code}/parameters", response_class=HTMLResponse)
def parameters_save(
    request: Request,
    session: DeveloperForm,
    pipeline_code: Code,
    task_code: Code,
    name: Annotated[str, Form(min_length=1, max_length=CODE_LIMIT)],
    value: Annotated[str, Form(max_length=64 * 1024)],
    confirm: Annotated[Literal["yes"], Form()],
) -> Response:
    from etl_craft.services.metadata_editor import ParameterEdit, set_task_parameter

    result = call(request, session, set_task_parameter, ParameterEdit(pipeline_code, task_code, name, value))
    if result.saved:
        return done(f"/ui/pipelines/{pipeline_code}/tasks/{task_code}/parameters", result.message)
    context = {**_editor(request, session, pipeline_code, task_code), "result": result, "name": name, "value": value}
    return render(request, "parameters.html", {**context, "done": None}, status=422)


@router.get("/pipelines/{pipeline_code}/tasks/{task_code}/parameters/{name}.sql")
def parameter_export(
    request: Request,
    session: Developer,
    pipeline_code: Code,
    task_code: Code,
    name: Annotated[str, Path(min_length=1, max_length=CODE_LIMIT, pattern=r"^[A-Z][A-Z0-9_]*$")],
) -> Response:
    """The parameter's saved value as a project migration file, to copy into migrations/."""
    from etl_craft.core.errors import UsageError
    from etl_craft.core.text import REDACTED
    from etl_craft.services.metadata_editor import ParameterEdit, migration_sql

    step = _editor(request, session, pipeline_code, task_code)["step"]
    value = step.parameters.get(name)  # type: ignore[attr-defined]
    if value is None or REDACTED in value:
        raise UsageError(
            f"parameter {pipeline_code}.{task_code}.{name}",
            found="no such parameter" if value is None else "a sensitive value (Redaction.Sensitive_patterns)",
            expected="a parameter the task has, whose value may be shown",
            remedy="write a sensitive value's migration by hand, naming a secret variable rather than the secret",
        )
    sql = migration_sql(ParameterEdit(pipeline_code, task_code, name, value), "UPDATE")
    filename = f"NNNN_{pipeline_code}_{task_code}_{name.lower()}.sql"
    return PlainTextResponse(sql, headers={"Content-Disposition": f'attachment; filename="{filename}"'})
