"""The web UI's task editor: a task added to a pipeline (with its first parameters) or retired.

Each change goes through the metadata editor's trial (`judged_write`), so validate judges the
pipeline with it in a rolled-back transaction: a task without the parameters its handler needs, or
a retired task that others still wait on, is refused with validate's messages. A new task comes
with its parameters in the same transaction because most handlers are invalid without them. A saved
change is in AUD_METADATA_CHANGES and AUD_ACTIONS (`metadata edit`) with the user as actor.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import sqlalchemy as sa

from etl_craft.core.enums import Handler
from etl_craft.core.errors import UsageError
from etl_craft.engine.records.actions import record_request
from etl_craft.engine.records.task_parameters import set_parameter
from etl_craft.engine.records.tasks import add_task, retire_task
from etl_craft.services.context import OperationContext
from etl_craft.services.dependency_editor import known_task, pipeline_task_ids
from etl_craft.services.metadata_editor import ParameterEdit, judged_write
from etl_craft.services.validate import ValidationReport

TASK_TYPES = ("INGESTION", "ETL")
TASK_CODE = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,127}")


@dataclass(frozen=True)
class TaskDraft:
    code: str
    task_type: str
    handler: str
    parameters: tuple[tuple[str, str], ...]  # NAME=VALUE lines of the form, in order

    @classmethod
    def from_form(cls, code: str, task_type: str, handler: str, lines: str) -> TaskDraft:
        pairs = []
        for number, line in enumerate(lines.splitlines(), start=1):
            if not line.strip():
                continue
            name, sep, value = line.partition("=")
            if not sep:
                raise UsageError(
                    f"line {number} of the parameters",
                    found=repr(line[:80]),
                    expected="NAME=VALUE, one parameter a line",
                    remedy="write each parameter as NAME=VALUE",
                )
            pairs.append((name.strip(), value.strip()))
        return cls(code.strip(), task_type, handler, tuple(pairs))

    def check(self, pipeline_code: str) -> None:
        choices = {"task code": (self.code, None), "task type": (self.task_type, TASK_TYPES)}
        choices["handler"] = (self.handler, tuple(h.value for h in Handler))
        for what, (value, allowed) in choices.items():
            if (allowed is None and not TASK_CODE.fullmatch(value)) or (allowed and value not in allowed):
                raise UsageError(
                    f"the {what} of the new task of {pipeline_code}",
                    found=repr(value[:64]),
                    expected=", ".join(allowed) if allowed else "a letter, then letters, digits and _",
                    remedy=f"correct the {what}",
                )
        for name, value in self.parameters:
            ParameterEdit(pipeline_code, self.code, name, value).check()


@dataclass(frozen=True)
class TaskEditResult:
    pipeline_code: str
    what: str
    saved: bool
    report: ValidationReport

    @property
    def message(self) -> str:
        where = f"{self.pipeline_code}: {self.what}"
        if self.saved:
            return f"{where}; saved, {self.report.summary}"
        return f"{where}: not saved, validate refused it ({self.report.summary})"


def add_pipeline_task(ctx: OperationContext, pipeline_code: str, draft: TaskDraft) -> TaskEditResult:
    draft.check(pipeline_code)
    pipeline_id, _ = pipeline_task_ids(ctx, pipeline_code)

    def write(conn: sa.Connection) -> int:
        task_id = add_task(conn, pipeline_id, draft.code, draft.task_type, draft.handler)
        for name, value in draft.parameters:
            set_parameter(conn, task_id, name, value)
        return task_id

    task_id, report, saved = judged_write(ctx, pipeline_code, write)
    if saved:
        arguments = {"pipeline_code": pipeline_code, "task_code": draft.code, "handler": draft.handler}
        arguments["parameters"] = [name for name, _ in draft.parameters]  # values are in AUD_METADATA_CHANGES
        record_request(ctx.db, ctx.actor, "metadata edit", arguments, pipeline_id=pipeline_id, task_id=task_id)
    return TaskEditResult(pipeline_code, f"task {draft.code} ({draft.handler}) added", saved, report)


def retire_pipeline_task(ctx: OperationContext, pipeline_code: str, task_code: str) -> TaskEditResult:
    pipeline_id, tasks = pipeline_task_ids(ctx, pipeline_code)
    task_id = known_task(tasks, pipeline_code, task_code, "retired")
    _, report, saved = judged_write(ctx, pipeline_code, lambda conn: retire_task(conn, pipeline_id, task_id))
    if saved:
        arguments = {"pipeline_code": pipeline_code, "retired_task_code": task_code}
        record_request(ctx.db, ctx.actor, "metadata edit", arguments, pipeline_id=pipeline_id, task_id=task_id)
    return TaskEditResult(pipeline_code, f"task {task_code} retired", saved, report)
