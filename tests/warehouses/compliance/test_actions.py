"""Every SQL action on every local warehouse, asserting the whole target after each run.

The audit timestamps are checked for presence; every other column (business values, ROW_ID, the
executing identities and the flags) is compared exactly.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from etl_craft.core.errors import SqlGuardError
from etl_craft.warehouse.dialect import load_dialect
from tests.fixtures.warehouse import SqlProject, Warehouse, params

pytestmark = pytest.mark.sqlite

SCD1_COLUMNS = "id, name, amount, row_id, pipeline_run_id, task_run_id, delete_flag"
SCD2_COLUMNS = "id, name, amount, pipeline_run_id, active_flag, delete_flag"


def _values(rows: list[tuple[object, ...]]) -> str:
    return " UNION ALL ".join(
        "SELECT " + ", ".join(("NULL" if v is None else repr(v) if isinstance(v, str) else str(v)) for v in row)
        if i
        else "SELECT "
        + ", ".join(
            f"CAST({'NULL' if v is None else repr(v) if isinstance(v, str) else str(v)} AS {ty}) AS {name}"
            for v, (name, ty) in zip(
                row, (("id", "INTEGER"), ("name", "VARCHAR(20)"), ("amount", "DECIMAL(12,2)")), strict=False
            )
        )
        for i, row in enumerate(rows)
    )


def setup_merge(p: SqlProject, action: str, table: str = "customers") -> str:
    target = p.warehouse.table(table)
    p.run_sql(
        "setup",
        params(
            SQL_ACTION="SETUP_TABLE",
            TARGET_OBJECT=target,
            SETUP_FOR=action,
            SOURCE_SQL="SELECT CAST(1 AS INTEGER) AS id, CAST('x' AS VARCHAR(20)) AS name,"
            " CAST(0 AS DECIMAL(12,2)) AS amount",
        ),
    )
    return target


def merge(p: SqlProject, action: str, target: str, rows: list[tuple[object, ...]], **extra: object):
    return p.run_sql(
        "load",
        params(
            SQL_ACTION=action,
            TARGET_OBJECT=target,
            MERGE_KEY="id",
            MERGE_COMPARE_COLUMNS="name|amount",
            SOURCE_SQL=_values(rows),
            **extra,
        ),
    )


@pytest.mark.smoke
def test_create_table_loads_and_replaces_with_new_row_ids(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    first = sqlp.run_sql(
        "create",
        params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=wh.table("t"), SOURCE_SQL=_values([(1, "a", 1), (2, "b", 2)])),
    )
    assert (first.counts.source, first.counts.inserted, first.counts.target, first.counts.rows_written) == (2, 2, 2, 2)
    run1 = sqlp.run_id
    assert wh.contents("t", "id, name, amount, row_id, pipeline_id, pipeline_run_id") == [
        (1, "a", Decimal("1.00"), 1, sqlp.pipeline_id, run1),
        (2, "b", Decimal("2.00"), 2, sqlp.pipeline_id, run1),
    ]
    run2 = sqlp.new_run()
    sqlp.run_sql(
        "create", params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=wh.table("t"), SOURCE_SQL=_values([(3, "c", 3)]))
    )
    assert wh.contents("t", "id, name, amount, row_id, pipeline_run_id") == [(3, "c", Decimal("3.00"), 1, run2)]
    assert [c for c, _ in wh.columns("t")] == [
        "id",
        "name",
        "amount",
        "row_id",
        "pipeline_id",
        "pipeline_run_id",
        "task_run_id",
    ]


def test_setup_table_creates_an_empty_target_once_and_leaves_it_alone(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, "SCD2_MERGE")
    assert [c for c, _ in wh.columns("customers")] == [
        "id", "name", "amount", "row_id", "pipeline_id", "pipeline_run_id", "task_run_id",
        "hash_key", "create_date", "created_by", "update_date", "updated_by", "delete_flag", "active_flag",
    ]  # fmt: skip
    assert wh.contents("customers", "id") == []
    wh.execute(f"INSERT INTO {target} (id, name) VALUES (9, 'kept')")
    again = sqlp.run_sql("setup")
    assert wh.contents("customers", "id, name") == [(9, "kept")]
    assert again.counts.rows_written is None
    assert any("untouched" in w for w in again.warnings)


def test_setup_table_infers_the_writer_from_sibling_tasks(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = wh.table("facts")
    sqlp.task("append", params(SQL_ACTION="APPEND_TABLE", TARGET_OBJECT=target, SOURCE_SQL="SELECT 1 AS id"))
    sqlp.run_sql("setup", params(SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=target, SOURCE_SQL="SELECT 1 AS id"))
    assert [c for c, _ in wh.columns("facts")] == [
        "id",
        "row_id",
        "pipeline_id",
        "pipeline_run_id",
        "task_run_id",
        "create_date",
    ]
    sqlp.task("merge", params(SQL_ACTION="SCD1_MERGE", TARGET_OBJECT=wh.table("other"), SOURCE_SQL="SELECT 1 AS id"))
    sqlp.task(
        "append2", params(SQL_ACTION="APPEND_TABLE", TARGET_OBJECT=wh.table("other"), SOURCE_SQL="SELECT 1 AS id")
    )
    with pytest.raises(SqlGuardError, match=r"different actions: APPEND_TABLE, SCD1_MERGE.*SETUP_FOR"):
        sqlp.run_sql(
            "setup2", params(SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=wh.table("other"), SOURCE_SQL="SELECT 1 AS id")
        )
    with pytest.raises(SqlGuardError, match=r"no other SQL task"):
        sqlp.run_sql(
            "setup3", params(SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=wh.table("lonely"), SOURCE_SQL="SELECT 1 AS id")
        )


def test_overwrite_table_replaces_rows_and_keeps_the_definition(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = wh.table("snap")
    sqlp.run_sql(
        "setup",
        params(
            SQL_ACTION="SETUP_TABLE",
            TARGET_OBJECT=target,
            SETUP_FOR="OVERWRITE_TABLE",
            SOURCE_SQL=_values([(1, "a", 1)]),
        ),
    )
    first = sqlp.run_sql(
        "over",
        params(SQL_ACTION="OVERWRITE_TABLE", TARGET_OBJECT=target, SOURCE_SQL=_values([(1, "a", 1), (2, "b", 2)])),
    )
    assert (first.counts.inserted, first.counts.deleted) == (2, 0)
    run2 = sqlp.new_run()
    second = sqlp.run_sql("over")
    assert (second.counts.inserted, second.counts.deleted, second.counts.target) == (2, 2, 2)
    # New ROW_IDs: an identity column continues its sequence, a computed key restarts.
    first_id = 3 if load_dialect(sqlp.config).identity_columns else 1
    assert wh.contents("snap", "id, name, amount, row_id, pipeline_run_id") == [
        (1, "a", Decimal("1.00"), first_id, run2),
        (2, "b", Decimal("2.00"), first_id + 1, run2),
    ]
    assert wh.scalar(f"SELECT COUNT(*) FROM {target} WHERE update_date IS NULL") == 0
    with pytest.raises(SqlGuardError, match=r"no table .*missing.*SETUP_TABLE"):
        sqlp.run_sql(
            "over2",
            params(SQL_ACTION="OVERWRITE_TABLE", TARGET_OBJECT=wh.table("missing"), SOURCE_SQL="SELECT 1 AS id"),
        )


def test_append_table_stamps_the_task_run_and_appends(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = wh.table("events")
    sqlp.run_sql(
        "setup",
        params(
            SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=target, SETUP_FOR="APPEND_TABLE", SOURCE_SQL=_values([(1, "a", 1)])
        ),
    )
    first = sqlp.run_sql(
        "append",
        params(SQL_ACTION="APPEND_TABLE", TARGET_OBJECT=target, SOURCE_SQL=_values([(1, "a", 1), (2, "b", 2)])),
    )
    tr1 = sqlp.task_run("append")
    sqlp.new_run()
    second = sqlp.run_sql("append")
    tr2 = sqlp.task_run("append")
    assert (first.counts.inserted, second.counts.inserted, second.counts.deleted, second.counts.target) == (2, 2, 0, 4)
    assert wh.contents("events", "row_id, id, name, task_run_id") == [
        (1, 1, "a", tr1), (2, 2, "b", tr1), (3, 1, "a", tr2), (4, 2, "b", tr2),
    ]  # fmt: skip
    assert wh.scalar(f"SELECT COUNT(*) FROM {target} WHERE create_date IS NULL") == 0


def test_append_table_refuses_a_target_without_task_run_id(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    wh.execute(
        f"CREATE TABLE {wh.table('legacy')} (id INTEGER, row_id BIGINT, pipeline_run_id BIGINT, create_date TIMESTAMP)"
    )
    with pytest.raises(
        SqlGuardError, match=r"no PIPELINE_ID, TASK_RUN_ID.*etl-craft upgrade-targets --action APPEND_TABLE"
    ) as err:
        sqlp.run_sql(
            "append", params(SQL_ACTION="APPEND_TABLE", TARGET_OBJECT=wh.table("legacy"), SOURCE_SQL="SELECT 1 AS id")
        )
    assert err.value.exit_code == 21 and not err.value.retryable
    assert wh.contents("legacy", "id") == []


@pytest.mark.smoke
@pytest.mark.parametrize("action", ["SCD1_MERGE", "SCD2_MERGE"])
def test_merge_first_load_unchanged_resend_and_changed_rows(sqlp: SqlProject, action: str) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, action)
    first = merge(sqlp, action, target, [(1, "a", 10), (2, "b", 20), (3, "c", 30)])
    run1 = sqlp.run_id
    assert (first.counts.inserted, first.counts.updated, first.counts.rows_written) == (3, 0, 3)
    sqlp.new_run()
    same = merge(sqlp, action, target, [(1, "a", 10), (2, "b", 20), (3, "c", 30)])
    assert (same.counts.inserted, same.counts.updated, same.counts.rows_written, same.counts.target) == (0, 0, 0, 3)
    run3 = sqlp.new_run()
    changed = merge(sqlp, action, target, [(1, "a", 10), (2, "B", 20), (3, "c", 31), (4, "d", 40)])
    if action == "SCD1_MERGE":
        assert (changed.counts.inserted, changed.counts.updated) == (1, 2)
        assert wh.contents("customers", "id, name, amount, pipeline_run_id, delete_flag") == [
            (1, "a", Decimal("10.00"), run1, "N"),
            (2, "B", Decimal("20.00"), run3, "N"),
            (3, "c", Decimal("31.00"), run3, "N"),
            (4, "d", Decimal("40.00"), run3, "N"),
        ]
        assert wh.contents("customers", "row_id") == [(1,), (2,), (3,), (4,)]
    else:
        assert (changed.counts.inserted, changed.counts.updated, changed.counts.target) == (3, 2, 6)
        assert wh.contents("customers", SCD2_COLUMNS) == [
            (1, "a", Decimal("10.00"), run1, "Y", "N"),
            (2, "B", Decimal("20.00"), run3, "Y", "N"),
            (2, "b", Decimal("20.00"), run3, "N", "N"),
            (3, "c", Decimal("30.00"), run3, "N", "N"),
            (3, "c", Decimal("31.00"), run3, "Y", "N"),
            (4, "d", Decimal("40.00"), run3, "Y", "N"),
        ]
    assert wh.scalar(f"SELECT COUNT(*) FROM {target} WHERE create_date IS NULL OR created_by IS NULL") == 0


@pytest.mark.parametrize("action", ["SCD1_MERGE", "SCD2_MERGE"])
def test_merge_nulls_in_compare_columns(sqlp: SqlProject, action: str) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, action)
    merge(sqlp, action, target, [(1, None, 1), (2, "", 2), (3, "x", None)])
    sqlp.new_run()
    same = merge(sqlp, action, target, [(1, None, 1), (2, "", 2), (3, "x", None)])
    assert same.counts.rows_written == 0
    sqlp.new_run()
    changed = merge(sqlp, action, target, [(1, "", 1), (2, None, 2), (3, "x", 0)])
    assert changed.counts.updated == 3
    active = "" if action == "SCD1_MERGE" else " WHERE active_flag = 'Y'"
    assert wh.rows(f"SELECT id, name, amount FROM {target}{active} ORDER BY id") == [
        (1, "", Decimal("1.00")),
        (2, None, Decimal("2.00")),
        (3, "x", Decimal("0.00")),
    ]


def test_scd1_preserve_target_keeps_values_where_the_source_is_null(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, "SCD1_MERGE")
    merge(sqlp, "SCD1_MERGE", target, [(1, "a", 10), (2, "b", 20)], PRESERVE_TARGET=True)
    sqlp.new_run()
    result = merge(sqlp, "SCD1_MERGE", target, [(1, None, 11), (2, None, None)], PRESERVE_TARGET=True)
    assert result.counts.updated == 1
    assert wh.contents("customers", "id, name, amount") == [(1, "a", Decimal("11.00")), (2, "b", Decimal("20.00"))]


@pytest.mark.parametrize("action", ["SCD1_MERGE", "SCD2_MERGE"])
def test_merge_with_a_composite_key(sqlp: SqlProject, action: str) -> None:
    wh = sqlp.warehouse
    target = wh.table("prices")
    select = (
        "SELECT CAST(region AS VARCHAR(4)) AS region, CAST(sku AS INTEGER) AS sku, CAST(price AS DECIMAL(12,2)) AS price"
        " FROM (VALUES {rows}) v(region, sku, price)"
    )
    first = select.format(rows="('EU', 1, 1.00), ('US', 1, 2.00), ('EU', 2, 3.00)")
    sqlp.run_sql("setup", params(SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=target, SETUP_FOR=action, SOURCE_SQL=first))
    load = params(SQL_ACTION=action, TARGET_OBJECT=target, MERGE_KEY="region|sku", MERGE_COMPARE_COLUMNS="price")
    sqlp.run_sql("load", {**load, "SOURCE_SQL": first})
    sqlp.new_run()
    second = select.format(rows="('EU', 1, 1.00), ('US', 1, 2.50), ('EU', 2, 3.00), ('US', 2, 4.00)")
    result = sqlp.run_sql("load", {**load, "SOURCE_SQL": second})
    assert (result.counts.inserted, result.counts.updated) == ((1, 1) if action == "SCD1_MERGE" else (2, 1))
    active = "" if action == "SCD1_MERGE" else " WHERE active_flag = 'Y'"
    assert wh.rows(f"SELECT region, sku, price FROM {target}{active} ORDER BY region, sku") == [
        ("EU", 1, Decimal("1.00")),
        ("EU", 2, Decimal("3.00")),
        ("US", 1, Decimal("2.50")),
        ("US", 2, Decimal("4.00")),
    ]


@pytest.mark.parametrize("action", ["SCD1_MERGE", "SCD2_MERGE"])
def test_b17_soft_deleted_keys_come_back(sqlp: SqlProject, action: str) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, action)
    merge(sqlp, action, target, [(1, "a", 10), (2, "b", 20)])
    run2 = sqlp.new_run()
    deleted = sqlp.run_sql(
        "delete",
        params(
            SQL_ACTION="DELETE_ROWS",
            TARGET_OBJECT=target,
            MERGE_KEY="id",
            SOURCE_SQL="SELECT 1 AS id UNION ALL SELECT 2",
        ),
    )
    assert deleted.counts.deleted == 2
    run3 = sqlp.new_run()
    revived = merge(sqlp, action, target, [(1, "a", 10), (2, "b2", 20)])
    if action == "SCD1_MERGE":
        assert (revived.counts.updated, revived.counts.inserted) == (2, 0)
        assert wh.contents("customers", "id, name, delete_flag, pipeline_run_id") == [
            (1, "a", "N", run3),
            (2, "b2", "N", run3),
        ]
    else:
        assert (revived.counts.updated, revived.counts.inserted) == (2, 2)
        assert wh.contents("customers", "id, name, active_flag, delete_flag, pipeline_run_id") == [
            (1, "a", "N", "Y", run2),  # the flagged versions keep the deletion's run
            (1, "a", "Y", "N", run3),
            (2, "b", "N", "Y", run2),
            (2, "b2", "Y", "N", run3),
        ]


def _versions(wh: Warehouse) -> list[tuple[object, ...]]:
    return wh.contents(
        "customers",
        "id, name, active_flag, delete_flag, pipeline_run_id, task_run_id, create_date, update_date",
        order="id, create_date, row_id",
    )


def test_scd2_history_keeps_its_dates(sqlp: SqlProject) -> None:
    """A key deleted in one run and sent again two runs later keeps its first version's deletion stamp."""
    wh = sqlp.warehouse
    target = setup_merge(sqlp, "SCD2_MERGE")
    merge(sqlp, "SCD2_MERGE", target, [(1, "a", 10), (2, "b", 20), (3, "c", 30)])
    run1, task1 = sqlp.run_id, sqlp.task_run_id("load")
    run2 = sqlp.new_run()
    gone = merge(sqlp, "SCD2_MERGE", target, [(1, "a", 10), (3, "c", 31)], DELETE_MISSING_KEYS=True)
    task2 = sqlp.task_run_id("load")
    assert (gone.counts.inserted, gone.counts.updated, gone.counts.deleted, gone.counts.rows_written) == (1, 1, 1, 3)
    after2 = _versions(wh)
    (c1, u1), (c2, u2), (c3, u3), (c3b, _u3b) = [(r[6], r[7]) for r in after2]
    assert [r[:6] for r in after2] == [
        (1, "a", "Y", "N", run1, task1),
        (2, "b", "Y", "Y", run2, task2),  # deleted: flagged, stamped with the run that found it missing
        (3, "c", "N", "N", run2, task2),
        (3, "c", "Y", "N", run2, task2),
    ]
    assert u3 == c3b and u2 == u3 and u1 == c1 and c2 == c1 and c3 == c1  # closing and inserting share one stamp
    assert u2 > c2

    sqlp.new_run()
    absent = merge(sqlp, "SCD2_MERGE", target, [(1, "a", 10), (3, "c", 31)], DELETE_MISSING_KEYS=True)
    assert (absent.counts.deleted, absent.counts.rows_written) == (0, 0)  # already flagged: left as it was
    assert _versions(wh) == after2

    run4 = sqlp.new_run()
    back = merge(sqlp, "SCD2_MERGE", target, [(1, "a", 10), (2, "b", 20), (3, "c", 31)], DELETE_MISSING_KEYS=True)
    task4 = sqlp.task_run_id("load")
    assert (back.counts.inserted, back.counts.updated, back.counts.deleted) == (1, 1, 0)
    after4 = _versions(wh)
    assert after4[1] == (2, "b", "N", "Y", run2, task2, c2, u2)  # the deletion stamp survives the revival
    assert after4[2][:6] == (2, "b", "Y", "N", run4, task4)
    assert [after4[0], *after4[3:]] == [after2[0], *after2[2:]]

    current = f"SELECT id, name FROM {target} WHERE active_flag = 'Y' AND delete_flag = 'N' ORDER BY id"
    assert wh.rows(current) == [(1, "a"), (2, "b"), (3, "c")]
    as_of = (
        f"SELECT id, amount FROM {target} WHERE create_date <= %(t)s"
        f" AND ((active_flag = 'Y' AND delete_flag = 'N') OR %(t)s < update_date) ORDER BY id"
    )
    assert _as_of(wh, as_of, c1) == [(1, Decimal("10.00")), (2, Decimal("20.00")), (3, Decimal("30.00"))]
    assert _as_of(wh, as_of, u2) == [(1, Decimal("10.00")), (3, Decimal("31.00"))]
    assert _as_of(wh, as_of, after4[2][6]) == [(1, Decimal("10.00")), (2, Decimal("20.00")), (3, Decimal("31.00"))]


