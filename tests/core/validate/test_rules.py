"""One test per validate rule: each asserts the finding names the pipeline, task, parameter, value found,
what was expected and the remedy."""

from __future__ import annotations

import json

import pytest

from etl_craft.core.errors import MetadataError
from etl_craft.engine.reads.cfg_rows import CfgRows
from etl_craft.services.validate.findings import Findings
from etl_craft.services.validate.pipelines import check_codes
from etl_craft.services.validate.project import Project
from tests.core.validate.conftest import WAREHOUSE as WAREHOUSE_SECTION
from tests.core.validate.conftest import ValidateProject, clean, find
from tests.fixtures.harness import TaskSpec, cross_dependency, pipeline_dependency

pytestmark = pytest.mark.sqlite

ALERT = {"EMAIL_TO": "ops@example.com", "EMAIL_SUBJECT": "$$pipeline_code: $$status", "EMAIL_BODY": "$$error_message"}


def sql_task(code: str, action: str = "CREATE_TABLE", target: str = "mart.orders", **params: str) -> TaskSpec:
    parameters = {"SQL_ACTION": action, "TARGET_OBJECT": target}
    if action != "DROP_TABLE" and "SOURCE_SQL_FILE" not in params:
        parameters["SOURCE_SQL"] = "SELECT id, amount FROM raw.orders"
    parameters.update(params)
    return TaskSpec(code, handler="SQL", parameters=parameters)


def rule_sql(pipeline: str, task: str, name: str, sql: str, key: str = "id", table: str = "mart.orders") -> str:
    q = sql.replace("'", "''")
    return (
        "INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL,"
        " BUSINESS_RULE_TYPE, BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)\n"
        f"SELECT '{name}', p.PIPELINE_ID, t.TASK_ID, '{q}', 'REJECT', '{key}', '{table}', 1\n"
        "FROM CFG_PIPELINES p JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y'\n"
        f"WHERE p.PIPELINE_CODE = '{pipeline}' AND t.TASK_CODE = '{task}' AND p.ACTIVE_FLAG = 'Y';\n"
    )


# --- a valid project ---------------------------------------------------------------------------


def test_a_valid_project_has_no_finding_and_counts_what_it_checked(vp: ValidateProject) -> None:
    vp.write("sql_files/sales/orders.sql", "SELECT id, amount -- the amount\nFROM raw.orders;\n")
    vp.pipeline(
        "sales",
        [
            TaskSpec("load"),
            sql_task("orders", SOURCE_SQL_FILE="sales/orders.sql"),
            sql_task("merged", "SCD1_MERGE", "mart.merged", MERGE_KEY="id", MERGE_COMPARE_COLUMNS="amount"),
            TaskSpec("checks", handler="BUSINESS_RULES"),
            TaskSpec("alert", handler="EMAIL_ALERT", parameters=ALERT),
        ],
        [
            ("orders", "load", "HAS_DATA"),
            ("merged", "load", "SUCCESS"),
            ("checks", "orders", "SUCCESS"),
            ("checks", "merged", "SUCCESS"),
            ("alert", "checks", "ALWAYS"),
        ],
    )
    vp.sql(rule_sql("sales", "checks", "positive", "SELECT 1 WHERE t.amount < 0; -- trailing comment", key="id"))
    report = vp.check()
    clean(report)
    assert report.summary == "checked 1 pipeline(s) and 5 task(s): 0 failed, 0 warning(s)"
    assert report.valid


def test_pipeline_code_narrows_the_check_and_an_unknown_code_names_close_matches(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("a")])
    vp.pipeline("stock", [TaskSpec("a"), TaskSpec("b")])
    assert vp.check("stock").summary.startswith("checked 1 pipeline(s) and 2 task(s)")
    with pytest.raises(MetadataError, match="Did you mean sales"):
        vp.check("sale")


# --- pipelines -----------------------------------------------------------------------------------


