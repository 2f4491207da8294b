"""The web UI's business rule editor: rules of a BUSINESS_RULES task added and retired through forms.

Each change goes through the metadata editor's trial (`judged_write`): validate judges the pipeline
with it in a rolled-back transaction (a rule that is not one read-only SELECT, a key that is not a
plain column, a target table without its schema, or a task left with no rule is refused with
validate's messages), and only a change with no failure is written, recorded in
AUD_METADATA_CHANGES and AUD_ACTIONS (`metadata edit`) with the user as actor.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from etl_craft.core.enums import Handler
from etl_craft.core.errors import UnknownCodeError, UsageError
from etl_craft.core.text import CODE_LIMIT, did_you_mean
from etl_craft.engine import reads
from etl_craft.engine.records.actions import record_request
from etl_craft.engine.records.business_rules import add_rule, retire_rule, task_rules
from etl_craft.services.context import OperationContext
from etl_craft.services.metadata_editor import judged_write
from etl_craft.services.validate import ValidationReport

RULE_TYPES = ("INCOMPLETE", "REJECT", "REPORT")


@dataclass(frozen=True)
class RuleDraft:
    name: str
    sql: str
    rule_type: str
    key_column: str
    target_table: str
    sequence_number: int

    def check(self) -> None:
        if self.rule_type not in RULE_TYPES:
            raise UsageError(
                f"the type of business rule {self.name[:CODE_LIMIT]!r}",
                found=repr(self.rule_type[:32]),
                expected=", ".join(RULE_TYPES),
                remedy="pick one of the form's rule types",
            )


@dataclass(frozen=True)
class TaskRules:
    pipeline_code: str
    task_code: str
    rules: tuple[sa.Row, ...]


@dataclass(frozen=True)
class RuleEditResult:
    pipeline_code: str
    task_code: str
    what: str  # "rule NAME added" or "rule ID retired"
    saved: bool
    report: ValidationReport

    @property
    def message(self) -> str:
        where = f"{self.pipeline_code}.{self.task_code}: {self.what}"
        if self.saved:
            return f"{where}; saved, {self.report.summary}"
        return f"{where}: not saved, validate refused it ({self.report.summary})"


def _rules_task(ctx: OperationContext, pipeline_code: str, task_code: str) -> tuple[int, int]:
    """(pipeline id, task id) of the pipeline's active BUSINESS_RULES task with this code."""
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        tasks = [t for t in reads.pipeline_tasks(conn, pipeline.pipeline_id) if t.handler == Handler.BUSINESS_RULES]
    found = next((t.task_id for t in tasks if t.task_code == task_code), None)
    if found is None:
        raise UnknownCodeError(
            f"BUSINESS_RULES task {pipeline_code}.{task_code}",
            found="no active BUSINESS_RULES task with this code in the pipeline",
            expected="the code of an active task whose HANDLER is BUSINESS_RULES",
            remedy="open the rules from the pipeline's page" + did_you_mean(task_code, [t.task_code for t in tasks]),
        )
    return pipeline.pipeline_id, found


def rules_of_task(ctx: OperationContext, pipeline_code: str, task_code: str) -> TaskRules:
    _, task_id = _rules_task(ctx, pipeline_code, task_code)
    with ctx.db.read() as conn:
        return TaskRules(pipeline_code, task_code, tuple(task_rules(conn, task_id)))


def add_business_rule(ctx: OperationContext, pipeline_code: str, task_code: str, draft: RuleDraft) -> RuleEditResult:
    draft.check()
    pipeline_id, task_id = _rules_task(ctx, pipeline_code, task_code)
    values = {
        "business_rule_name": draft.name,
        "pipeline_id": pipeline_id,
        "task_id": task_id,
        "business_rule_sql": draft.sql,
        "business_rule_type": draft.rule_type,
        "business_rule_key_column": draft.key_column,
        "target_table": draft.target_table,
        "sequence_number": draft.sequence_number,
    }
    added, report, saved = judged_write(ctx, pipeline_code, lambda conn: add_rule(conn, values))
    if saved:
        arguments = {"pipeline_code": pipeline_code, "task_code": task_code, "business_rule_id": added}
        record_request(ctx.db, ctx.actor, "metadata edit", arguments, pipeline_id=pipeline_id, task_id=task_id)
    return RuleEditResult(pipeline_code, task_code, f"rule {draft.name} added", saved, report)


def retire_business_rule(ctx: OperationContext, pipeline_code: str, task_code: str, rule_id: int) -> RuleEditResult:
    pipeline_id, task_id = _rules_task(ctx, pipeline_code, task_code)

    def write(conn: sa.Connection) -> None:
        if retire_rule(conn, task_id, rule_id) != 1:
            raise UnknownCodeError(
                f"business rule {rule_id} of {pipeline_code}.{task_code}",
                found="no active rule with this id on the task",
                expected="the id of an active CFG_BUSINESS_RULES row of the task",
                remedy="reload the rules page: it may have been retired already",
            )

    _, report, saved = judged_write(ctx, pipeline_code, write)
    if saved:
        arguments = {"pipeline_code": pipeline_code, "task_code": task_code, "retired_business_rule_id": rule_id}
        record_request(ctx.db, ctx.actor, "metadata edit", arguments, pipeline_id=pipeline_id, task_id=task_id)
    return RuleEditResult(pipeline_code, task_code, f"rule {rule_id} retired", saved, report)
