"""Failures mid-action, retries and concurrent writers: the target keeps its old rows, nothing doubles."""

from __future__ import annotations

import dataclasses
import multiprocessing
from decimal import Decimal

import pytest

from etl_craft.core.errors import HandlerError, InjectedFault
from etl_craft.engine.schema import tables as t
from etl_craft.warehouse.dialect import load_dialect
from tests.fixtures.warehouse import SqlProject, numbers, params
from tests.warehouses.child import run_sql_task
from tests.warehouses.compliance.test_actions import _values, merge, setup_merge

pytestmark = pytest.mark.sqlite

ENGINE = (
    "row_id BIGINT, pipeline_id BIGINT, pipeline_run_id BIGINT, task_run_id BIGINT, hash_key VARCHAR(32),"
    " create_date TIMESTAMP WITH TIME ZONE, created_by VARCHAR, update_date TIMESTAMP WITH TIME ZONE,"
    " updated_by VARCHAR, delete_flag VARCHAR(1), active_flag VARCHAR(1)"
)


def checked_target(p: SqlProject, action: str) -> str:
    """A hand-made target whose amount must stay under 100, filled by a first merge."""
    target = p.warehouse.table("customers")
    p.warehouse.execute(
        f"CREATE TABLE {target} (id INTEGER, name VARCHAR(20), amount DECIMAL(12,2) CHECK (amount < 100), {ENGINE})"
    )
    with p.db.write() as conn:
        conn.execute(
            t.aud_target_hash_version.insert().values(
                target_object=target.lower(), hash_version=2, recomputed_at=sa_now()
            )
        )
    merge(p, action, target, [(1, "a", 10), (2, "b", 20), (3, "c", 30)])
    p.new_run()
    return target


def sa_now():
    from etl_craft.core.clock import utc_now

    return utc_now()


def test_b37_w5_a_failed_create_table_keeps_the_old_table(sqlp: SqlProject, monkeypatch: pytest.MonkeyPatch) -> None:
    wh = sqlp.warehouse
    create = params(
        SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=wh.table("t"), SOURCE_SQL=_values([(1, "a", 1), (2, "b", 2)])
    )
    sqlp.run_sql("create", create)
    before = wh.contents("t", "id, name, amount, row_id, pipeline_run_id")
    sqlp.new_run()
    monkeypatch.setenv("ETL_CRAFT_FAULT", "sql.after_write")
    with pytest.raises(InjectedFault):
        sqlp.run_sql("create", {**create, "SOURCE_SQL": "SELECT 5 AS other"})
    if load_dialect(sqlp.config).replace_strategy == "create_or_replace":
        # One atomic CREATE OR REPLACE, committed as it runs (Snowflake's DDL): the fault after it
        # finds the new table complete. Old or new, never empty or missing (S3.G.3).
        assert [c for c, _ in wh.columns("t")] == [
            "other", "row_id", "pipeline_id", "pipeline_run_id", "task_run_id"
        ]  # fmt: skip
        assert wh.contents("t", "other, row_id") == [(5, 1)]
        return
    assert wh.contents("t", "id, name, amount, row_id, pipeline_run_id") == before
    assert [c for c, _ in wh.columns("t")][:3] == ["id", "name", "amount"]