def _as_of(wh: Warehouse, sql: str, moment: object) -> list[tuple[object, ...]]:
    """The documented "as of T" predicate (docs/guides/sql-tasks.md, SCD2 history), with T a stored stamp."""
    literal = f"CAST('{moment.isoformat()}' AS TIMESTAMP WITH TIME ZONE)"  # type: ignore[attr-defined]
    return wh.rows(sql.replace("%(t)s", literal))


def test_delete_missing_keys_is_refused_on_other_actions(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, "SCD1_MERGE")
    with pytest.raises(SqlGuardError, match=r"DELETE_MISSING_KEYS=true on a SCD1_MERGE task.*only on SCD2_MERGE"):
        merge(sqlp, "SCD1_MERGE", target, [(1, "a", 10)], DELETE_MISSING_KEYS=True)
    assert wh.contents("customers", "id") == []


def test_delete_rows_soft_and_hard(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, "SCD1_MERGE")
    merge(sqlp, "SCD1_MERGE", target, [(1, "a", 10), (2, "b", 20), (3, "c", 30)])
    run2 = sqlp.new_run()
    soft = sqlp.run_sql(
        "delete",
        params(
            SQL_ACTION="DELETE_ROWS",
            TARGET_OBJECT=target,
            MERGE_KEY="id",
            SOURCE_SQL="SELECT 1 AS id UNION ALL SELECT 1 UNION ALL SELECT 9",
        ),
    )
    assert (soft.counts.source, soft.counts.deleted, soft.counts.target) == (3, 1, 3)
    assert wh.contents("customers", "id, delete_flag, pipeline_run_id") == [(1, "Y", run2), (2, "N", 1), (3, "N", 1)]
    sqlp.new_run()
    hard = sqlp.run_sql(
        "hard",
        params(
            SQL_ACTION="DELETE_ROWS",
            TARGET_OBJECT=target,
            MERGE_KEY="id",
            HARD_DELETE=True,
            SOURCE_SQL="SELECT 2 AS id",
        ),
    )
    assert (hard.counts.deleted, hard.counts.target) == (1, 2)
    assert wh.contents("customers", "id, delete_flag") == [(1, "Y"), (3, "N")]


