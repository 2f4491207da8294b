"""`history` and `audit`: past runs with their interventions, and the audit trail of requests and
metadata changes. Read-only; every read is bounded (a limit, a run, a pipeline or a time)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from etl_craft.core.errors import UnknownCodeError, UsageError
from etl_craft.core.sensitive import SensitiveNames
from etl_craft.core.text import REDACTED, did_you_mean
from etl_craft.engine import reads
from etl_craft.engine.reads import PipelineRow, TaskRunRow
from etl_craft.engine.reads import audit as audit_trail
from etl_craft.engine.reads.audit import ActionRow, InterventionRow, MetadataChangeRow
from etl_craft.services.context import OperationContext
from etl_craft.services.inspect.pipelines import NO_RUN_NAMED
from etl_craft.services.runs.selection import RunSelector, required_run
from etl_craft.services.views import PipelineView, RunView, TaskRunView

DEFAULT_LIMIT = 20


@dataclass(frozen=True)
class InterventionView:
    intervention_id: int
    pipeline_run_id: int
    task_id: int | None  # None: the intervention was on the run itself
    task_code: str | None
    action: str
    from_status: str | None
    to_status: str | None  # None for RESET (the task went back to not run)
    target_count: int | None
    previous_message: str | None
    reason: str
    requested_by: str
    requested_by_kind: str | None
    requested_at: datetime

    @classmethod
    def of(cls, row: InterventionRow) -> InterventionView:
        return cls(**{f.name: getattr(row, f.name) for f in dataclasses.fields(row)})  # asdict deep-copies


@dataclass(frozen=True)
class HistoryView:
    pipeline: PipelineView
    task_code: str | None
    limit: int | None  # None: every run (--all) or one named run
    before: int | None  # runs with a smaller id only (the next page), or None
    runs: tuple[RunView, ...]  # newest first
    task_runs: tuple[TaskRunView, ...]  # with a task: its row under each listed run, NOT RUN when it has none
    interventions: tuple[InterventionView, ...]  # in the listed runs, newest first


def _task_id(conn: sa.Connection, pipeline: PipelineRow, task_code: str) -> int:
    tasks = reads.pipeline_tasks(conn, pipeline.pipeline_id)
    task = next((t for t in tasks if t.task_code == task_code), None)
    if task is None:
        raise UnknownCodeError(
            f"task {pipeline.pipeline_code}.{task_code}",
            found="no active task with this code in the pipeline",
            expected="the code of an active task of the pipeline",
            remedy=f"see etl-craft steps --pipeline_code {pipeline.pipeline_code}"
            + did_you_mean(task_code, [t.task_code for t in tasks]),
        )
    return task.task_id


def run_history(
    ctx: OperationContext,
    pipeline_code: str,
    *,
    task_code: str | None = None,
    limit: int | None = DEFAULT_LIMIT,
    selector: RunSelector = NO_RUN_NAMED,
    before: int | None = None,
) -> HistoryView:
    """The newest `limit` runs (all with None, or the one the selector names), optionally one task's
    row in each, and the interventions in those runs. `before` pages: only runs with a smaller id."""
    if limit is not None and limit < 1:
        raise UsageError(
            "--limit",
            found=str(limit),
            expected="a whole number of at least 1",
            remedy="give a limit of 1 or more, or use --all for every run",
        )
    task_rows: dict[int, TaskRunRow] = {}
    # A plain read, not a snapshot: every statement is bounded by the page's run ids, so a write
    # between them can at worst show an intervention a moment newer than its run's row, and the
    # listing (the API's most frequent request) saves the round trips of setting and resetting an
    # isolation level and of BEGIN and COMMIT on PostgreSQL.
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        task_id = _task_id(conn, pipeline, task_code) if task_code is not None else None
        if selector.explicit:
            limit = None
            runs = [required_run(conn, pipeline, selector)]
            run_id = runs[0].pipeline_run_id
            interventions = audit_trail.interventions(conn, pipeline.pipeline_id, run_id=run_id, task_id=task_id)
            if task_id is not None and (row := reads.task_runs_of(conn, run_id).get(task_id)) is not None:
                task_rows = {run_id: row}
        elif runs := reads.recent_runs(conn, pipeline.pipeline_id, limit, before):
            # Interventions and task rows are read for the page's run ids only, so a deep page
            # (`before`) reads no more than the first one.
            oldest, newest = runs[-1].pipeline_run_id, runs[0].pipeline_run_id
            interventions = audit_trail.interventions(
                conn, pipeline.pipeline_id, from_run_id=oldest, to_run_id=newest, task_id=task_id
            )
            if task_id is not None:
                task_rows = reads.task_runs_of_task(conn, task_id, oldest, newest)
        else:
            interventions = []
    task_runs: tuple[TaskRunView, ...] = ()
    if task_id is not None and task_code is not None:
        task_runs = tuple(
            dataclasses.replace(
                TaskRunView.of(task_id, task_code, task_rows.get(r.pipeline_run_id)), pipeline_run_id=r.pipeline_run_id
            )
            for r in runs
        )
    return HistoryView(
        pipeline=PipelineView.of(pipeline),
        task_code=task_code,
        limit=limit,
        before=before,
        runs=tuple(RunView.of(r, pipeline.pipeline_code) for r in runs),
        task_runs=task_runs,
        interventions=tuple(InterventionView.of(i) for i in interventions),
    )


# --- audit -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ActionView:
    action_id: int
    at: datetime
    actor: str
    actor_kind: str
    host: str
    command: str
    arguments: Any  # the JSON object recorded, sensitive values masked
    pipeline_id: int | None
    pipeline_run_id: int | None
    task_id: int | None
    outcome: str
    exit_code: int | None

    @classmethod
    def of(cls, row: ActionRow) -> ActionView:
        return cls(
            row.action_id,
            row.started_at,
            row.actor,
            row.actor_kind,
            row.host,
            row.command,
            row.arguments,
            row.pipeline_id,
            row.pipeline_run_id,
            row.task_id,
            row.outcome,
            row.exit_code,
        )


@dataclass(frozen=True)
class MetadataChangeView:
    change_id: int
    at: datetime
    actor: str
    actor_kind: str
    table_name: str
    row_key: str
    operation: str
    before: Any  # the row before the change (None for INSERT), column names upper case
    after: Any  # the row after it (None for DELETE)
    migration: str | None  # the project migration that made it, if one did

    @classmethod
    def of(cls, row: MetadataChangeRow, handlers: Mapping[int, str], names: SensitiveNames) -> MetadataChangeView:
        """The change as shown: a sensitive task parameter's value (S7.C) is ***, before and after."""
        before, after = row.before_json, row.after_json
        if row.table_name == "CFG_TASK_PARAMETERS":
            before, after = _shown_parameter(before, handlers, names), _shown_parameter(after, handlers, names)
            hidden_change = _value(row.before_json) != _value(row.after_json) and _value(before) == _value(after)
            if hidden_change and None not in (_value(row.before_json), _value(row.after_json)):
                after = {**after, "PARAMETER_VALUE": f"{REDACTED} (changed)"}  # the change stays visible
        return cls(
            row.change_id,
            row.changed_at,
            row.actor,
            row.actor_kind,
            row.table_name,
            row.row_key,
            row.operation,
            before,
            after,
            row.migration,
        )