@pytest.mark.parametrize("action", ["OVERWRITE_TABLE", "SCD1_MERGE", "SCD2_MERGE", "APPEND_TABLE"])
def test_s3g3_a_crash_after_the_writes_leaves_the_old_or_the_new_rows(
    sqlp: SqlProject, monkeypatch: pytest.MonkeyPatch, action: str
) -> None:
    """A crash after the action's writes, before its commit: a warehouse whose statements share one
    transaction keeps the old rows; one whose statements commit as they run has the new rows whole."""
    wh = sqlp.warehouse
    target = wh.table("t")
    setup = "SCD2_MERGE" if action == "SCD2_MERGE" else action
    sqlp.run_sql(
        "setup",
        params(
            SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=target, SETUP_FOR=setup,
            SOURCE_SQL="SELECT CAST(1 AS INTEGER) AS id, CAST('a' AS VARCHAR(20)) AS name",
        ),
    )  # fmt: skip
    keyed = {"MERGE_KEY": "id", "MERGE_COMPARE_COLUMNS": "name"} if "MERGE" in action else {}
    task = params(SQL_ACTION=action, TARGET_OBJECT=target, **keyed)
    old = "SELECT CAST(1 AS INTEGER) AS id, CAST('a' AS VARCHAR(20)) AS name UNION ALL SELECT 2, 'b'"
    new = "SELECT CAST(2 AS INTEGER) AS id, CAST('B' AS VARCHAR(20)) AS name UNION ALL SELECT 3, 'c'"
    sqlp.run_sql("load", {**task, "SOURCE_SQL": old})
    before = wh.contents("t", "id, name, row_id")
    sqlp.new_run()
    monkeypatch.setenv("ETL_CRAFT_FAULT", "sql.after_write")
    with pytest.raises(InjectedFault):
        sqlp.run_sql("load", {**task, "SOURCE_SQL": new})
    monkeypatch.delenv("ETL_CRAFT_FAULT")
    new_rows = {
        "OVERWRITE_TABLE": [(2, "B", 1), (3, "c", 2)],
        "APPEND_TABLE": [(1, "a", 1), (2, "B", 3), (2, "b", 2), (3, "c", 4)],
        "SCD1_MERGE": [(1, "a", 1), (2, "B", 2), (3, "c", 3)],
        "SCD2_MERGE": [(1, "a", 1), (2, "B", 3), (2, "b", 2), (3, "c", 4)],
    }[action]
    found = wh.contents("t", "id, name, row_id")
    # Old where the action's writes share its one transaction; new where they committed as they ran
    # (Trino's statements, Snowflake's DROP of the stage, which commits the DML before it).
    assert found in (before, new_rows)
    if load_dialect(sqlp.config).transactional and found == new_rows:
        assert load_dialect(sqlp.config).replace_strategy == "create_or_replace"  # DDL that commits