def test_codes_that_break_the_code_rule_fail() -> None:
    rows = CfgRows(
        pipelines=({"pipeline_id": 1, "pipeline_code": "load $(x)", "active_flag": "Y"},),
        tasks=({"task_id": 1, "pipeline_id": 1, "task_code": "__init__", "handler": "PYTHON", "active_flag": "Y"},),
        task_parameters=(),
        task_dependencies=(),
        pipeline_dependencies=(),
        business_rules=(),
    )
    findings = Findings()
    check_codes(Project.build(rows, None, None), findings)  # type: ignore[arg-type]
    messages = [f.line for f in findings.items]
    assert messages[0].startswith(
        "[FAIL] load $(x): PIPELINE_CODE: found 'load $(x)'; expected a code matching ^[A-Za-z]"
    )
    assert messages[1].startswith("[FAIL] load $(x).__init__: TASK_CODE: found '__init__'")
    assert "add it again under a valid code" in messages[1]


def test_pipeline_parameters_must_be_a_json_object(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("a")])
    vp.sql("UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = '{\"RETRIES\": 2,}' WHERE PIPELINE_CODE = 'sales';")
    find(vp.check(), "FAIL", "sales", "PIPELINE_PARAMETERS: found text that is not JSON", "expected a JSON object")


def test_pipeline_parameters_of_the_wrong_type_fail_and_unknown_keys_warn_with_the_nearest(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("a")])
    params = {"RETRIES": "two", "TAGS": ["a", 1], "EMAIL_RECIPIENTS": ["not-an-address"], "RETRIE": 1, "CATCHUP": True}
    vp.sql(f"UPDATE CFG_PIPELINES SET PIPELINE_PARAMETERS = '{json.dumps(params)}' WHERE PIPELINE_CODE = 'sales';")
    report = vp.check()
    find(report, "FAIL", "sales", 'PIPELINE_PARAMETERS.RETRIES: found "two"', "expected a whole number of 0 or more")
    find(report, "FAIL", "sales", "PIPELINE_PARAMETERS.TAGS", "expected a list of strings")
    find(report, "FAIL", "sales", "PIPELINE_PARAMETERS.EMAIL_RECIPIENTS", "a list of email addresses")
    find(report, "WARN", "sales", "PIPELINE_PARAMETERS key 'RETRIE'", "did you mean RETRIES")
    assert report.failed == 3 and report.warnings == 1


@pytest.mark.parametrize(
    ("schedule", "problem"),
    [
        ("0 25 * * *", "hour 25 is outside 0-23"),
        ("0 0 30 2 *", "never occurs"),
        ("* * * *", "4 field(s)"),
        ("@fortnightly", "unknown macro"),
        ("0 0 ? * MON", "day of month has '?'"),
    ],
)
def test_run_schedule_must_be_a_five_field_cron_expression(vp: ValidateProject, schedule: str, problem: str) -> None:
    vp.pipeline("sales", [TaskSpec("a")])
    vp.sql(f"UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '{schedule}' WHERE PIPELINE_CODE = 'sales';")
    found = find(vp.check(), "FAIL", "sales", f"RUN_SCHEDULE: found '{schedule}'", problem, "expected five fields")
    assert "set it to NULL for no automatic runs" in found.message


def test_valid_schedules_and_macros_pass(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("a")])
    for schedule in ("*/15 8-18 * * MON-FRI", "@daily", "0 6 1,15 JAN-JUN 0", "@annually"):
        vp.sql(f"UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '{schedule}' WHERE PIPELINE_CODE = 'sales';")
        clean(vp.check())


def test_schedule_timezone_must_be_an_iana_name(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("a")])
    vp.sql("UPDATE CFG_PIPELINES SET SCHEDULE_TIMEZONE = 'Europe/Pariss' WHERE PIPELINE_CODE = 'sales';")
    find(vp.check(), "FAIL", "sales", "SCHEDULE_TIMEZONE: found 'Europe/Pariss'", "IANA", "did you mean Europe/Paris")


def test_sla_must_be_positive(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("a")])
    vp.sql("UPDATE CFG_PIPELINES SET SLA_IN_HOURS = 0 WHERE PIPELINE_CODE = 'sales';")
    find(vp.check(), "FAIL", "sales", "SLA_IN_HOURS: found 0", "above 0")


# --- dependencies between pipelines --------------------------------------------------------------


def test_a_cycle_of_pipeline_dependencies_fails(vp: ValidateProject) -> None:
    vp.pipeline("a", [TaskSpec("t")])
    vp.pipeline("b", [TaskSpec("t")])
    vp.sql(pipeline_dependency("a", "b") + pipeline_dependency("b", "a"))
    report = vp.check()
    finding = find(report, "FAIL", "a", "pipeline dependencies: found a cycle: ")
    assert "a -> b -> a" in finding.message or "b -> a -> b" in finding.message
    assert "Retire one of these pipeline dependencies" in finding.message


