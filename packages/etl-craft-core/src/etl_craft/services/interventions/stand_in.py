"""`mark --new-run`: a stand-in run for work that was done elsewhere (S2.A.1, issue: stand-in runs).

The run is recorded already ended, with the status given (TRIGGER_KIND STAND_IN, RUN_KEY
`stand-in:<uuid>`) and a NEW_RUN intervention naming who recorded it and why; with --task_code the
task gets a row too (with --rows for HAS_DATA dependents). Downstream gates judge it like any other
finished run. It is refused while a run of the pipeline is unfinished.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import InterventionAction, RunStatus, TriggerKind
from etl_craft.core.errors import RunStateError
from etl_craft.engine import locks, reads, transitions
from etl_craft.engine.records.actions import record_request
from etl_craft.execution.gates.admission import admit_lock
from etl_craft.execution.graph import load_graph
from etl_craft.services.context import OperationContext
from etl_craft.services.interventions.rules import operation_result, summary, task_node
from etl_craft.services.runs.request import project_today
from etl_craft.services.views import OperationResult

if TYPE_CHECKING:
    from etl_craft.services.interventions.marks import MarkRequest


def record_stand_in(ctx: OperationContext, request: MarkRequest) -> OperationResult:
    now = utc_now()
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, request.pipeline_code)
        node = task_node(load_graph(conn, pipeline), request.task_code) if request.task_code else None
    with locks.hold(ctx.db, admit_lock(pipeline.pipeline_id), timeout=60.0), ctx.db.write() as conn:
        unfinished = reads.unfinished_runs(conn, pipeline.pipeline_id)
        if unfinished:
            run = unfinished[0]
            raise RunStateError(
                f"pipeline {pipeline.pipeline_code}",
                found=f"run {run.pipeline_run_id} ({run.run_key}, {run.status}) is unfinished",
                expected="no unfinished run when a stand-in run is recorded",
                remedy="mark or finish that run instead",
            )
        run_id = transitions.create_run(
            conn,
            pipeline_id=pipeline.pipeline_id,
            status=RunStatus(request.status),
            trigger_kind=TriggerKind.STAND_IN,
            actor=ctx.actor,
            now=now,
            run_key=f"stand-in:{uuid.uuid4()}",
            run_date=project_today(ctx),
        )
        if node is not None:
            transitions.mark_task(
                conn,
                pipeline_run_id=run_id,
                task_id=node.task_id,
                status=request.status,
                actor=ctx.actor,
                reason=request.reason,
                now=now,
                rows=request.rows,
            )
        transitions.record_intervention(
            conn,
            run_id=run_id,
            action=InterventionAction.NEW_RUN,
            actor=ctx.actor,
            reason=request.reason,
            now=now,
            to_status=request.status,
            target_count=request.rows,
        )
    record_request(
        ctx.db, ctx.actor, "mark", request.arguments(), pipeline_id=pipeline.pipeline_id, pipeline_run_id=run_id
    )
    message = summary(pipeline.pipeline_code, run_id, request.status, f"stand-in run recorded by {ctx.actor.name}")
    return operation_result(ctx, pipeline, message, run_id, node)
