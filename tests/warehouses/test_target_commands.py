"""`etl-craft rehash`, `upgrade-targets` and `lineage`, through the real command line."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import sqlalchemy as sa

from etl_craft.core.errors import SqlGuardError, UsageError
from etl_craft.engine.schema import tables as t
from etl_craft.services.context import OperationContext, open_context
from etl_craft.services.targets.lineage import lineage
from etl_craft.services.targets.rehash import rehash
from etl_craft.services.targets.upgrade import upgrade_targets
from tests.fixtures.cli import run_cli
from tests.fixtures.warehouse import SqlProject, params
from tests.warehouses.compliance.test_failures import ENGINE

pytestmark = pytest.mark.sqlite


def cli(p: SqlProject, *args: str):
    if "driver" not in p.warehouse.provision.requirements:  # an emulation lives in the test process
        pytest.skip(f"the {p.warehouse.kind} provision does not declare driver: the command line cannot reach it")
    p.close()  # the command opens the Engine DB (and a DuckDB file) itself
    return run_cli(*args, env={**os.environ, "ETL_CRAFT_CONFIG": str(p.config_path)})


@contextmanager
def service(p: SqlProject) -> Iterator[OperationContext]:
    """The same operations in this process, for checks that don't need the command line."""
    ctx = open_context(str(p.config_path))
    try:
        yield ctx
    finally:
        ctx.close()