def test_a_pipeline_dependency_on_a_retired_pipeline_or_itself_fails(vp: ValidateProject) -> None:
    vp.pipeline("a", [TaskSpec("t")])
    vp.pipeline("old", [TaskSpec("t")])
    vp.sql(pipeline_dependency("a", "old") + pipeline_dependency("a", "a", "ALWAYS"))
    vp.sql("UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_CODE = 'old';")
    report = vp.check()
    find(report, "FAIL", "a", "found the SUCCESS dependency on old, which is retired", "reactivate old")
    find(report, "FAIL", "a", "pipeline dependency: found a dependency on itself")


# --- each pipeline's graph -----------------------------------------------------------------------


def test_a_task_depending_on_itself_fails(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("a")], [("a", "a", "SUCCESS")])
    find(vp.check(), "FAIL", "sales.a", "found a dependency on itself", "retire the self-dependency row")


def test_a_dependency_on_a_retired_task_fails(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("a"), TaskSpec("b")], [("b", "a", "SUCCESS")])
    vp.sql("UPDATE CFG_TASKS SET ACTIVE_FLAG = 'N' WHERE TASK_CODE = 'a';")
    find(vp.check(), "FAIL", "sales.b", "a dependency on sales.a", "not an active task of this pipeline")


def test_a_cycle_fails_naming_its_tasks(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [TaskSpec("a"), TaskSpec("b"), TaskSpec("c")],
        [("b", "a", "SUCCESS"), ("c", "b", "SUCCESS"), ("a", "c", "SUCCESS")],
    )
    finding = find(vp.check(), "FAIL", "sales", "found a dependency cycle: ", "retire one of these dependencies")
    assert finding.message.count("->") == 3


def test_an_impossible_run_condition_fails_with_its_count(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("a"), TaskSpec("b", run_condition="N", count=3)], [("b", "a", "SUCCESS")])
    find(vp.check(), "FAIL", "sales.b", "RUN_CONDITION N with RUN_CONDITION_COUNT 3 and 1 dependencies")


# --- task dependencies on other pipelines --------------------------------------------------------


def test_a_dependency_on_another_pipelines_retired_task_fails(vp: ValidateProject) -> None:
    vp.pipeline("up", [TaskSpec("x")])
    vp.pipeline("down", [TaskSpec("y")])
    vp.sql(cross_dependency("down", "y", "up", "x"))
    vp.sql("UPDATE CFG_TASKS SET ACTIVE_FLAG = 'N' WHERE TASK_CODE = 'x';")
    find(vp.check(), "FAIL", "down.y", "dependency on up.x: found a retired task")


def test_depends_on_pipeline_id_must_hold_the_task(vp: ValidateProject) -> None:
    vp.pipeline("up", [TaskSpec("x")])
    vp.pipeline("other", [TaskSpec("z")])
    vp.pipeline("down", [TaskSpec("y")])
    vp.sql(cross_dependency("down", "y", "up", "x"))
    vp.sql(
        "UPDATE CFG_TASK_DEPENDENCY SET DEPENDS_ON_PIPELINE_ID ="
        " (SELECT PIPELINE_ID FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'other');"
    )
    find(vp.check(), "FAIL", "down.y", "DEPENDS_ON_PIPELINE_ID naming other, but the task belongs to up")


@pytest.mark.parametrize(
    ("upstream", "kind"),
    [
        (TaskSpec("up", handler="BUSINESS_RULES"), "BUSINESS_RULES"),
        (TaskSpec("up", handler="EMAIL_ALERT", parameters=ALERT), "EMAIL_ALERT"),
        (sql_task("up", "SETUP_TABLE", SETUP_FOR="APPEND_TABLE"), "SQL SETUP_TABLE"),
    ],
)
def test_has_data_on_a_task_that_never_reports_rows_fails(vp: ValidateProject, upstream: TaskSpec, kind: str) -> None:
    vp.pipeline("sales", [upstream, TaskSpec("down")], [("down", "up", "HAS_DATA")])
    find(vp.check(), "FAIL", "sales.down", "HAS_DATA dependency on sales.up", f"an upstream {kind} task", "use SUCCESS")


