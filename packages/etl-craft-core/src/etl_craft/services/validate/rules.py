"""BUSINESS_RULES tasks: at least one active rule, each with a plain key, a qualified table and embeddable SQL."""

from __future__ import annotations

from etl_craft.core.enums import Handler
from etl_craft.core.errors import SqlGuardError
from etl_craft.handlers.business_rules import Rule, precheck
from etl_craft.handlers.sql.catalog import key_of
from etl_craft.handlers.sql.columns import ROW_ID
from etl_craft.handlers.sql.spec import SqlTaskSpec
from etl_craft.handlers.sql.text import check_read_only, nested
from etl_craft.services.validate.findings import Findings
from etl_craft.services.validate.project import Project
from etl_craft.services.validate.sql import REBUILDERS


def check_business_rules(project: Project, findings: Findings, specs: dict[int, SqlTaskSpec]) -> None:
    sqlglot_dialect = project.dialect.sqlglot_dialect if project.dialect else ""
    state_changing = project.dialect.state_changing_functions if project.dialect else frozenset()
    database = project.dialect.database_name() if project.dialect else None
    rebuilt = {
        key_of(spec.target_name, database): project.label(task_id)
        for task_id, spec in specs.items()
        if spec.action in REBUILDERS
    }
    rules_of: dict[int, list[Rule]] = {}
    for row in sorted(project.business_rules, key=lambda r: (r["sequence_number"], r["business_rule_id"])):
        rules_of.setdefault(row["task_id"], []).append(
            Rule(
                row["business_rule_id"],
                row["business_rule_name"],
                row["business_rule_sql"],
                row["business_rule_type"],
                row["business_rule_key_column"],
                row["target_table"],
                row["sequence_number"],
            )
        )
    by_id = {row["business_rule_id"]: row for row in project.business_rules}
    for task in project.checked_tasks(Handler.BUSINESS_RULES):
        pipeline = project.code_of(task)
        rules = rules_of.get(task.task_id, [])
        if not rules:
            findings.fail(
                pipeline,
                task.code,
                "CFG_BUSINESS_RULES",
                found="no active rule for this task",
                expected="at least one active rule for a BUSINESS_RULES task",
                remedy="add rules with a project migration or config/business_rules.csv, or retire the task",
            )
        for rule in rules:
            where = f"business rule {rule.name}"
            if by_id[rule.rule_id]["pipeline_id"] != task.pipeline_id:
                findings.fail(
                    pipeline,
                    task.code,
                    f"{where}: PIPELINE_ID",
                    found=f"pipeline {project.pipelines[by_id[rule.rule_id]['pipeline_id']].code}",
                    expected=f"the pipeline of its task ({pipeline})",
                    remedy="correct the rule's PIPELINE_ID",
                )
            try:
                precheck(rule, sqlglot_dialect, task.code, state_changing)
                # B57: the rule is embedded the way the handler embeds it, so a trailing ; or comment can't break it.
                check_read_only(
                    f"SELECT 1 FROM {rule.table} t WHERE EXISTS {nested(rule.sql)}",
                    sqlglot_dialect,
                    f"task {task.code}: {where}: BUSINESS_RULE_SQL embedded in the rule check",
                )
            except SqlGuardError as error:
                findings.error(error, pipeline, task.code)
                continue
            creator = rebuilt.get(key_of(rule.table, database))
            if rule.key_column.upper() == ROW_ID and creator is not None:
                findings.fail(
                    pipeline,
                    task.code,
                    f"{where}: BUSINESS_RULE_KEY_COLUMN",
                    found=f"ROW_ID of {rule.table}, which {creator} rebuilds (CREATE_TABLE or OVERWRITE_TABLE "
                    "regenerate ROW_ID, so flags would point at other rows)",
                    expected="a stable business key for a rebuilt table",
                    remedy="key the rule on the column that identifies a row, e.g. order_id",
                )
