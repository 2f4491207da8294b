"""The read-only rule at run time: an author's SELECT or rule that would change the warehouse fails,
naming the rule, and nothing changed. A warehouse that can (PostgreSQL) runs it in a read-only
subtransaction; one that can't (DuckDB) refuses its state-changing functions by name before it runs.
"""

from __future__ import annotations

from decimal import Decimal

import pytest

from etl_craft.core.errors import HandlerError, SqlGuardError
from etl_craft.handlers import business_rules
from tests.fixtures.warehouse import SqlProject, add_rule, flags, params

pytestmark = pytest.mark.sqlite


def loaded(sqlp: SqlProject) -> str:
    target = sqlp.warehouse.table("snap")
    sqlp.run_sql(
        "create",
        params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=target, SOURCE_SQL="SELECT CAST(1.5 AS DECIMAL(12,2)) AS v"),
    )
    return target


@pytest.mark.smoke
@pytest.mark.requires("sequences")
def test_a_select_calling_setval_fails_naming_the_read_only_rule_and_the_sequence_is_unchanged(
    sqlp: SqlProject,
) -> None:
    wh = sqlp.warehouse
    sequence = wh.table("seq")
    wh.execute(f"CREATE SEQUENCE {sequence}")
    target = loaded(sqlp)
    select = f"SELECT CAST(setval('{sequence}', 99) AS DECIMAL(12,2)) AS v"
    with pytest.raises(SqlGuardError, match=r"setval.*read-only|read-only.*setval") as refused:
        sqlp.run_sql("bad", params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=target, SOURCE_SQL=select))
    assert "only reads" in refused.value.message
    assert wh.contents("snap", "v, row_id") == [(Decimal("1.50"), 1)]
    assert wh.scalar(f"SELECT nextval('{sequence}')") == 1  # setval(99) never ran


@pytest.mark.requires("writing_functions")
def test_a_function_that_writes_a_table_fails_inside_the_select_and_writes_nothing(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    hits, hit = wh.table("hits"), wh.table("hit")
    wh.execute(f"CREATE TABLE {hits} (n INTEGER)")
    wh.execute(
        f"CREATE FUNCTION {hit}() RETURNS INTEGER LANGUAGE plpgsql AS $$"
        f" BEGIN INSERT INTO {hits} VALUES (1); RETURN 1; END $$"
    )
    select = f"SELECT {hit}() AS id"
    with pytest.raises(SqlGuardError, match=r"cannot execute INSERT in a read-only transaction.*only reads"):
        sqlp.run_sql("bad", params(SQL_ACTION="CREATE_TABLE", TARGET_OBJECT=wh.table("made"), SOURCE_SQL=select))
    assert wh.rows(f"SELECT COUNT(*) FROM {hits}") == [(0,)]
    assert wh.columns("made") == []
    # The same function outside etl-craft writes: the refusal came from the read-only mode.
    wh.execute(f"SELECT {hit}()")
    assert wh.rows(f"SELECT COUNT(*) FROM {hits}") == [(1,)]


def customers(sqlp: SqlProject) -> str:
    wh = sqlp.warehouse
    table = wh.table("customers")
    wh.execute(f"CREATE TABLE {table} (customer_id INTEGER, email VARCHAR(40), pipeline_run_id BIGINT)")
    wh.execute(f"INSERT INTO {table} VALUES (1, 'a@x', {sqlp.run_id}), (2, NULL, {sqlp.run_id})")
    return table


@pytest.mark.smoke
def test_a_rule_flags_the_rows_that_break_it(sqlp: SqlProject) -> None:
    add_rule(sqlp, "email set", "SELECT 1 WHERE t.email IS NULL", table=customers(sqlp))
    result = business_rules.run(sqlp.context("rules"))
    sqlp.finish("rules")
    assert (result.counts.inserted, result.counts.updated) == (1, 0)
    assert flags(sqlp) == [("2", "REJECT")]


@pytest.mark.requires("sequences")
def test_a_rule_calling_setval_fails_naming_the_read_only_rule(sqlp: SqlProject) -> None:
    wh = sqlp.warehouse
    sequence = wh.table("seq")
    wh.execute(f"CREATE SEQUENCE {sequence}")
    add_rule(sqlp, "sneaky", f"SELECT 1 WHERE setval('{sequence}', 99) > 0", table=customers(sqlp))
    with pytest.raises(HandlerError, match=r"sneaky.*(setval.*read-only|read-only.*setval)"):
        business_rules.run(sqlp.context("rules"))
    assert flags(sqlp) == []
    assert wh.scalar(f"SELECT nextval('{sequence}')") == 1
