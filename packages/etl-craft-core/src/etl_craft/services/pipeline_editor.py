"""The web UI's pipeline settings form: name, description, schedule, time zone and SLA of a pipeline.

The change goes through the metadata editor's trial (`judged_write`): validate judges the pipeline
with it in a rolled-back transaction (a bad cron expression, time zone or SLA is refused with its
messages), and only a change with no failure is written, recorded in AUD_METADATA_CHANGES and
AUD_ACTIONS (`metadata edit`) with the user as actor. An empty field means NULL (no schedule, no
time zone of its own, no SLA), as in CFG_PIPELINES.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from decimal import Decimal, InvalidOperation

from etl_craft.core.errors import NameTakenError, UsageError
from etl_craft.engine import reads
from etl_craft.engine.records.actions import record_request
from etl_craft.engine.records.pipeline_settings import update_pipeline
from etl_craft.services.context import OperationContext
from etl_craft.services.metadata_editor import judged_write
from etl_craft.services.validate import ValidationReport


@dataclass(frozen=True)
class PipelineSettings:
    pipeline_name: str
    description: str = ""
    run_schedule: str = ""
    schedule_timezone: str = ""
    sla_in_hours: str = ""

    def columns(self, pipeline_code: str) -> dict[str, object]:
        """The CFG_PIPELINES values (empty text is NULL); refuses a blank name or an SLA that is no number."""
        if not self.pipeline_name.strip():
            raise UsageError(
                f"the name of pipeline {pipeline_code}",
                found="an empty name",
                expected="a PIPELINE_NAME people read on the pages",
                remedy="type a name",
            )
        try:
            sla = Decimal(self.sla_in_hours.strip()) if self.sla_in_hours.strip() else None
        except InvalidOperation:
            raise UsageError(
                f"SLA_IN_HOURS of pipeline {pipeline_code}",
                found=repr(self.sla_in_hours[:32]),
                expected="a number of hours such as 2 or 1.5, or empty for no SLA",
                remedy="type a number",
            ) from None
        values: dict[str, object] = {k: (v.strip() or None) for k, v in asdict(self).items()}
        return {**values, "pipeline_name": self.pipeline_name.strip(), "sla_in_hours": sla}


@dataclass(frozen=True)
class PipelineEditResult:
    pipeline_code: str
    saved: bool
    report: ValidationReport
    created: bool = False

    @property
    def message(self) -> str:
        what = "created" if self.created else "settings saved"
        if self.saved:
            return f"{self.pipeline_code} {what}; {self.report.summary}"
        return f"{self.pipeline_code} not saved: validate refused it ({self.report.summary})"


def pipeline_settings(ctx: OperationContext, pipeline_code: str) -> reads.PipelineRow:
    with ctx.db.read() as conn:
        return reads.find_pipeline(conn, pipeline_code)


def edit_pipeline(ctx: OperationContext, pipeline_code: str, settings: PipelineSettings) -> PipelineEditResult:
    """Judge the new settings in a rolled-back transaction; write them only when validate finds no failure."""
    values = settings.columns(pipeline_code)
    pipeline_id = pipeline_settings(ctx, pipeline_code).pipeline_id
    _, report, saved = judged_write(ctx, pipeline_code, lambda conn: update_pipeline(conn, pipeline_id, values))
    if saved:
        arguments = {"pipeline_code": pipeline_code, "columns": sorted(c.upper() for c in values)}
        record_request(ctx.db, ctx.actor, "metadata edit", arguments, pipeline_id=pipeline_id)
    return PipelineEditResult(pipeline_code, saved, report)


REFRESH_TYPES = ("FULL", "INCREMENTAL")


def create_pipeline(
    ctx: OperationContext, pipeline_code: str, refresh_type: str, settings: PipelineSettings
) -> PipelineEditResult:
    """A new pipeline (its tasks are added on its tasks page), judged by validate like every edit."""
    from etl_craft.engine.records.pipeline_settings import add_pipeline
    from etl_craft.services.task_editor import TASK_CODE

    if not TASK_CODE.fullmatch(pipeline_code) or refresh_type not in REFRESH_TYPES:
        bad_code = not TASK_CODE.fullmatch(pipeline_code)
        raise UsageError(
            "the new pipeline's " + ("code" if bad_code else "refresh type"),
            found=repr((pipeline_code if bad_code else refresh_type)[:64]),
            expected="a letter, then letters, digits and _" if bad_code else ", ".join(REFRESH_TYPES),
            remedy="correct the " + ("code" if bad_code else "refresh type"),
        )
    with ctx.db.read() as conn:
        taken = pipeline_code in {p.pipeline_code for p in reads.pipelines(conn)}
    if taken:
        raise NameTakenError(
            f"pipeline {pipeline_code}",
            found="an active pipeline with this code",
            expected="a code no active pipeline has",
            remedy="pick another code, or edit the pipeline's settings",
        )
    values = {**settings.columns(pipeline_code), "pipeline_code": pipeline_code, "refresh_type": refresh_type}
    added, report, saved = judged_write(ctx, pipeline_code, lambda conn: add_pipeline(conn, values))
    if saved:
        arguments = {"pipeline_code": pipeline_code, "created": True}
        record_request(ctx.db, ctx.actor, "metadata edit", arguments, pipeline_id=added)
    return PipelineEditResult(pipeline_code, saved, report, created=True)