def test_rehash_upgrades_a_target_to_version_2_and_a_merge_then_changes_nothing(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = wh.table("legacy")
    wh.execute(f"CREATE TABLE {target} (id INTEGER, name VARCHAR(20), amount DECIMAL(12,2), {ENGINE})")
    wh.execute(
        f"INSERT INTO {target} (id, name, amount, row_id, hash_key, delete_flag) VALUES"
        " (1, 'a', 1.50, 1, 'version-1-hash', 'N'), (2, NULL, 2.00, 2, 'version-1-hash', 'N')"
    )
    load = params(
        SQL_ACTION="SCD1_MERGE",
        TARGET_OBJECT=target,
        MERGE_KEY="id",
        MERGE_COMPARE_COLUMNS="name|amount",
        SOURCE_SQL=f"SELECT id, name, amount FROM {target}",
    )
    sqlp.task("load", load)
    with service(sqlp) as ctx:
        dry = rehash(ctx, target, dry_run=True)
    assert (dry.rows, dry.total_rows, dry.hash_version, dry.tasks) == (2, 2, None, ("sales.load",))
    done = cli(sqlp, "rehash", "--target", target)
    assert done.returncode == 0, done
    assert "changed HASH_KEY of 2 of 2 row(s); recorded hash version 2" in done.stdout
    with sqlp.db.read() as conn:
        assert conn.execute(sa.select(t.aud_target_hash_version.c.hash_version)).scalar_one() == 2
        assert conn.execute(sa.select(t.aud_actions.c.command)).scalars().all() == ["rehash"]
    result = sqlp.run_sql("load")
    assert result.counts.rows_written == 0
    assert wh.contents("legacy", "id, name, amount, row_id") == [(1, "a", pytest.approx(1.5), 1), (2, None, 2, 2)]


def test_rehash_refuses_merge_tasks_that_disagree(sqlp: SqlProject) -> None:
    target = sqlp.warehouse.table("customers")
    sqlp.task(
        "one",
        params(SQL_ACTION="SCD1_MERGE", TARGET_OBJECT=target, MERGE_COMPARE_COLUMNS="a|b", SOURCE_SQL="SELECT 1 AS a"),
    )
    sqlp.task(
        "two",
        params(SQL_ACTION="SCD2_MERGE", TARGET_OBJECT=target, MERGE_COMPARE_COLUMNS="b|a", SOURCE_SQL="SELECT 1 AS a"),
    )
    with service(sqlp) as ctx:
        with pytest.raises(
            SqlGuardError, match=r"different MERGE_COMPARE_COLUMNS \(sales.one: a\|b; sales.two: b\|a\)"
        ):
            rehash(ctx, target)
        with pytest.raises(UsageError, match="no active SCD1_MERGE or SCD2_MERGE task"):
            rehash(ctx, sqlp.warehouse.table("nothing"))


def test_upgrade_targets_adds_nullable_identity_columns_without_rewriting_history(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    target = wh.table("events")
    wh.execute(f"CREATE TABLE {target} (id INTEGER, row_id BIGINT, create_date TIMESTAMP WITH TIME ZONE)")
    wh.execute(f"INSERT INTO {target} VALUES (1, 1, NULL), (2, 2, NULL)")
    sqlp.task("append", params(SQL_ACTION="APPEND_TABLE", TARGET_OBJECT=target, SOURCE_SQL="SELECT 3 AS id"))
    sqlp.task("ingest", params(SCRIPT_NAME="crm.py", TARGET_OBJECT=wh.table("raw_crm")), handler="PYTHON")
    dry = cli(sqlp, "upgrade-targets", "--action", "APPEND_TABLE", "--dry-run", "--format", "json")
    assert dry.returncode == 0, dry
    assert [(x["target"], x["added"]) for x in dry.json()["targets"]] == [
        (target, ["PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID"])
    ]
    assert "pipeline_id" not in dict(wh.columns("events"))
    with service(sqlp) as ctx:
        done = upgrade_targets(ctx)
    assert [(x.target, x.status, x.added, x.tasks) for x in done.targets] == [
        (target, "upgraded", ("PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID"), ("sales.append",)),
        (wh.table("raw_crm"), "missing", (), ("sales.ingest",)),
    ]
    assert wh.contents("events", "id, row_id, pipeline_id, pipeline_run_id, task_run_id") == [
        (1, 1, None, None, None),
        (2, 2, None, None, None),
    ]
    assert dict(wh.columns("events"))["task_run_id"] == wh.stored_type("bigint")
    sqlp.run_sql("append")
    assert wh.contents("events", "id, row_id, task_run_id IS NOT NULL") == [(1, 1, False), (2, 2, False), (3, 3, True)]
    again = cli(sqlp, "upgrade-targets", "--target", target)
    assert f"{target}\tup to date\t-\tsales.append" in again.stdout
    with service(sqlp) as ctx, pytest.raises(UsageError, match="one of CREATE_TABLE"):
        upgrade_targets(ctx, action="DROP_TABLE")


@pytest.mark.duckdb
@pytest.mark.parametrize("warehouse", ["duckdb"], indirect=True)
def test_lineage_traces_columns_and_caches_them(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    orders, rates, report = wh.table("orders"), wh.table("rates"), wh.table("report")
    sqlp.task(
        "report",
        params(
            SQL_ACTION="CREATE_TABLE",
            TARGET_OBJECT=report,
            SOURCE_SQL=f"WITH o AS (SELECT id, amount FROM {orders} WHERE $$pipeline_run_id_filter)\n"
            f"SELECT o.id, o.amount * r.rate AS amount_eur, COUNT(*) AS n FROM o JOIN {rates} r ON r.id = o.id GROUP BY 1, 2;",
            PIPELINE_RUN_ID_FILTER=True,
        ),
    )
    sqlp.task(
        "copy", params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=wh.table("copy"), SOURCE_SQL=f"SELECT id FROM {report}")
    )
    sqlp.task(
        "star", params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=wh.table("star"), SOURCE_SQL=f"SELECT * FROM {orders}")
    )
    first = cli(sqlp, "lineage", "--format", "json")
    assert first.returncode == 0, first
    doc = first.json()
    assert doc["recomputed"] == 3
    report_task = next(x for x in doc["tasks"] if x["task_code"] == "report")
    assert [
        (e["target_column"], e["source_object"], e["source_column"], e["transformation"]) for e in report_task["edges"]
    ] == [
        ("id", orders, "id", "copy"),
        ("amount_eur", orders, "amount", "o.amount * r.rate"),
        ("amount_eur", rates, "rate", "o.amount * r.rate"),
        ("n", None, None, "COUNT(*)"),
    ]
    assert doc["untraced"] == ["sales.star: SELECT * over columns the catalog does not know; list the columns"]
    with service(sqlp) as ctx:
        assert lineage(ctx).recomputed == 0
        tables = lineage(ctx, table=orders, downstream=True)
    assert [(x.level, x.table, x.task) for x in tables.tree] == [
        (1, report, "sales.report"),
        (2, wh.table("copy"), "sales.copy"),
    ]
    column = cli(sqlp, "lineage", "--table", wh.table("copy"), "--column", "id", "--upstream")
    assert column.stdout.splitlines()[:3] == [
        f"{wh.table('copy')}.id",
        f"  <- {report}.id  [copy]  (sales.copy)",
        f"    <- {orders}.id  [copy]  (sales.report)",
    ]
    strict = cli(sqlp, "lineage", "--strict")
    assert strict.returncode == 1 and "not traced: sales.star" in strict.stdout


@pytest.mark.duckdb
@pytest.mark.parametrize("warehouse", ["duckdb"], indirect=True)
def test_lineage_refuses_a_table_or_column_no_sql_task_writes_or_reads(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    orders, report, star = wh.table("orders"), wh.table("report"), wh.table("star")
    sqlp.task(
        "report",
        params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=report, SOURCE_SQL=f"SELECT id, amount AS total FROM {orders}"),
    )
    sqlp.task("star", params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=star, SOURCE_SQL=f"SELECT * FROM {orders}"))

    table = cli(sqlp, "lineage", "--table", wh.table("reprot"), "--column", "total")
    assert table.returncode == 2, table
    assert table.stdout == ""
    assert table.stderr.splitlines()[-1] == (
        f"error: --table {wh.table('reprot')}: found no active SQL task writing or reading it (1 SQL task(s) could "
        "not be traced, so what they read is not known); expected a table an active SQL task writes (its "
        f"TARGET_OBJECT) or reads, as schema.table. Name one of them (did you mean {report}?)"
    )
    column = cli(sqlp, "lineage", "--table", report, "--column", "totl", "--format", "json")
    assert column.returncode == 2, column
    assert column.json()["message"] == (
        f"--column totl: found no active SQL task writing or reading {report}.totl (1 SQL task(s) could not be "
        f"traced, so what they read is not known); expected a column of {report} that an active SQL task writes or "
        "reads. Name one of them (did you mean total?)"
    )
    far = cli(sqlp, "lineage", "--table", orders, "--column", "zz")
    assert far.returncode == 2
    assert far.stderr.splitlines()[-1].endswith(
        f"Name one of them; etl-craft lineage --table {orders} lists the tasks around it"
    )

    # Known names still trace: a source table's column, and a column of a table whose writer can't be
    # traced (its columns are unknown, so any name is taken as asked).
    known = cli(sqlp, "lineage", "--table", orders, "--column", "amount", "--downstream")
    assert known.returncode == 0, known
    assert known.stdout.splitlines()[:2] == [f"{orders}.amount", f"  -> {report}.total  [copy]  (sales.report)"]
    untraced = cli(sqlp, "lineage", "--table", star, "--column", "anything")
    assert untraced.returncode == 0, untraced
    assert untraced.stdout.splitlines()[0] == f"{star}.anything"
    with service(sqlp) as ctx, ctx.db.read() as conn:
        cached = conn.execute(
            sa.select(t.aud_column_lineage.c.target_object, t.aud_column_lineage.c.target_column).order_by(
                t.aud_column_lineage.c.column_lineage_id
            )
        ).all()
    assert cached == [(report, "id"), (report, "total"), (star, "*")]