def test_b46_a_soft_delete_does_not_reflag_deleted_rows(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, "SCD1_MERGE")
    merge(sqlp, "SCD1_MERGE", target, [(1, "a", 10)])
    run2 = sqlp.new_run()
    delete = params(SQL_ACTION="DELETE_ROWS", TARGET_OBJECT=target, MERGE_KEY="id", SOURCE_SQL="SELECT 1 AS id")
    assert sqlp.run_sql("delete", delete).counts.deleted == 1
    sqlp.new_run()
    again = sqlp.run_sql("delete")
    assert (again.counts.deleted, again.counts.rows_written) == (0, 0)
    assert wh.contents("customers", "id, delete_flag, pipeline_run_id") == [(1, "Y", run2)]


def test_drop_table_only_after_this_runs_create_table(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = wh.table("scratch")
    sqlp.task("create", params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=target, SOURCE_SQL="SELECT 1 AS id"))
    sqlp.task("drop", params(SQL_ACTION="DROP_TABLE", TARGET_OBJECT=target))
    with pytest.raises(SqlGuardError, match=r"no successful CREATE_TABLE.*create"):
        sqlp.run_sql("drop")
    sqlp.run_sql("create")
    assert wh.contents("scratch", "id") == [(1,)]
    sqlp.run_sql("drop")
    assert wh.columns("scratch") == []
    sqlp.run_sql("drop")  # already gone is fine