def test_remote_mode_refuses_n_has_data_and_mixed_types(vp: ValidateProject) -> None:
    vp.configure(orchestration="  Mode: remote\n")
    vp.pipeline(
        "sales",
        [TaskSpec("a"), TaskSpec("b"), TaskSpec("c", run_condition="N", count=1)],
        [("c", "a", "HAS_DATA"), ("c", "b", "ALWAYS")],
    )
    report = vp.check()
    find(report, "FAIL", "sales.c", "RUN_CONDITION: found N in remote mode", "or run the pipeline in local mode")
    find(report, "FAIL", "sales.c", "found a HAS_DATA dependency in remote mode")
    find(report, "FAIL", "sales.c", "found mixed dependency types (ALWAYS, HAS_DATA) in remote mode")


# --- parameters of every task --------------------------------------------------------------------


def test_an_unread_parameter_warns_with_the_nearest_names_except_on_python_tasks(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [sql_task("orders", SQL_ACTON="CREATE_TABLE"), TaskSpec("script", parameters={"ANYTHING_AT_ALL": "x"})],
    )
    report = vp.check()
    find(report, "WARN", "sales.orders", "parameter SQL_ACTON", "the SQL handler does not read", "such as SQL_ACTION")
    assert not [f for f in report.findings if f.where == "sales.script"]


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("TASK_TIMEOUT_SECONDS", "1.5", "a whole number of 0 or more"),
        ("RETRIES", "-1", "a whole number of 0 or more"),
        ("RETRY_DELAY_SECONDS", "soon", "a finite number of at least 0"),
        ("RETRY_BACKOFF", "0.5", "a finite number of at least 1"),
    ],
)
def test_run_settings_must_be_numbers_in_range(vp: ValidateProject, name: str, value: str, expected: str) -> None:
    vp.pipeline("sales", [TaskSpec("a", parameters={name: value})])
    find(vp.check(), "FAIL", "sales.a", f"parameter {name}: found '{value}'", expected)


def test_sql_tasks_need_the_warehouse_section_and_alerts_warn_without_email(vp: ValidateProject) -> None:
    vp.configure(warehouse=False, email=False)
    vp.pipeline(
        "sales",
        [sql_task("orders"), TaskSpec("alert", handler="EMAIL_ALERT", parameters=ALERT)],
        [("alert", "orders", "ALWAYS")],
    )
    report = vp.check()
    find(
        report, "FAIL", "sales.orders", "found no Warehouse section, which SQL tasks need", "add the Warehouse section"
    )
    find(report, "WARN", "", "Orchestration.Email", "alerts go to the outbox")


