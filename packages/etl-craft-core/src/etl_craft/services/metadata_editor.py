"""The web UI's metadata editor: a task parameter set through a form, and the trial every editor form saves through.

The change is first written and judged by `validate` (the pipeline's checks) inside a transaction
that is always rolled back; only a change with no failed check is then written for real, by the
same statement, so AUD_METADATA_CHANGES records it with the user as its actor. Either way the
caller gets validate's report; the saved change can be exported as a project migration statement
for teams that keep their metadata in git.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import sqlalchemy as sa

from etl_craft.core.errors import UnknownCodeError, UsageError
from etl_craft.core.text import CODE_LIMIT, did_you_mean
from etl_craft.engine import reads
from etl_craft.engine.records.actions import record_request
from etl_craft.engine.records.task_parameters import set_parameter
from etl_craft.services.context import OperationContext
from etl_craft.services.validate import ValidationReport, validate_metadata

T = TypeVar("T")
PARAMETER_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,127}")
MAX_VALUE = 64 * 1024


@dataclass(frozen=True)
class ParameterEdit:
    pipeline_code: str
    task_code: str
    name: str
    value: str

    def check(self) -> None:
        if not PARAMETER_NAME.fullmatch(self.name):
            raise UsageError(
                "the parameter name",
                found=repr(self.name[:CODE_LIMIT]),
                expected="upper-case letters, digits and _ starting with a letter, such as RETRIES",
                remedy="use the name the handler reads (docs/reference/task-parameters.md)",
            )
        if len(self.value) > MAX_VALUE or "\x00" in self.value:
            raise UsageError(
                f"the value of {self.name}",
                found=f"{len(self.value)} characters" + (" with a NUL" if "\x00" in self.value else ""),
                expected=f"at most {MAX_VALUE} characters without NUL",
                remedy="shorten the value",
            )


@dataclass(frozen=True)
class ParameterEditResult:
    edit: ParameterEdit
    saved: bool
    operation: str  # UPDATE or INSERT (what was, or would have been, written)
    report: ValidationReport  # validate's judgement of the pipeline with the change
    migration_sql: str  # the same change as a project migration statement

    @property
    def message(self) -> str:
        where = f"{self.edit.pipeline_code}.{self.edit.task_code} {self.edit.name}"
        if self.saved:
            return f"{where} saved; {self.report.summary}"
        return f"{where} not saved: validate refused it ({self.report.summary})"


class _TrialOnly(Exception):
    """Raised to roll the trial transaction back whatever validate found."""


def _task_id(ctx: OperationContext, edit: ParameterEdit) -> int:
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, edit.pipeline_code)
        tasks = reads.pipeline_tasks(conn, pipeline.pipeline_id)
    found = next((t.task_id for t in tasks if t.task_code == edit.task_code), None)
    if found is None:
        raise UnknownCodeError(
            f"task {edit.pipeline_code}.{edit.task_code}",
            found="no active task with this code in the pipeline",
            expected="the code of an active task of the pipeline",
            remedy="open the task from its pipeline's page"
            + did_you_mean(edit.task_code, [t.task_code for t in tasks]),
        )
    return found


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def migration_sql(edit: ParameterEdit, operation: str) -> str:
    """The change as a project migration writes it (by codes, so it applies to any Engine DB)."""
    task = (
        "SELECT t.TASK_ID FROM CFG_TASKS t JOIN CFG_PIPELINES p ON p.PIPELINE_ID = t.PIPELINE_ID"
        f" WHERE p.PIPELINE_CODE = {_quoted(edit.pipeline_code)} AND p.ACTIVE_FLAG = 'Y'"
        f" AND t.TASK_CODE = {_quoted(edit.task_code)} AND t.ACTIVE_FLAG = 'Y'"
    )
    header = f"-- {edit.pipeline_code}.{edit.task_code}: {edit.name}, set in the web UI\n"
    if operation == "UPDATE":
        return (
            f"{header}UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = {_quoted(edit.value)}\n"
            f"WHERE ACTIVE_FLAG = 'Y' AND PARAMETER_NAME = {_quoted(edit.name)} AND TASK_ID = ({task});\n"
        )
    return (
        f"{header}INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)\n"
        f"{task.replace('SELECT t.TASK_ID', f'SELECT t.TASK_ID, {_quoted(edit.name)}, {_quoted(edit.value)}', 1)};\n"
    )


def judged_write(
    ctx: OperationContext, pipeline_code: str, write: Callable[[sa.Connection], T]
) -> tuple[T, ValidationReport, bool]:
    """Run `write` and validate the pipeline inside a transaction that is always rolled back; run
    `write` again for real only when validate found no failure. Returns (what write returned, the
    report, saved). Every editor form saves through here, so none can skip the check."""
    judged: list[tuple[T, ValidationReport]] = []
    try:
        with ctx.db.write() as conn:
            judged.append((write(conn), validate_metadata(conn, ctx.config, pipeline_code)))
            raise _TrialOnly
    except _TrialOnly:
        pass
    outcome, report = judged[0]
    if report.valid:
        with ctx.db.write() as conn:
            outcome = write(conn)
    return outcome, report, report.valid


def set_task_parameter(ctx: OperationContext, edit: ParameterEdit) -> ParameterEditResult:
    """Judge the change in a rolled-back transaction; write it only when validate finds no failure."""
    edit.check()
    task_id = _task_id(ctx, edit)
    operation, report, saved = judged_write(
        ctx, edit.pipeline_code, lambda conn: set_parameter(conn, task_id, edit.name, edit.value)
    )
    if saved:
        arguments = {"pipeline_code": edit.pipeline_code, "task_code": edit.task_code, "parameter": edit.name}
        record_request(ctx.db, ctx.actor, "metadata edit", arguments)  # the value is in AUD_METADATA_CHANGES
    return ParameterEditResult(edit, saved, operation, report, migration_sql(edit, operation))