@pytest.mark.smoke
@pytest.mark.parametrize("action", ["OVERWRITE_TABLE", "SCD1_MERGE"])
def test_b39_schema_evolution_keeps_length_precision_and_scale(sqlp: SqlProject, action: str) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, action)
    merge(sqlp, action, target, [(1, "a", 10)])
    sqlp.new_run()
    select = (
        "SELECT CAST(1 AS INTEGER) AS id, CAST('a' AS VARCHAR(20)) AS name, CAST(10 AS DECIMAL(12,2)) AS amount,"
        " CAST(12.5 AS DECIMAL(12,2)) AS price, CAST('EUR' AS CHAR(3)) AS currency,"
        " CAST('note' AS VARCHAR(20)) AS note, TIMESTAMP '2026-01-02 03:04:05.123456' AS seen_at,"
        " CAST(TIMESTAMP '2026-01-02 03:04:05' AS TIMESTAMP WITH TIME ZONE) AS seen_at_tz"
    )
    evolve = params(
        SQL_ACTION=action,
        TARGET_OBJECT=target,
        MERGE_KEY="id",
        MERGE_COMPARE_COLUMNS="name|amount|price",
        SOURCE_SQL=select,
    )
    with pytest.raises(SqlGuardError, match=r"(?i)new column.*price.*SCHEMA_EVOLUTION"):
        sqlp.run_sql("load", evolve)
    result = sqlp.run_sql("load", {**evolve, "SCHEMA_EVOLUTION": "true"})
    assert any("added column" in w for w in result.warnings)
    types = dict(wh.columns("customers"))
    written = {
        "price": "decimal(12,2)",
        "currency": "char(3)",
        "note": "varchar(20)",
        "seen_at": "timestamp",
        "seen_at_tz": "timestamp with time zone",
    }
    assert {k: types[k] for k in written} == {k: wh.added_type(v) for k, v in written.items()}
    assert wh.contents("customers", "id, price, currency, note") == [(1, Decimal("12.50"), "EUR", "note")]
    changed_type = select.replace("CAST(12.5 AS DECIMAL(12,2)) AS price", "CAST(12.5 AS DECIMAL(14,4)) AS price")
    with pytest.raises(
        SqlGuardError, match=r"(?i)price is (numeric|DECIMAL|NUMBER)\(12,2\).*but (numeric|DECIMAL|NUMBER)\(14,4\)"
    ):
        sqlp.run_sql("load", {**evolve, "SCHEMA_EVOLUTION": "true", "SOURCE_SQL": changed_type})