def _value(image: Any) -> Any:
    return image.get("PARAMETER_VALUE") if isinstance(image, dict) else None


def _shown_parameter(image: Any, handlers: Mapping[int, str], names: SensitiveNames) -> Any:
    """A CFG_TASK_PARAMETERS row image with its value hidden as `steps` hides it."""
    if not isinstance(image, dict) or image.get("PARAMETER_VALUE") is None:
        return image
    task_id = image.get("TASK_ID")
    handler = handlers.get(task_id, "") if isinstance(task_id, int) else ""
    name = str(image.get("PARAMETER_NAME"))
    return {**image, "PARAMETER_VALUE": names.shown(handler, {name: image["PARAMETER_VALUE"]})[name]}


@dataclass(frozen=True)
class AuditView:
    pipeline_code: str | None
    since: datetime | None
    actions: tuple[ActionView, ...]  # oldest first
    metadata_changes: tuple[MetadataChangeView, ...]  # oldest first


def parse_since(text: str) -> datetime:
    """An ISO 8601 date (midnight) or timestamp; without an offset it is UTC."""
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            "--since",
            found=repr(text),
            expected="an ISO 8601 date or timestamp, such as 2026-01-31 or 2026-01-31T06:00:00+01:00",
        ) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def audit(ctx: OperationContext, pipeline_code: str | None = None, since: datetime | None = None) -> AuditView:
    """Command requests (AUD_ACTIONS), then CFG_ row changes (AUD_METADATA_CHANGES), oldest first."""
    with ctx.db.snapshot() as conn:
        pipeline_id = reads.find_pipeline(conn, pipeline_code).pipeline_id if pipeline_code is not None else None
        actions = audit_trail.actions(conn, pipeline_id=pipeline_id, since=since)
        changes = audit_trail.metadata_changes(conn, pipeline_id=pipeline_id, since=since)
        handlers = audit_trail.task_handlers(conn, _parameter_tasks(changes))
    names = ctx.config.redaction
    return AuditView(
        pipeline_code=pipeline_code,
        since=since,
        actions=tuple(ActionView.of(a) for a in actions),
        metadata_changes=tuple(MetadataChangeView.of(c, handlers, names) for c in changes),
    )


def _parameter_tasks(changes: list[MetadataChangeRow]) -> set[int]:
    """The tasks whose parameters the changes touch (their handlers decide what is hidden)."""
    found = set()
    for change in changes:
        if change.table_name == "CFG_TASK_PARAMETERS":
            for image in (change.before_json, change.after_json):
                if isinstance(image, dict) and isinstance(image.get("TASK_ID"), int):
                    found.add(image["TASK_ID"])
    return found