@pytest.mark.smoke
@pytest.mark.requires("check_constraints")
def test_a_warehouse_error_mid_overwrite_keeps_the_old_rows(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = wh.table("snap")
    wh.execute(
        f"CREATE TABLE {target} (id INTEGER, amount DECIMAL(12,2) CHECK (amount < 100),"
        " row_id BIGINT, pipeline_id BIGINT, pipeline_run_id BIGINT, task_run_id BIGINT, update_date TIMESTAMP)"
    )
    over = params(
        SQL_ACTION="OVERWRITE_TABLE",
        TARGET_OBJECT=target,
        SOURCE_SQL="SELECT 1 AS id, 10 AS amount UNION ALL SELECT 2, 20",
    )
    sqlp.run_sql("over", over)
    before = wh.contents("snap", "id, amount, row_id, pipeline_run_id")
    sqlp.new_run()
    failing = (
        "SELECT id, CAST(id * 10 AS DECIMAL(12,2)) AS amount FROM (SELECT * FROM (VALUES (1), (2), (3), (50)) v(id)) x"
    )
    with pytest.raises(HandlerError, match=rf"^OVERWRITE_TABLE {target}: insert rows failed: \w+: .*") as err:
        sqlp.run_sql("over", {**over, "SOURCE_SQL": failing})
    assert err.value.exit_code == 15 and err.value.retryable
    assert wh.contents("snap", "id, amount, row_id, pipeline_run_id") == before


@pytest.mark.requires("check_constraints")
@pytest.mark.parametrize("action", ["SCD1_MERGE", "SCD2_MERGE"])
def test_a_warehouse_error_mid_merge_keeps_the_old_rows(sqlp: SqlProject, action: str) -> None:
    wh = sqlp.warehouse
    target = checked_target(sqlp, action)
    before = wh.contents("customers", "id, name, amount, row_id, pipeline_run_id, active_flag, delete_flag")
    # Key 2 changes name (fine); key 3 breaks the CHECK; key 4 is new.
    step = "update changed rows" if action == "SCD1_MERGE" else "insert new versions"
    with pytest.raises(HandlerError, match=rf"{action} {target}: {step} failed: "):
        merge(sqlp, action, target, [(1, "a", 10), (2, "B", 20), (3, "c", 300), (4, "d", 40)])
    assert wh.contents("customers", "id, name, amount, row_id, pipeline_run_id, active_flag, delete_flag") == before


def test_w4_an_append_that_failed_after_committing_is_retried_once(
    sqlp: SqlProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    wh = sqlp.warehouse
    target = wh.table("events")
    sqlp.run_sql(
        "setup",
        params(SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=target, SETUP_FOR="APPEND_TABLE", SOURCE_SQL="SELECT 1 AS id"),
    )
    append = params(SQL_ACTION="APPEND_TABLE", TARGET_OBJECT=target, SOURCE_SQL="SELECT 1 AS id UNION ALL SELECT 2")
    sqlp.run_sql("append", append)
    sqlp.new_run()
    monkeypatch.setenv("ETL_CRAFT_FAULT", "sql.after_commit")
    with pytest.raises(InjectedFault):
        sqlp.run_sql("append", finish=False)  # the rows are in, the attempt is not recorded
    monkeypatch.delenv("ETL_CRAFT_FAULT")
    assert wh.scalar(f"SELECT COUNT(*) FROM {target}") == 4
    retry = sqlp.run_sql("append")  # a new attempt of the same task run
    assert (retry.counts.deleted, retry.counts.inserted, retry.counts.target) == (2, 2, 4)
    task_run = sqlp.task_run("append")
    assert wh.contents("events", "id, task_run_id") == [
        (1, task_run - 1),
        (1, task_run),
        (2, task_run - 1),
        (2, task_run),
    ]
    assert any("earlier attempt" in w for w in retry.warnings)
    sqlp.new_run()
    sqlp.run_sql("append", finish=False)
    empty_retry = sqlp.run_sql("append", {**append, "SOURCE_SQL": "SELECT 1 AS id WHERE 1 = 0"})
    assert (empty_retry.counts.deleted, empty_retry.counts.inserted, empty_retry.counts.target) == (2, 0, 4)


@pytest.mark.requires("processes")
def test_b38_two_concurrent_appends_never_repeat_a_row_id(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = wh.table("events")
    # A computed ROW_ID (no identity): allocation relies on the target lock on every warehouse.
    wh.execute(
        f"CREATE TABLE {target} (id BIGINT, row_id BIGINT, pipeline_id BIGINT, pipeline_run_id BIGINT,"
        " task_run_id BIGINT, create_date TIMESTAMP WITH TIME ZONE)"
    )
    rows = 20000
    select = f"SELECT CAST(i AS BIGINT) AS id FROM {numbers(rows)}"
    contexts = []
    for code in ("left", "right"):
        sqlp.task(code, params(SQL_ACTION="APPEND_TABLE", TARGET_OBJECT=target, SOURCE_SQL=select))
        ctx = sqlp.context(code)
        skip = ("config", "engine_db", "log", "trigger_kind", "handler", "stored_offset", "run_date", "parameters")
        fields = {f.name: getattr(ctx, f.name) for f in dataclasses.fields(ctx) if f.name not in skip}
        fields.update(parameters=dict(ctx.parameters), run_date=ctx.run_date.isoformat())
        contexts.append(fields)
    sqlp.close()
    spawn = multiprocessing.get_context("spawn")
    results = spawn.Queue()
    children = [spawn.Process(target=run_sql_task, args=(str(sqlp.config_path), f, results)) for f in contexts]
    for child in children:
        child.start()
    outcomes = [results.get(timeout=120) for _ in children]
    for child in children:
        child.join(timeout=60)
    assert outcomes == [("ok", rows), ("ok", rows)]
    assert wh.rows(f"SELECT COUNT(*), COUNT(DISTINCT row_id), MIN(row_id), MAX(row_id) FROM {target}") == [
        (2 * rows, 2 * rows, 1, 2 * rows)
    ]


def test_merge_counts_match_the_rows(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, "SCD1_MERGE")
    result = merge(sqlp, "SCD1_MERGE", target, [(i, f"n{i}", i) for i in range(1, 51)])
    assert (result.counts.source, result.counts.inserted, result.counts.target) == (50, 50, 50)
    assert wh.scalar(f"SELECT SUM(amount) FROM {target}") == Decimal("1275.00")