def test_b40_schema_evolution_alters_the_table_in_place(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = setup_merge(sqlp, "SCD1_MERGE")
    merge(sqlp, "SCD1_MERGE", target, [(1, "a", 10)])
    wh.execute(f"COMMENT ON TABLE {target} IS 'kept'")
    wh.execute(f"CREATE VIEW {wh.table('v')} AS SELECT id, name FROM {target}")
    sqlp.new_run()
    select = "SELECT CAST(1 AS INTEGER) AS id, CAST('a' AS VARCHAR(20)) AS name, CAST(11 AS DECIMAL(12,2)) AS amount, 'x' AS extra"
    sqlp.run_sql(
        "load",
        params(
            SQL_ACTION="SCD1_MERGE",
            TARGET_OBJECT=target,
            MERGE_KEY="id",
            MERGE_COMPARE_COLUMNS="name|amount",
            SCHEMA_EVOLUTION=True,
            SOURCE_SQL=select,
        ),
    )
    # Altered in place: the table keeps its comment, and a view on it does not block the change.
    assert wh.comment("customers") == "kept"
    assert wh.contents("v", "id, name") == [(1, "a")]
    assert wh.contents("customers", "id, row_id, extra") == [(1, 1, "x")]


def test_b42_rows_written_counts_only_what_was_written(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    events = wh.table("events")
    sqlp.run_sql(
        "setup",
        params(SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=events, SETUP_FOR="APPEND_TABLE", SOURCE_SQL="SELECT 1 AS id"),
    )
    sqlp.run_sql("append", params(SQL_ACTION="APPEND_TABLE", TARGET_OBJECT=events, SOURCE_SQL="SELECT 1 AS id"))
    sqlp.new_run()
    empty = sqlp.run_sql(
        "append", params(SQL_ACTION="APPEND_TABLE", TARGET_OBJECT=events, SOURCE_SQL="SELECT 1 AS id WHERE 1 = 0")
    )
    assert (empty.counts.rows_written, empty.counts.target) == (0, 1)
    target = setup_merge(sqlp, "SCD1_MERGE")
    merge(sqlp, "SCD1_MERGE", target, [(1, "a", 10)])
    sqlp.new_run()
    assert merge(sqlp, "SCD1_MERGE", target, [(1, "a", 10)]).counts.rows_written == 0
    sqlp.new_run()
    assert merge(sqlp, "SCD1_MERGE", target, [(1, "b", 10)]).counts.rows_written == 1


def test_b44_trailing_comments_and_semicolons_are_tolerated(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    for index, tail in enumerate([" -- the last line is a comment", ";", "; -- done", ";\n/* block */\n", ";;"]):
        table = wh.table(f"t{index}")
        sqlp.run_sql(
            f"setup{index}",
            params(
                SQL_ACTION="SETUP_TABLE",
                TARGET_OBJECT=table,
                SETUP_FOR="CREATE_TABLE",
                SOURCE_SQL=f"SELECT 1 AS id{tail}",
            ),
        )
        sqlp.run_sql(
            f"create{index}", params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=table, SOURCE_SQL=f"SELECT 1 AS id{tail}")
        )
        assert wh.contents(f"t{index}", "id") == [(1,)]


def test_sql_file_and_tokens(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    (sqlp.root / "sql_files" / "sales").mkdir()
    (sqlp.root / "sql_files" / "sales" / "orders.sql").write_text(
        "SELECT $$pipeline_run_id AS run_id, $$run_date AS run_date, '$$task_run_id' AS literal -- $$pipeline_id\n;",
        encoding="utf-8",
    )
    task = params(
        SQL_ACTION="CREATE_TABLE",
        TARGET_OBJECT=wh.table("tokens"),
        SOURCE_SQL_FILE="sales/orders.sql",
        PIPELINE_RUN_ID_SUBSTITUTION=True,
        RUN_DATE_SUBSTITUTION=True,
    )
    sqlp.run_sql("create", task)
    assert wh.contents("tokens", "run_id, CAST(run_date AS VARCHAR), literal") == [
        (sqlp.run_id, "2026-03-14", "$$task_run_id")
    ]
    with pytest.raises(SqlGuardError, match=r"no such file .*order.sql.*Did you mean: sales/orders.sql"):
        sqlp.run_sql("create", {**task, "SOURCE_SQL_FILE": "sales/order.sql"})
    with pytest.raises(SqlGuardError, match=r"without .."):
        sqlp.run_sql("create", {**task, "SOURCE_SQL_FILE": "../secrets.sql"})
    with pytest.raises(SqlGuardError, match=r"\$\$run_date with RUN_DATE_SUBSTITUTION not true"):
        sqlp.run_sql("create", {**task, "RUN_DATE_SUBSTITUTION": "false"})


@pytest.mark.requires("driver")
def test_the_script_engine_reads_the_warehouse(sqlp: SqlProject) -> None:
    """task.warehouse()'s SQLAlchemy engine (snowflake-sqlalchemy on Snowflake) reaches the same tables."""
    import sqlalchemy as sa

    wh = sqlp.warehouse
    sqlp.run_sql(
        "create", params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=wh.table("t"), SOURCE_SQL=_values([(1, "a", 1)]))
    )
    engine = load_dialect(sqlp.config).script_engine()
    try:
        with engine.connect() as conn:
            assert conn.execute(sa.text(f"SELECT id, name FROM {wh.table('t')}")).fetchall() == [(1, "a")]
    finally:
        engine.dispose()
