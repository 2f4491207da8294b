"""A task holding a bind parameter fails at run time with validate's message, and touches nothing."""

from __future__ import annotations

import duckdb
import pytest

from tests.fixtures.harness import Harness, TaskSpec

pytestmark = pytest.mark.duckdb

RULE = (
    "INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL,"
    " BUSINESS_RULE_TYPE, BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)\n"
    "SELECT 'too_big', p.PIPELINE_ID, t.TASK_ID, 'SELECT 1 WHERE t.id > ?', 'REJECT', 'id', 'main.orders', 1\n"
    "FROM CFG_PIPELINES p JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID\n"
    "WHERE p.PIPELINE_CODE = 'rules' AND t.TASK_CODE = 'checks';\n"
)


def tables(path: str) -> list[str]:
    with duckdb.connect(path) as conn:
        return sorted(r[0] for r in conn.execute("SELECT table_name FROM duckdb_tables()").fetchall())


def test_a_bind_parameter_fails_the_task_with_the_message_validate_gives(harness: Harness) -> None:
    warehouse = harness.root / "warehouse.duckdb"
    with duckdb.connect(str(warehouse)) as conn:
        conn.execute("CREATE TABLE main.orders AS SELECT 1 AS id")
    harness.project.extra_sections = f"Warehouse:\n  jdbc_url: jdbc:duckdb:{warehouse}\n"
    harness.project.write_config()
    select = "SELECT id\nFROM main.orders\nWHERE id >= :since"
    harness.pipeline(
        "sales",
        [
            TaskSpec(
                "copy",
                handler="SQL",
                parameters={"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "main.copied", "SOURCE_SQL": select},
            )
        ],
    )
    harness.pipeline("rules", [TaskSpec("checks", handler="BUSINESS_RULES")])
    harness.migrate(RULE)
    message = (
        "SOURCE_SQL: found the bind parameter :since (line 3); expected SQL without bind parameters: etl-craft"
        " passes no values to bind, so the statement could never run. For the run's own values use a $$ token"
    )
    rule_message = (
        "business rule too_big: BUSINESS_RULE_SQL: found the bind parameter ? (line 1); expected SQL without bind"
        " parameters: etl-craft passes no values to bind, so the statement could never run. Refer to the checked"
        " row as t (e.g. t.order_id) and write any other value into the rule as a literal"
    )

    validated = harness.cli("validate")
    assert validated.returncode == 1, validated
    assert f"[FAIL] sales.copy: {message}" in validated.stdout
    assert f"[FAIL] rules.checks: {rule_message}" in validated.stdout

    ran = harness.cli("run", "--pipeline_code", "sales")
    assert ran.returncode == 1, ran
    task_run = harness.task_runs()["copy"]
    assert task_run.status == "FAILED"
    assert task_run.error_message.startswith(f"task copy: {message}")
    (attempt,) = harness.attempts("copy")
    assert attempt.status == "FAILED" and attempt.error_message == task_run.error_message
    assert tables(str(warehouse)) == ["orders"]  # the target was never created

    checked = harness.cli("run", "--pipeline_code", "rules")
    assert checked.returncode == 1, checked
    rules_run = harness.task_runs()["checks"]
    assert rules_run.status == "FAILED"
    assert rules_run.error_message == f"task checks: {rule_message}"
    assert tables(str(warehouse)) == ["orders"]