# --- SQL tasks -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("task", "parts"),
    [
        (sql_task("t", "MAKE_TABLE"), ("SQL_ACTION: found 'MAKE_TABLE'", "expected one of CREATE_TABLE")),
        (sql_task("t", target="orders"), ("TARGET_OBJECT: found 'orders'", "e.g. sales.orders")),
        (
            TaskSpec(
                "t",
                handler="SQL",
                parameters={
                    "SQL_ACTION": "APPEND_TABLE",
                    "TARGET_OBJECT": "m.t",
                    "SOURCE_SQL": "SELECT 1 AS a",
                    "SOURCE_SQL_FILE": "a.sql",
                },
            ),
            ("SOURCE_SQL / SOURCE_SQL_FILE: found both",),
        ),
        (
            TaskSpec("t", handler="SQL", parameters={"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "m.t"}),
            ("found neither",),
        ),
        (sql_task("t", "DROP_TABLE", SOURCE_SQL="SELECT 1"), ("found a SELECT on a DROP_TABLE task",)),
        (
            sql_task("t", SOURCE_SQL="DELETE FROM raw.orders"),
            ("found a statement that is not a query (DELETE)", "one read-only SELECT"),
        ),
        (sql_task("t", SOURCE_SQL="SELECT 1 AS a; SELECT 2 AS a"), ("found 2 statements",)),
        (
            sql_task("t", SOURCE_SQL="SELECT nextval('mart.ids') AS id"),
            ("found a call of nextval(), which changes the warehouse's state", "(read-only rule)"),
        ),
        (
            sql_task("t", SOURCE_SQL="SELECT id FROM x WHERE r = $$pipeline_run_id"),
            ("PIPELINE_RUN_ID_SUBSTITUTION = true",),
        ),
        (
            sql_task("t", RUN_DATE_SUBSTITUTION="true"),
            ("found RUN_DATE_SUBSTITUTION = true but no $$run_date in the SELECT",),
        ),
        (sql_task("t", SOURCE_SQL="SELECT $$pipeline_id_filter"), ("it was renamed $$pipeline_run_id_filter",)),
        (sql_task("t", "SCD1_MERGE", MERGE_COMPARE_COLUMNS="amount"), ("MERGE_KEY: found nothing",)),
        (sql_task("t", TABLE_FORMAT="iceberg"), ("TABLE_FORMAT iceberg", "a table format DuckDB stores: native")),
        (sql_task("t", EXTERNAL_LOCATION="s3://bucket/x"), ("EXTERNAL_LOCATION: found 's3://bucket/x'",)),
        (sql_task("t", SCHEMA_EVOLUTION="yes"), ("SCHEMA_EVOLUTION: found 'yes'", "exactly true or false")),
    ],
)
def test_sql_pre_run_checks_fail_as_the_handler_would(
    vp: ValidateProject, task: TaskSpec, parts: tuple[str, ...]
) -> None:
    vp.pipeline("sales", [task])
    find(vp.check(), "FAIL", "sales.t", *parts)


def test_bind_parameters_in_a_select_fail_with_the_tokens_to_use(vp: ValidateProject) -> None:
    vp.write("sql_files/since.sql", "SELECT id, amount\nFROM raw.orders\nWHERE loaded_on >= ?\n")
    vp.pipeline(
        "sales",
        [
            sql_task("inline", SOURCE_SQL="SELECT id FROM raw.orders WHERE loaded_on = :run_date"),
            sql_task("filed", target="mart.since", SOURCE_SQL_FILE="since.sql"),
            sql_task("casts", target="mart.casts", SOURCE_SQL="SELECT id::int AS id, ':x ?' AS note FROM raw.orders"),
        ],
    )
    report = vp.check()
    find(
        report,
        "FAIL",
        "sales.inline",
        "SOURCE_SQL: found the bind parameter :run_date (line 1)",
        "etl-craft passes no values to bind",
        "write $$run_date (with RUN_DATE_SUBSTITUTION = true) instead of :run_date",
    )
    find(
        report,
        "FAIL",
        "sales.filed",
        "SOURCE_SQL_FILE 'since.sql': found the bind parameter ? (line 3)",
        "use a $$ token with its switch parameter ($$pipeline_id, $$pipeline_run_id",
    )
    assert [f.where for f in report.findings] == ["sales.filed", "sales.inline"]


def test_a_missing_sql_file_names_the_folder_and_close_matches(vp: ValidateProject) -> None:
    vp.write("sql_files/sales/orders.sql", "SELECT 1 AS a")
    task = TaskSpec(
        "t",
        handler="SQL",
        parameters={"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "m.t", "SOURCE_SQL_FILE": "sales/order.sql"},
    )
    vp.pipeline("sales", [task])
    find(
        vp.check(),
        "FAIL",
        "sales.t",
        "SOURCE_SQL_FILE='sales/order.sql'",
        f"no such file {vp.root / 'sql_files' / 'sales' / 'order.sql'}",
        "did you mean: sales/orders.sql",
    )


def test_a_sql_file_that_is_not_utf8_fails(vp: ValidateProject) -> None:
    (vp.root / "sql_files" / "latin.sql").write_bytes(b"SELECT 'caf\xe9' AS name")
    task = TaskSpec(
        "t",
        handler="SQL",
        parameters={"SQL_ACTION": "CREATE_TABLE", "TARGET_OBJECT": "m.t", "SOURCE_SQL_FILE": "latin.sql"},
    )
    vp.pipeline("sales", [task])
    find(
        vp.check(),
        "FAIL",
        "sales.t",
        f"SOURCE_SQL_FILE='latin.sql': found {vp.root / 'sql_files' / 'latin.sql'}: bytes that are not UTF-8 "
        "at line 1, column 12 (byte 0xe9); expected SQL text in UTF-8",
        "save it as UTF-8",
    )


@pytest.mark.parametrize(
    ("select", "parts"),
    [
        ('SELECT id AS "Order Id" FROM raw.orders', ("column named 'Order Id', which needs quoting", "AS order_id")),
        (
            "SELECT id, ROW_ID, pipeline_run_id FROM raw.orders",
            ("returns ROW_ID, pipeline_run_id, which etl-craft writes",),
        ),
        ("SELECT id, id FROM raw.orders", ("the column 'id' twice",)),
    ],
)
def test_output_names_are_plain_and_never_engine_managed(
    vp: ValidateProject, select: str, parts: tuple[str, ...]
) -> None:
    vp.pipeline("sales", [sql_task("t", SOURCE_SQL=select)])
    find(vp.check(), "FAIL", "sales.t", "SOURCE_SQL", *parts)


def test_merge_columns_must_be_in_the_output_when_sqlglot_can_name_it(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [
            sql_task("named", "SCD2_MERGE", "m.a", MERGE_KEY="order_id", MERGE_COMPARE_COLUMNS="amount|state"),
            sql_task(
                "starred",
                "SCD2_MERGE",
                "m.b",
                SOURCE_SQL="SELECT * FROM raw.orders",
                MERGE_KEY="order_id",
                MERGE_COMPARE_COLUMNS="x",
            ),
        ],
    )
    report = vp.check()
    find(
        report,
        "FAIL",
        "sales.named",
        "MERGE_KEY: found order_id, which the SELECT does not return (it returns id, amount)",
    )
    find(report, "FAIL", "sales.named", "MERGE_COMPARE_COLUMNS: found state")
    assert not [f for f in report.findings if f.where == "sales.starred"]


def test_one_table_format_per_target_across_pipelines(vp: ValidateProject) -> None:
    vp.configure()
    vp.project.extra_sections = "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n  Table_format: native\n"
    vp.project.write_config()
    vp.pipeline("a", [sql_task("w", "APPEND_TABLE", "mart.facts")])
    vp.pipeline("b", [sql_task("w", "APPEND_TABLE", "mart.FACTS", TABLE_FORMAT="iceberg")])
    report = vp.check("a")
    finding = find(report, "FAIL", "a.w", "TABLE_FORMAT of mart.facts", "a.w (native), b.w (iceberg)")
    assert "Set the same TABLE_FORMAT on all of them" in finding.message


def test_the_docs_site_schedule_is_a_cron_expression(vp: ValidateProject) -> None:
    vp.project.extra_sections = WAREHOUSE_SECTION + "Docs_site:\n  Schedule: every day\n"
    vp.project.write_config()
    find(vp.check(), "FAIL", "", "Docs_site.Schedule: found 'every day' (2 field(s)", "expected five fields")


def test_setup_table_needs_one_writer_or_setup_for_and_drop_table_a_creator(vp: ValidateProject) -> None:
    vp.pipeline("sales", [sql_task("setup", "SETUP_TABLE", "m.t"), sql_task("drop", "DROP_TABLE", "m.gone")])
    report = vp.check()
    find(report, "FAIL", "sales.setup", "SETUP_FOR: found no other SQL task of this pipeline writing the target")
    find(report, "FAIL", "sales.drop", "no CREATE_TABLE task of m.gone in this pipeline")


def test_setup_table_with_a_sibling_writer_passes(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [sql_task("setup", "SETUP_TABLE", "m.t"), sql_task("append", "APPEND_TABLE", "m.t")],
        [("append", "setup", "SUCCESS")],
    )
    clean(vp.check())


# --- business rules ------------------------------------------------------------------------------


def test_a_business_rules_task_without_an_active_rule_fails(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("checks", handler="BUSINESS_RULES")])
    find(
        vp.check(),
        "FAIL",
        "sales.checks",
        "CFG_BUSINESS_RULES: found no active rule for this task",
        "or retire the task",
    )


@pytest.mark.parametrize(
    ("sql", "key", "table", "parts"),
    [
        (
            "SELECT 1 WHERE t.x < 0",
            "t.id",
            "mart.orders",
            ("BUSINESS_RULE_KEY_COLUMN: found 't.id'", "a plain column name"),
        ),
        ("SELECT 1 WHERE t.x < 0", "id", "orders", ("TARGET_TABLE: found 'orders'",)),
        (
            "DELETE FROM mart.orders",
            "id",
            "mart.orders",
            ("BUSINESS_RULE_SQL: found a statement that is not a query (DELETE)",),
        ),
        ("SELECT 1 WHERE t.x < 0 AND", "id", "mart.orders", ("BUSINESS_RULE_SQL: found SQL that does not parse",)),
        (
            "SELECT 1 WHERE t.amount > %(limit)s",
            "id",
            "mart.orders",
            ("BUSINESS_RULE_SQL: found the bind parameter %(limit)s (line 1)", "refer to the checked row as t"),
        ),
    ],
)
def test_a_rule_needs_a_plain_key_a_qualified_table_and_one_read_only_select(
    vp: ValidateProject, sql: str, key: str, table: str, parts: tuple[str, ...]
) -> None:
    vp.pipeline("sales", [TaskSpec("checks", handler="BUSINESS_RULES")])
    vp.sql(rule_sql("sales", "checks", "r1", sql, key=key, table=table))
    find(vp.check(), "FAIL", "sales.checks", "business rule r1", *parts)


def test_a_rule_keyed_on_row_id_of_a_rebuilt_table_fails(vp: ValidateProject) -> None:
    vp.pipeline("sales", [sql_task("orders", "OVERWRITE_TABLE"), TaskSpec("checks", handler="BUSINESS_RULES")])
    vp.sql(rule_sql("sales", "checks", "r1", "SELECT 1 WHERE t.amount < 0", key="ROW_ID"))
    find(
        vp.check(),
        "FAIL",
        "sales.checks",
        "business rule r1: BUSINESS_RULE_KEY_COLUMN: found ROW_ID of mart.orders, which sales.orders rebuilds",
    )


# --- ingestion scripts ---------------------------------------------------------------------------


def test_script_name_must_exist_with_close_matches(vp: ValidateProject) -> None:
    vp.write("ingestion_scripts/crm/customers.py", "def run(task):\n    pass\n")
    vp.pipeline("crm", [TaskSpec("load", parameters={"SCRIPT_NAME": "crm/customer.py"})])
    find(
        vp.check(), "FAIL", "crm.load", "SCRIPT_NAME='crm/customer.py': no such file", "did you mean: crm/customers.py"
    )


def test_input_params_must_be_a_json_object(vp: ValidateProject) -> None:
    vp.pipeline("crm", [TaskSpec("load", parameters={"INPUT_PARAMS": "[1, 2]"})])
    find(vp.check(), "FAIL", "crm.load", "INPUT_PARAMS: found a JSON array", "expected a JSON object")


@pytest.mark.parametrize(
    ("source", "parts"),
    [
        ("def run(task)\n    pass\n", ("SyntaxError at line 1", "python -m py_compile")),
        ("def main(task):\n    pass\n", ("found no top-level run", "define run")),
        ("async def run(task):\n    pass\n", ("found async def run at line 1", "not async")),
        ("def run(task, other):\n    pass\n", ("def run(task, other) at line 1, which takes more than the task",)),
        ("def run(task, *, mode):\n    pass\n", ("which takes more than the task",)),
    ],
)
def test_a_script_needs_a_plain_top_level_run_taking_the_task(
    vp: ValidateProject, source: str, parts: tuple[str, ...]
) -> None:
    vp.write("ingestion_scripts/load.py", source)
    vp.pipeline("crm", [TaskSpec("load", parameters={"SCRIPT_NAME": "load.py"})])
    find(vp.check(), "FAIL", "crm.load", "ingestion script load.py", *parts)


@pytest.mark.parametrize(
    "source",
    [
        "def run():\n    pass\n",
        "def run(task, retries=3, *args, **kwargs):\n    pass\n",
        "from helpers import run\n",
        "try:\n    import fast\nexcept ImportError:\n    fast = None\n\nif True:\n    def run(task):\n        pass\n",
        "import os\nos.system('touch imported')\n\ndef run(task):\n    pass\n",
    ],
)
def test_scripts_that_keep_the_contract_pass_and_are_never_imported(vp: ValidateProject, source: str) -> None:
    vp.write("ingestion_scripts/load.py", source)
    vp.pipeline("crm", [TaskSpec("load", parameters={"SCRIPT_NAME": "load.py"})])
    clean(vp.check())
    assert not (vp.root / "imported").exists()


# --- email alerts --------------------------------------------------------------------------------


def alert_pipeline(vp: ValidateProject, params: dict[str, str], kind: str = "ALWAYS") -> None:
    vp.pipeline(
        "sales",
        [TaskSpec("load"), TaskSpec("alert", handler="EMAIL_ALERT", parameters=params)],
        [("alert", "load", kind)],
    )


def test_recipients_must_be_addresses(vp: ValidateProject) -> None:
    alert_pipeline(vp, {**ALERT, "EMAIL_TO": "ops@example.com|not an address"})
    find(vp.check(), "FAIL", "sales.alert", "parameter EMAIL_TO: found 'not an address'", "email addresses such as")


def test_email_on_status_takes_outcomes(vp: ValidateProject) -> None:
    alert_pipeline(vp, {**ALERT, "EMAIL_ON_STATUS": "FAILED|FAILURE"})
    find(vp.check(), "FAIL", "sales.alert", "parameter EMAIL_ON_STATUS: found 'FAILURE'", "did you mean FAILED")


def test_unknown_email_tokens_fail(vp: ValidateProject) -> None:
    alert_pipeline(vp, {**ALERT, "EMAIL_SUBJECT_FAILED": "$$pipeline_code failed in $$run_id"})
    find(
        vp.check(),
        "FAIL",
        "sales.alert",
        "parameter EMAIL_SUBJECT_FAILED: found the token $$run_id",
        "$$status, $$pipeline_id, $$pipeline_run_id, $$pipeline_code, $$task_code, $$run_date, $$error_message",
    )


def test_run_tokens_pass_in_subjects_and_bodies(vp: ValidateProject) -> None:
    alert_pipeline(vp, {**ALERT, "EMAIL_SUBJECT": "$$pipeline_code $$pipeline_run_id of $$run_date: $$status"})
    clean(vp.check())


def test_every_sendable_outcome_needs_a_subject(vp: ValidateProject) -> None:
    alert_pipeline(vp, {"EMAIL_TO": "ops@example.com", "EMAIL_SUBJECT_FAILED": "failed", "EMAIL_BODY": "x"})
    find(vp.check(), "FAIL", "sales.alert", "parameter EMAIL_SUBJECT: found no subject for outcome SUCCESS")


def test_a_body_may_be_left_out_only_with_email_pipelines(vp: ValidateProject) -> None:
    only_failed = {"EMAIL_TO": "ops@example.com", "EMAIL_SUBJECT": "s", "EMAIL_ON_STATUS": "FAILED"}
    for code, extra in (("plain", {}), ("report", {"EMAIL_PIPELINES": "ALL"})):
        alert = TaskSpec("alert", handler="EMAIL_ALERT", parameters={**only_failed, **extra})
        vp.pipeline(code, [TaskSpec("load"), alert], [("alert", "load", "ALWAYS")])
    report = vp.check()
    find(report, "FAIL", "plain.alert", "parameter EMAIL_BODY: found no body for outcome FAILED", "EMAIL_PIPELINES")
    assert [f.where for f in report.findings] == ["plain.alert"]


def test_email_pipelines_names_active_pipelines(vp: ValidateProject) -> None:
    alert_pipeline(vp, {**ALERT, "EMAIL_PIPELINES": "sales|sale"})
    find(
        vp.check(),
        "FAIL",
        "sales.alert",
        "EMAIL_PIPELINES: found 'sale', not active pipeline code(s)",
        "did you mean sales",
    )


def test_an_alert_depends_on_every_last_task_unless_it_watches_failures_only(vp: ValidateProject) -> None:
    vp.pipeline(
        "sales",
        [TaskSpec("a"), TaskSpec("b"), TaskSpec("alert", handler="EMAIL_ALERT", parameters=ALERT)],
        [("alert", "a", "ALWAYS")],
    )
    find(
        vp.check(),
        "FAIL",
        "sales.alert",
        "no dependency on the pipeline's last task(s) b",
        "add ALWAYS dependencies on b",
    )
    vp.sql("UPDATE CFG_TASK_DEPENDENCY SET DEPENDENCY_TYPE = 'FAILURE';")
    clean(vp.check())


def test_an_alert_waiting_on_success_while_reporting_failures_warns(vp: ValidateProject) -> None:
    alert_pipeline(vp, ALERT, kind="SUCCESS")
    report = vp.check()
    find(
        report,
        "WARN",
        "sales.alert",
        "SUCCESS or HAS_DATA dependencies on sales.load while sending on",
        "make those dependencies ALWAYS",
    )
    assert report.valid
