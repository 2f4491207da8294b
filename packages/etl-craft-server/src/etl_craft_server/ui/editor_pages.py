"""The metadata editor's structure pages (developers): pipeline settings, task dependencies added and retired."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Form, Path, Query, Request
from fastapi.responses import HTMLResponse, Response

from etl_craft.core.enums import DependencyType
from etl_craft.core.text import BIGINT_MAX, CODE_LIMIT
from etl_craft.services.access.sessions import UiSession
from etl_craft_server.ui.metadata_pages import Developer, DeveloperForm
from etl_craft_server.ui.pages import Code, call, done
from etl_craft_server.ui.rendering import render

router = APIRouter()
TaskCode = Annotated[str, Form(min_length=1, max_length=CODE_LIMIT)]


def _page(request: Request, session: UiSession, code: str, **extra: object) -> dict[str, object]:
    from etl_craft.services.dependency_editor import pipeline_dependencies

    found = call(request, session, pipeline_dependencies, code)
    base = {"found": found, "types": [d.value for d in DependencyType], "result": None, "done": None}
    return {**base, "form": {"task": "", "upstream": "", "type": "SUCCESS"}, **extra}


@router.get("/pipelines/{pipeline_code}/dependencies", response_class=HTMLResponse)
def dependencies_form(
    request: Request,
    session: Developer,
    pipeline_code: Code,
    done: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    return render(request, "dependencies.html", _page(request, session, pipeline_code, done=done))


@router.post("/pipelines/{pipeline_code}/dependencies", response_class=HTMLResponse)
def dependency_add(
    request: Request,
    session: DeveloperForm,
    pipeline_code: Code,
    task: TaskCode,
    upstream: TaskCode,
    dependency_type: Annotated[str, Form(max_length=16)],
    confirm: Annotated[Literal["yes"], Form()],
) -> Response:
    from etl_craft.services.dependency_editor import DependencyEdit, add_task_dependency

    edit = DependencyEdit(pipeline_code, task, upstream, dependency_type)
    result = call(request, session, add_task_dependency, edit)
    if result.saved:
        return done(f"/ui/pipelines/{pipeline_code}/dependencies", result.message)
    form = {"task": task, "upstream": upstream, "type": dependency_type}
    return render(request, "dependencies.html", _page(request, session, pipeline_code, result=result, form=form), 422)


@router.post("/pipelines/{pipeline_code}/dependencies/{dependency_id}/retire", response_class=HTMLResponse)
def dependency_retire(
    request: Request,
    session: DeveloperForm,
    pipeline_code: Code,
    dependency_id: Annotated[int, Path(ge=1, le=BIGINT_MAX)],
    confirm: Annotated[Literal["yes"], Form()],
) -> Response:
    from etl_craft.services.dependency_editor import DependencyEdit, retire_task_dependency

    result = call(request, session, retire_task_dependency, DependencyEdit(pipeline_code, dependency_id=dependency_id))
    if result.saved:
        return done(f"/ui/pipelines/{pipeline_code}/dependencies", result.message)
    return render(request, "dependencies.html", _page(request, session, pipeline_code, result=result), 422)


def _settings(request: Request, session: UiSession, code: str, **extra: object) -> dict[str, object]:
    from etl_craft.services.pipeline_editor import pipeline_settings

    return {"pipeline": call(request, session, pipeline_settings, code), "result": None, "done": None, **extra}


@router.get("/pipelines/{pipeline_code}/settings", response_class=HTMLResponse)
def settings_form(
    request: Request,
    session: Developer,
    pipeline_code: Code,
    done: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    return render(request, "settings.html", _settings(request, session, pipeline_code, done=done))


@router.post("/pipelines/{pipeline_code}/settings", response_class=HTMLResponse)
def settings_save(
    request: Request,
    session: DeveloperForm,
    pipeline_code: Code,
    pipeline_name: Annotated[str, Form(max_length=200)],
    confirm: Annotated[Literal["yes"], Form()],
    description: Annotated[str, Form(max_length=4000)] = "",
    run_schedule: Annotated[str, Form(max_length=200)] = "",
    schedule_timezone: Annotated[str, Form(max_length=64)] = "",
    sla_in_hours: Annotated[str, Form(max_length=32)] = "",
) -> Response:
    from etl_craft.services.pipeline_editor import PipelineSettings, edit_pipeline

    settings = PipelineSettings(pipeline_name, description, run_schedule, schedule_timezone, sla_in_hours)
    result = call(request, session, edit_pipeline, pipeline_code, settings)
    if result.saved:
        return done(f"/ui/pipelines/{pipeline_code}/settings", result.message)
    page = _settings(request, session, pipeline_code, result=result, typed=settings)
    return render(request, "settings.html", page, status=422)


def _rules(request: Request, session: UiSession, code: str, task: str, **extra: object) -> dict[str, object]:
    from etl_craft.services.rule_editor import RULE_TYPES, rules_of_task

    found = call(request, session, rules_of_task, code, task)
    blank = {"name": "", "sql": "", "rule_type": "REJECT", "key_column": "", "target_table": "", "sequence_number": 1}
    return {"found": found, "types": RULE_TYPES, "result": None, "done": None, "draft": blank, **extra}


@router.get("/pipelines/{pipeline_code}/tasks/{task_code}/rules", response_class=HTMLResponse)
def rules_form(
    request: Request,
    session: Developer,
    pipeline_code: Code,
    task_code: Code,
    done: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    return render(request, "rules.html", _rules(request, session, pipeline_code, task_code, done=done))


@router.post("/pipelines/{pipeline_code}/tasks/{task_code}/rules", response_class=HTMLResponse)
def rule_add(
    request: Request,
    session: DeveloperForm,
    pipeline_code: Code,
    task_code: Code,
    name: TaskCode,
    sql: Annotated[str, Form(min_length=1, max_length=64 * 1024)],
    rule_type: Annotated[str, Form(max_length=16)],
    key_column: TaskCode,
    target_table: Annotated[str, Form(min_length=1, max_length=512)],
    sequence_number: Annotated[int, Form(ge=0, le=BIGINT_MAX)],
    confirm: Annotated[Literal["yes"], Form()],
) -> Response:
    from etl_craft.services.rule_editor import RuleDraft, add_business_rule

    draft = RuleDraft(name, sql, rule_type, key_column, target_table, sequence_number)
    result = call(request, session, add_business_rule, pipeline_code, task_code, draft)
    if result.saved:
        return done(f"/ui/pipelines/{pipeline_code}/tasks/{task_code}/rules", result.message)
    page = _rules(request, session, pipeline_code, task_code, result=result, draft=draft.__dict__)
    return render(request, "rules.html", page, status=422)


@router.post("/pipelines/{pipeline_code}/tasks/{task_code}/rules/{rule_id}/retire", response_class=HTMLResponse)
def rule_retire(
    request: Request,
    session: DeveloperForm,
    pipeline_code: Code,
    task_code: Code,
    rule_id: Annotated[int, Path(ge=1, le=BIGINT_MAX)],
    confirm: Annotated[Literal["yes"], Form()],
) -> Response:
    from etl_craft.services.rule_editor import retire_business_rule

    result = call(request, session, retire_business_rule, pipeline_code, task_code, rule_id)
    if result.saved:
        return done(f"/ui/pipelines/{pipeline_code}/tasks/{task_code}/rules", result.message)
    return render(request, "rules.html", _rules(request, session, pipeline_code, task_code, result=result), 422)


def _tasks(request: Request, session: UiSession, code: str, **extra: object) -> dict[str, object]:
    from etl_craft.core.enums import Handler
    from etl_craft.services.inspect import pipeline_steps
    from etl_craft.services.task_editor import TASK_TYPES

    steps = call(request, session, pipeline_steps, code)
    choices = {"types": TASK_TYPES, "handlers": [h.value for h in Handler]}
    draft = {"code": "", "task_type": "ETL", "handler": "PYTHON", "parameters": ""}
    return {"steps": steps, **choices, "result": None, "done": None, "draft": draft, **extra}


@router.get("/pipelines/{pipeline_code}/tasks", response_class=HTMLResponse)
def tasks_form(
    request: Request,
    session: Developer,
    pipeline_code: Code,
    done: Annotated[str | None, Query(max_length=500)] = None,
) -> Response:
    return render(request, "tasks.html", _tasks(request, session, pipeline_code, done=done))


@router.post("/pipelines/{pipeline_code}/tasks", response_class=HTMLResponse)
def task_add(
    request: Request,
    session: DeveloperForm,
    pipeline_code: Code,
    code: TaskCode,
    task_type: Annotated[str, Form(max_length=16)],
    handler: Annotated[str, Form(max_length=16)],
    confirm: Annotated[Literal["yes"], Form()],
    parameters: Annotated[str, Form(max_length=64 * 1024)] = "",
) -> Response:
    from etl_craft.services.task_editor import TaskDraft, add_pipeline_task

    draft = TaskDraft.from_form(code, task_type, handler, parameters)
    result = call(request, session, add_pipeline_task, pipeline_code, draft)
    if result.saved:
        return done(f"/ui/pipelines/{pipeline_code}/tasks", result.message)
    typed = {"code": code, "task_type": task_type, "handler": handler, "parameters": parameters}
    return render(request, "tasks.html", _tasks(request, session, pipeline_code, result=result, draft=typed), 422)


@router.post("/pipelines/{pipeline_code}/tasks/{task_code}/retire", response_class=HTMLResponse)
def task_retire(
    request: Request,
    session: DeveloperForm,
    pipeline_code: Code,
    task_code: Code,
    confirm: Annotated[Literal["yes"], Form()],
) -> Response:
    from etl_craft.services.task_editor import retire_pipeline_task

    result = call(request, session, retire_pipeline_task, pipeline_code, task_code)
    if result.saved:
        return done(f"/ui/pipelines/{pipeline_code}/tasks", result.message)
    return render(request, "tasks.html", _tasks(request, session, pipeline_code, result=result), 422)


@router.get("/metadata/pipelines", response_class=HTMLResponse)
def pipeline_new_form(request: Request, session: Developer) -> Response:
    from etl_craft.services.pipeline_editor import PipelineSettings

    blank = {**PipelineSettings("").__dict__, "pipeline_code": "", "refresh_type": "INCREMENTAL"}
    return render(request, "pipeline_new.html", {"typed": blank, "result": None, "done": None})


@router.post("/metadata/pipelines", response_class=HTMLResponse)
def pipeline_create(
    request: Request,
    session: DeveloperForm,
    pipeline_code: TaskCode,
    pipeline_name: Annotated[str, Form(max_length=200)],
    refresh_type: Annotated[str, Form(max_length=16)],
    confirm: Annotated[Literal["yes"], Form()],
    description: Annotated[str, Form(max_length=4000)] = "",
    run_schedule: Annotated[str, Form(max_length=200)] = "",
    schedule_timezone: Annotated[str, Form(max_length=64)] = "",
    sla_in_hours: Annotated[str, Form(max_length=32)] = "",
) -> Response:
    from etl_craft.services.pipeline_editor import PipelineSettings, create_pipeline

    settings = PipelineSettings(pipeline_name, description, run_schedule, schedule_timezone, sla_in_hours)
    result = call(request, session, create_pipeline, pipeline_code, refresh_type, settings)
    if result.saved:
        return done(f"/ui/pipelines/{pipeline_code}/tasks", result.message)
    typed = {**settings.__dict__, "pipeline_code": pipeline_code, "refresh_type": refresh_type}
    return render(request, "pipeline_new.html", {"typed": typed, "result": result, "done": None}, status=422)
