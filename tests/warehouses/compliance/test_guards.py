"""The SQL guards: each refuses with SqlGuardError (exit 21, not retryable) before the target is touched."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from etl_craft.core.errors import SqlGuardError
from etl_craft.warehouse.dialect import load_dialect
from tests.fixtures.warehouse import SqlProject, numbers, params
from tests.warehouses.compliance.test_actions import merge, setup_merge

pytestmark = pytest.mark.sqlite

ALL_COLUMNS = "id, name, amount, row_id, pipeline_run_id, task_run_id, hash_key, delete_flag"


def loaded(p: SqlProject, action: str = "SCD1_MERGE") -> str:
    target = setup_merge(p, action)
    merge(p, action, target, [(1, "a", 10), (2, "b", 20)])
    p.new_run()
    return target


def refused(p: SqlProject, code: str, task: dict[str, str] | None, match: str) -> SqlGuardError:
    # Case-insensitive: a folding warehouse names the columns in its case (AMOUNT on Snowflake).
    with pytest.raises(SqlGuardError, match="(?i)" + match) as err:
        p.run_sql(code, task)
    assert err.value.exit_code == 21 and err.value.retryable is False
    return err.value


@pytest.mark.smoke
@pytest.mark.parametrize("action", ["SCD1_MERGE", "SCD2_MERGE", "DELETE_ROWS"])
def test_b5_null_merge_keys_are_refused(sqlp: SqlProject, action: str) -> None:
    wh = sqlp.warehouse
    target = loaded(sqlp, "SCD1_MERGE" if action == "DELETE_ROWS" else action)
    before = wh.contents("customers", "id, name, amount, row_id, pipeline_run_id")
    select = (
        "SELECT CAST(NULL AS INTEGER) AS id, CAST('n' AS VARCHAR(20)) AS name, CAST(1 AS DECIMAL(12,2)) AS amount"
        " UNION ALL SELECT NULL, 'm', 2 UNION ALL SELECT 3, 'c', 3"
    )
    task = params(SQL_ACTION=action, TARGET_OBJECT=target, MERGE_KEY="id", SOURCE_SQL=select)
    if action != "DELETE_ROWS":
        task["MERGE_COMPARE_COLUMNS"] = "name|amount"
    refused(sqlp, "load", task, r"returns 2 row\(s\) with a NULL in MERGE_KEY \(id\).*COALESCE the key")
    assert wh.contents("customers", "id, name, amount, row_id, pipeline_run_id") == before


@pytest.mark.parametrize(
    "action",
    ["CREATE_TABLE", "SETUP_TABLE", "OVERWRITE_TABLE", "APPEND_TABLE", "SCD1_MERGE", "SCD2_MERGE", "DELETE_ROWS"],
)
def test_b12_engine_managed_columns_are_refused(sqlp: SqlProject, action: str) -> None:
    wh = sqlp.warehouse
    target = loaded(sqlp, "SCD2_MERGE")
    before = wh.contents("customers", ALL_COLUMNS)
    task = params(SQL_ACTION=action, TARGET_OBJECT=target, SOURCE_SQL=f"SELECT * FROM {target}")
    if action == "SETUP_TABLE":
        task.update(TARGET_OBJECT=wh.table("fresh"), SETUP_FOR="APPEND_TABLE")
    if action in ("SCD1_MERGE", "SCD2_MERGE", "DELETE_ROWS"):
        task.update(MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name")
    refused(
        sqlp,
        "star",
        task,
        "(?i)the SELECT returns ROW_ID, PIPELINE_ID, PIPELINE_RUN_ID, TASK_RUN_ID, HASH_KEY.*instead of \\*",
    )
    assert wh.contents("customers", ALL_COLUMNS) == before
    assert wh.columns("fresh") == []


def test_b34_scratch_tables_are_unique_per_attempt_and_never_matched_by_bare_name(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = wh.table("snap")
    sqlp.run_sql(
        "setup",
        params(
            SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=target, SETUP_FOR="OVERWRITE_TABLE", SOURCE_SQL="SELECT 1 AS id"
        ),
    )
    task_run = sqlp.task_run("setup") + 1
    other = wh.provision.section_schema
    for schema in (wh.schema, other):
        wh.execute(f"CREATE TABLE {schema}.etl_stage_{task_run} (id INTEGER, intruder INTEGER)")
    sqlp.run_sql(
        "over",
        params(SQL_ACTION="OVERWRITE_TABLE", TARGET_OBJECT=target, SCHEMA_EVOLUTION=True, SOURCE_SQL="SELECT 7 AS id"),
    )
    assert [c for c, _ in wh.columns("snap")] == [
        "id",
        "row_id",
        "pipeline_id",
        "pipeline_run_id",
        "task_run_id",
        "update_date",
    ]
    assert wh.contents("snap", "id") == [(7,)]
    dialect = load_dialect(sqlp.config)
    with dialect.session(sqlp.db) as one:
        first = one.token
    with dialect.session(sqlp.db) as two:
        assert two.token != first
    wh.execute(f"DROP TABLE {other}.etl_stage_{task_run}")


@pytest.mark.parametrize("first_wins", [True, False])
def test_b41_dedupe_ties_between_differing_rows_are_refused(sqlp: SqlProject, first_wins: bool) -> None:
    wh = sqlp.warehouse
    target = loaded(sqlp, "SCD2_MERGE")
    before = wh.contents("customers", "id, name, active_flag")
    rows = ["(1, 'x', DATE '2026-01-01')", "(1, 'y', DATE '2026-01-01')", "(2, 'b', DATE '2026-01-01')"]
    if not first_wins:
        rows[0], rows[1] = rows[1], rows[0]
    select = (
        "SELECT CAST(id AS INTEGER) AS id, CAST(name AS VARCHAR(20)) AS name, CAST(20 AS DECIMAL(12,2)) AS amount,"
        f" updated_at FROM (VALUES {', '.join(rows)}) v(id, name, updated_at)"
    )
    task = params(
        SQL_ACTION="SCD2_MERGE", TARGET_OBJECT=target, MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name|amount",
        MERGE_DEDUPE_ORDER="updated_at DESC", SCHEMA_EVOLUTION=True, SOURCE_SQL=select,
    )  # fmt: skip
    refused(sqlp, "load", task, r"MERGE_DEDUPE_ORDER \(updated_at DESC\) leaves ties for 1 key\(s\), for example id=1")
    assert wh.contents("customers", "id, name, active_flag") == before


def test_dedupe_keeps_the_first_row_and_lets_identical_rows_tie(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = loaded(sqlp)
    select = (
        "SELECT CAST(id AS INTEGER) AS id, CAST(name AS VARCHAR(20)) AS name, CAST(amount AS DECIMAL(12,2)) AS amount"
        " FROM (VALUES (1, 'old', 1, 1), (1, 'new', 2, 2), (2, 'same', 5, 1), (2, 'same', 5, 1)) v(id, name, amount, version)"
        " ORDER BY version"
    )
    task = params(
        SQL_ACTION="SCD1_MERGE",
        TARGET_OBJECT=target,
        MERGE_KEY="id",
        MERGE_COMPARE_COLUMNS="name|amount",
        SOURCE_SQL=select,
    )
    refused(sqlp, "load", task, r"returns 2 key\(s\) more than once, for example id=.*MERGE_DEDUPE_ORDER")
    result = sqlp.run_sql("load", {**task, "MERGE_DEDUPE_ORDER": "amount DESC"})
    assert (result.counts.source, result.counts.updated) == (4, 2)
    assert wh.contents("customers", "id, name, amount") == [(1, "new", Decimal("2.00")), (2, "same", Decimal("5.00"))]


def test_b45_output_names_that_need_quoting_are_refused(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    task = params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=wh.table("names"), SOURCE_SQL='SELECT 1 AS "first name"')
    refused(sqlp, "create", task, "a column named 'first name', which needs quoting.*AS first_name")
    mixed = {**task, "SOURCE_SQL": 'SELECT 1 AS "CustomerId"'}
    case = load_dialect(sqlp.config).identifier_case
    if case is not None:  # a folding warehouse: only names already in the folded case are accepted
        refused(sqlp, "create", mixed, f"'CustomerId', which needs quoting.*in {case} case.*AS customer_id")
        assert wh.columns("names") == []
    else:  # names kept as written and matched case-insensitively
        sqlp.run_sql("create", mixed)
        assert wh.contents("names", "customerid") == [(1,)]


def test_float_compare_columns_are_refused(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = loaded(sqlp)
    before = wh.contents("customers", ALL_COLUMNS)
    select = "SELECT CAST(1 AS INTEGER) AS id, CAST('a' AS VARCHAR(20)) AS name, CAST(1 AS DECIMAL(12,2)) AS amount, CAST(1.5 AS DOUBLE PRECISION) AS ratio"
    task = params(
        SQL_ACTION="SCD1_MERGE", TARGET_OBJECT=target, MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name|ratio",
        SCHEMA_EVOLUTION=True, SOURCE_SQL=select,
    )  # fmt: skip
    refused(sqlp, "load", task, r"MERGE_COMPARE_COLUMNS includes ratio \((DOUBLE|FLOAT).*cast to DECIMAL in the SELECT")
    assert wh.contents("customers", ALL_COLUMNS) == before
    assert "ratio" not in dict(wh.columns("customers"))


def test_b43_a_table_format_other_than_the_targets_is_refused(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = loaded(sqlp)
    before = wh.contents("customers", ALL_COLUMNS)
    task = params(
        SQL_ACTION="SCD1_MERGE", TARGET_OBJECT=target, MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name",
        TABLE_FORMAT="iceberg", SOURCE_SQL=f"SELECT id, name, amount FROM {target}",
    )  # fmt: skip
    stored = load_dialect(sqlp.config).table_formats
    other = next(f for f in ("iceberg", "native") if f not in stored)
    refused(
        sqlp, "load", {**task, "TABLE_FORMAT": other}, f"TABLE_FORMAT {other}.*a table format .* stores: {stored[0]}"
    )
    assert wh.contents("customers", ALL_COLUMNS) == before
    refused(sqlp, "load", {**task, "TABLE_FORMAT": stored[0], "EXTERNAL_LOCATION": "s3://x"}, "EXTERNAL_LOCATION")


@pytest.mark.smoke
def test_writes_other_than_one_select_are_refused(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = loaded(sqlp)
    before = wh.contents("customers", ALL_COLUMNS)
    base = params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=wh.table("x"))
    refused(sqlp, "bad", {**base, "SOURCE_SQL": f"DELETE FROM {target}"}, r"not a query \(DELETE\)")
    refused(sqlp, "bad", {**base, "SOURCE_SQL": f"SELECT * INTO {wh.table('y')} FROM {target}"}, "SELECT ... INTO")
    refused(
        sqlp, "bad", {**base, "SOURCE_SQL": f"WITH d AS (DELETE FROM {target} RETURNING id) SELECT id FROM d"},
        "found DELETE inside the query|SQL that does not parse",  # a data-modifying WITH: PostgreSQL syntax
    )  # fmt: skip
    refused(sqlp, "bad", {**base, "SOURCE_SQL": "SELECT 1 AS id; SELECT 2 AS id"}, "found 2 statements")
    refused(sqlp, "bad", {**base, "SOURCE_SQL": "SELECT $$pipeline_idx AS id"}, r"the token \$\$pipeline_idx")
    refused(sqlp, "bad", {**base, "SOURCE_SQL": "SELECT 1 AS id", "RUN_DATE_SUBSTITUTION": "true"}, r"no \$\$run_date")
    refused(
        sqlp, "bad", {**base, "SOURCE_SQL": "SELECT 1 AS id", "RUN_DATE_SUBSTITUTION": "yes"}, "exactly true or false"
    )
    refused(sqlp, "bad", {**base, "TARGET_OBJECT": "customers", "SOURCE_SQL": "SELECT 1 AS id"}, "schema.table")
    assert wh.contents("customers", ALL_COLUMNS) == before


def test_target_checks_before_writing(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = loaded(sqlp)
    before = wh.contents("customers", ALL_COLUMNS)
    task = params(SQL_ACTION="SCD1_MERGE", TARGET_OBJECT=target, MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name")
    refused(sqlp, "load", {**task, "SOURCE_SQL": "SELECT CAST(1 AS INTEGER) AS id, CAST('a' AS VARCHAR(20)) AS name"},
            r"column\(s\) amount that the SELECT no longer returns.*NULL AS amount")  # fmt: skip
    wh.execute(f"CREATE TABLE {wh.table('handmade')} AS SELECT * FROM {target}")
    refused(sqlp, "hand", {**task, "TARGET_OBJECT": wh.table("handmade"), "SOURCE_SQL": f"SELECT id, name, amount FROM {target}"},
            f"HASH_KEY version unknown.*etl-craft rehash --target {wh.table('handmade')}")  # fmt: skip
    wh.execute(f"ALTER TABLE {wh.table('handmade')} DROP COLUMN hash_key")
    refused(sqlp, "hand", None, "has no HASH_KEY column.*SETUP_TABLE")
    assert wh.contents("customers", ALL_COLUMNS) == before


def test_b36_scd1_updates_are_one_set_based_statement(sqlp: SqlProject, caplog: pytest.LogCaptureFixture) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, "SCD1_MERGE")
    rows = 100_000
    select = (
        "SELECT CAST(i AS INTEGER) AS id, CAST('n' || CAST(i AS VARCHAR) AS VARCHAR(20)) AS name,"
        f" CAST({{amount}} AS DECIMAL(12,2)) AS amount FROM {numbers(rows)}"
    )
    load = params(SQL_ACTION="SCD1_MERGE", TARGET_OBJECT=target, MERGE_KEY="id", MERGE_COMPARE_COLUMNS="name|amount")
    assert sqlp.run_sql("load", {**load, "SOURCE_SQL": select.format(amount="i")}).counts.inserted == rows
    sqlp.new_run()
    caplog.set_level("DEBUG", logger="etl_craft.warehouse")
    result = sqlp.run_sql("load", {**load, "SOURCE_SQL": select.format(amount="i + 1")})
    assert (result.counts.updated, result.counts.inserted) == (rows, 0)
    # UPDATE ... FROM the stage, or MERGE INTO ... USING the stage where the warehouse has no UPDATE ... FROM.
    updates = [r.getMessage() for r in caplog.records if re.search(r"\n(UPDATE|MERGE INTO) ", r.getMessage())]
    assert len(updates) == 1
    source = "\nUSING " if "\nMERGE INTO " in updates[0] else "\nFROM "
    assert (
        "etl_stage_" in updates[0].split(source, 1)[1].split("\n", 1)[0]
        and "SELECT" not in updates[0].split("SET", 1)[1]
    )
    assert wh.scalar(f"SELECT SUM(amount) - SUM(id) FROM {target}") == rows
