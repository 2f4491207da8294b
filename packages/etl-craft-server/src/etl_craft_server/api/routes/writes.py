"""The write endpoints: pause, resume, create, cancel and reopen runs, mark, rerun, backfill."""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from fastapi import Request
from fastapi.responses import JSONResponse

from etl_craft.core.enums import ApiRole
from etl_craft_server.api.bodies import BackfillBody, CreateRunBody, MarkBody, ReasonBody, RepairBody, RerunBody
from etl_craft_server.api.endpoints import Code, Operator, RunId, endpoint, respond


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
    "/pipelines/{pipeline_code}/runs/{run_id}/repair",
    ApiRole.OPERATOR,
    "operation",
    "run a run's tasks regardless of status and dependencies (etl-craft run --force)",
)
def repair(request: Request, bearer: Operator, pipeline_code: Code, run_id: RunId, body: RepairBody) -> JSONResponse:
    """An ended run (not CANCELLED) is reopened first and ends again from its tasks' statuses. Runs
    in the server's process and answers when the tasks have run."""
    from etl_craft.services.runs.execute import RunRequest, execute_run

    run = RunRequest(pipeline_code=pipeline_code, task_code=body.task_code, run_id=run_id, force=True)
    run.check()
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
