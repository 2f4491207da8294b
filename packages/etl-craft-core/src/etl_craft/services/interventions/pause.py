"""`pause` and `resume`: one open AUD_PIPELINE_PAUSES row per paused pipeline (engine.records.pauses).

While a pipeline is paused no run of it starts and a run in progress starts no more tasks (its
running tasks finish, and the run stays IN-PROGRESS until it is resumed).
"""

from __future__ import annotations

from typing import Literal

from etl_craft.core.clock import utc_now
from etl_craft.core.errors import ExitCode, RunStateError
from etl_craft.engine import reads, transitions
from etl_craft.engine.reads import PauseRow, PipelineRow
from etl_craft.engine.records import pauses
from etl_craft.engine.records.actions import record_request
from etl_craft.services.context import OperationContext
from etl_craft.services.interventions.rules import local_only, required_reason
from etl_craft.services.views import OperationResult, RunView

Verb = Literal["pause", "resume"]


def _since(pause: PauseRow) -> str:
    return f"paused by {pause.paused_by} since {pause.paused_at:%Y-%m-%d %H:%M:%S}Z ({pause.reason})"


def _already_paused(pipeline: PipelineRow, pause: PauseRow | None) -> RunStateError:
    return RunStateError(
        f"pipeline {pipeline.pipeline_code}",
        found="it is already " + (_since(pause) if pause else "paused"),
        expected="a pipeline that is not paused",
        remedy=f"nothing to do; etl-craft resume --pipeline_code {pipeline.pipeline_code} --reason '...' resumes it",
    )


def _not_paused(pipeline: PipelineRow) -> RunStateError:
    return RunStateError(
        f"pipeline {pipeline.pipeline_code}",
        found="it is not paused",
        expected="a paused pipeline",
        remedy=f"nothing to do; etl-craft pause --pipeline_code {pipeline.pipeline_code} --reason '...' pauses it",
    )


def set_pause(ctx: OperationContext, verb: Verb, pipeline_code: str, reason: str) -> OperationResult:
    """`pause` and `resume`: open or close the pipeline's pause; refused when there's nothing to change."""
    local_only(ctx, verb)
    why = required_reason(reason, verb)
    now = utc_now()
    with ctx.db.write() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        before = reads.open_pause(conn, pipeline.pipeline_id)
        if verb == "pause":
            if not pauses.open_pause(conn, pipeline.pipeline_id, actor=ctx.actor, reason=why, now=now):
                raise _already_paused(pipeline, reads.open_pause(conn, pipeline.pipeline_id))
        elif not pauses.close_pause(conn, pipeline.pipeline_id, actor=ctx.actor, reason=why, now=now):
            raise _not_paused(pipeline)
        transitions.announce(conn, f"pipeline:{pipeline.pipeline_id}")
        unfinished = reads.unfinished_runs(conn, pipeline.pipeline_id)
    record_request(
        ctx.db, ctx.actor, verb, {"pipeline_code": pipeline_code, "reason": reason}, pipeline_id=pipeline.pipeline_id
    )
    code = pipeline.pipeline_code
    run_ids = ", ".join(str(r.pipeline_run_id) for r in unfinished)
    if verb == "pause":
        parts = [
            f"{code}: paused by {ctx.actor.name}: {why}",
            f"no run or task of it starts until etl-craft resume --pipeline_code {code}",
        ]
        if unfinished:
            parts.append(f"run(s) in progress ({run_ids}): their running tasks finish, then they wait")
    else:
        parts = [f"{code}: resumed by {ctx.actor.name}: {why}"]
        if before is not None:
            parts.append(f"it was {_since(before)}")
        if unfinished:
            parts.append(f"unfinished run(s) ({run_ids}): etl-craft run --pipeline_code {code} resumes them")
    run_view = RunView.of(unfinished[0], code) if len(unfinished) == 1 else None
    return OperationResult("SUCCESS", "; ".join(parts), int(ExitCode.SUCCESS), code, run_view)
