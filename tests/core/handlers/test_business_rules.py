"""BUSINESS_RULES: flags for failing rows, cleared when rows pass or leave the table, at size, on both Engine DBs."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from sqlalchemy import event

from etl_craft.core.errors import HandlerError, SqlGuardError
from etl_craft.engine.schema import tables as t
from etl_craft.handlers import business_rules
from etl_craft.handlers.context import HandlerResult
from tests.fixtures import postgres as pg
from tests.fixtures.warehouse import SqlProject, Warehouse, add_rule, engine_section_for, flags, make_sql_project

pytestmark = pytest.mark.duckdb


@pytest.fixture(
    params=[pytest.param("sqlite", marks=pytest.mark.sqlite), pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def rules(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SqlProject]:
    """A DuckDB warehouse with a customers table, on a SQLite or PostgreSQL Engine DB."""
    path = tmp_path / "warehouse.duckdb"
    wh = Warehouse("duckdb", f"jdbc:duckdb:{path}", "crm")
    wh.execute("CREATE SCHEMA crm")
    wh.execute(
        "CREATE TABLE crm.customers (customer_id INTEGER, email VARCHAR, country VARCHAR,"
        " pipeline_run_id BIGINT, active_flag VARCHAR(1))"
    )
    if request.param == "sqlite":
        project = make_sql_project(tmp_path, wh)
        yield project
        project.close()
        return
    template = request.getfixturevalue("pg_template")
    with pg.throwaway_database(template=template) as name:
        project = make_sql_project(tmp_path, wh, engine_section_for("postgresql", name))
        yield project
        project.close()


def load(p: SqlProject, rows: list[tuple[int, str | None, str]], active: str = "Y") -> None:
    """Rows written by the current run (PIPELINE_RUN_ID), as an SQL task would stamp them."""
    values = ", ".join(f"({i}, {'NULL' if e is None else repr(e)}, '{c}', {p.run_id}, '{active}')" for i, e, c in rows)
    p.warehouse.execute(f"INSERT INTO crm.customers VALUES {values}")


def check(p: SqlProject, *, force: bool = False, rerun: bool = False) -> HandlerResult:
    result = business_rules.run(p.context("rules", force=force, rerun=rerun))
    p.finish("rules")
    return result


NO_EMAIL = "SELECT 1 WHERE t.email IS NULL"


def test_failing_rows_are_flagged_and_cleared_when_they_pass(rules: SqlProject) -> None:
    add_rule(rules, "email set", NO_EMAIL)
    load(rules, [(1, "a@x", "DE"), (2, None, "DE"), (3, None, "FR")])
    first = check(rules)
    assert (first.counts.inserted, first.counts.updated) == (2, 0)
    assert flags(rules) == [("2", "REJECT"), ("3", "REJECT")]
    rules.new_run()
    rules.warehouse.execute(
        f"UPDATE crm.customers SET email = 'b@x', pipeline_run_id = {rules.run_id} WHERE customer_id = 2"
    )
    second = check(rules)
    assert (second.counts.inserted, second.counts.updated) == (0, 1)
    assert flags(rules) == [("3", "REJECT")]  # key 3 was not in this run: its flag stands
    assert flags(rules, "N") == [("2", "REJECT")]


def test_b21_a_flag_clears_when_its_key_is_deleted(rules: SqlProject) -> None:
    add_rule(rules, "email set", NO_EMAIL, kind="INCOMPLETE")
    load(rules, [(1, None, "DE"), (2, None, "DE")])
    check(rules)
    rules.new_run()
    rules.warehouse.execute("DELETE FROM crm.customers WHERE customer_id = 1")
    rules.warehouse.execute("UPDATE crm.customers SET active_flag = 'N' WHERE customer_id = 2")  # a closed SCD2 version
    result = check(rules)
    assert result.counts.updated == 2
    assert flags(rules) == []


def test_b21_a_forced_run_judges_the_whole_table_but_not_closed_versions(rules: SqlProject) -> None:
    load(rules, [(1, None, "DE"), (2, "a@x", "DE")])
    load(rules, [(3, None, "FR")], active="N")
    add_rule(rules, "email set", NO_EMAIL)
    rules.new_run()
    assert check(rules).counts.inserted == 0  # a normal run sees only this run's rows (B52)
    rules.new_run()
    forced = check(rules, force=True)
    assert forced.counts.inserted == 1
    assert flags(rules) == [("1", "REJECT")]
    rules.warehouse.execute("UPDATE crm.customers SET email = 'c@x' WHERE customer_id = 1")
    rules.new_run()
    assert check(rules).counts.updated == 0  # the row changed outside this run: a normal run leaves its flag
    rules.new_run()
    assert check(rules, force=True).counts.updated == 1
    assert flags(rules) == []


def test_b57_rule_sql_may_end_with_a_semicolon_and_a_comment(rules: SqlProject) -> None:
    add_rule(rules, "email set", "SELECT 1\nWHERE t.email IS NULL; -- every customer needs an email")
    add_rule(rules, "known country", "SELECT 1 WHERE t.country NOT IN ('DE', 'FR') -- two markets", kind="REPORT")
    load(rules, [(1, None, "DE"), (2, "a@x", "US")])
    assert check(rules).counts.inserted == 2
    assert flags(rules) == [("1", "REJECT"), ("2", "REPORT")]


def test_a_failing_rule_fails_its_wave_and_a_retry_runs_only_what_failed(rules: SqlProject) -> None:
    good = add_rule(rules, "email set", NO_EMAIL)
    add_rule(rules, "broken", "SELECT 1 WHERE t.no_such_column = 1")
    later = add_rule(rules, "later", NO_EMAIL, sequence=2)
    load(rules, [(1, None, "DE")])
    with pytest.raises(
        HandlerError,
        match=r"1 of 2 business rule\(s\) failed in wave SEQUENCE_NUMBER=1: broken on crm.customers: "
        r"find failing rows failed: \w+",
    ):
        business_rules.run(rules.context("rules"))
    log = t.aud_business_rules_run_log
    with rules.db.read() as conn:
        statuses = dict(conn.execute(sa.select(log.c.business_rule_id, log.c.status)).all())
    assert statuses[good] == "SUCCESS" and later not in statuses and "FAILED" in statuses.values()
    with rules.db.write() as conn:
        conn.execute(
            t.cfg_business_rules.update()
            .where(t.cfg_business_rules.c.business_rule_name == "broken")
            .values(active_flag="N")
        )
    retry = check(rules)  # a new attempt of the same task run: "email set" is not judged again
    assert (retry.counts.inserted, retry.counts.updated) == (1, 0)
    assert flags(rules) == [("1", "REJECT"), ("1", "REJECT")]


def test_rule_prechecks_stop_the_task(rules: SqlProject) -> None:
    add_rule(rules, "bad key", NO_EMAIL, key="customer_id; drop")
    with pytest.raises(SqlGuardError, match=r"BUSINESS_RULE_KEY_COLUMN.*plain column name"):
        business_rules.run(rules.context("rules"))
    with rules.db.write() as conn:
        conn.execute(t.cfg_business_rules.update().values(active_flag="N"))
    add_rule(rules, "no schema", NO_EMAIL, table="customers")
    with pytest.raises(SqlGuardError, match=r"TARGET_TABLE.*schema.table"):
        business_rules.run(rules.context("rules"))
    with rules.db.write() as conn:
        conn.execute(t.cfg_business_rules.update().values(active_flag="N"))
    add_rule(rules, "writes", "DELETE FROM crm.customers")
    with pytest.raises(SqlGuardError, match=r"BUSINESS_RULE_SQL.*not a query \(DELETE\)"):
        business_rules.run(rules.context("rules"))


def test_reject_incomplete_and_report_flags_do_not_fail_the_task(rules: SqlProject) -> None:
    """The documented downstream effect: the task succeeds, so its dependants run; flags mark the rows."""
    add_rule(rules, "email set", NO_EMAIL, kind="INCOMPLETE")
    add_rule(rules, "blocked country", "SELECT 1 WHERE t.country = 'XX'", kind="REJECT")
    load(rules, [(1, None, "DE"), (2, "a@x", "XX"), (3, "b@x", "FR")])
    result = check(rules)
    assert result.counts.inserted == 2
    assert flags(rules) == [("1", "INCOMPLETE"), ("2", "REJECT")]
    # What a downstream reader keeps: rows without an active REJECT flag (INCOMPLETE rows stay, marked).
    rejected = {int(k) for k, kind in flags(rules) if kind == "REJECT"}
    kept = [
        r[0] for r in rules.warehouse.rows("SELECT customer_id FROM crm.customers ORDER BY 1") if r[0] not in rejected
    ]
    assert kept == [1, 3]
    rules.new_run()
    rules.warehouse.execute(
        f"UPDATE crm.customers SET email = 'c@x', pipeline_run_id = {rules.run_id} WHERE customer_id = 1"
    )
    check(rules)
    assert flags(rules) == [("2", "REJECT")]  # the completed row's INCOMPLETE flag cleared


def _limit_binds(p: SqlProject, limit: int) -> None:
    """Enforce SQLite's variable limit on every Engine DB connection the handler opens."""
    p.db.engine.dispose()

    def on_connect(dbapi_conn: sqlite3.Connection, _record: object) -> None:
        dbapi_conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, limit)

    event.listen(p.db.engine, "connect", on_connect)


def test_b51_many_flags_clear_in_batches(rules: SqlProject) -> None:
    count = 40_000 if rules.db.dialect.name == "sqlite" else 70_000
    if rules.db.dialect.name == "sqlite":
        _limit_binds(rules, 1002)
    add_rule(rules, "email set", NO_EMAIL)
    other = add_rule(rules, "other rule", "SELECT 1 WHERE t.customer_id <= 1000")
    rules.warehouse.execute(
        f"INSERT INTO crm.customers SELECT i, NULL, 'XX', {rules.run_id}, 'Y' FROM range(1, {count + 1}) g(i)"
    )
    first = check(rules)
    assert first.counts.inserted == count + 1000
    rules.new_run()
    rules.warehouse.execute(f"UPDATE crm.customers SET email = 'a@x', pipeline_run_id = {rules.run_id}")
    second = check(rules)
    assert (second.counts.inserted, second.counts.updated) == (0, count)
    r = t.aud_business_rules_results
    with rules.db.read() as conn:
        by_rule = dict(
            conn.execute(
                sa.select(r.c.business_rule_id, sa.func.count())
                .where(r.c.active_flag == "Y")
                .group_by(r.c.business_rule_id)
            ).all()
        )
        closed = conn.execute(
            sa.select(sa.func.count()).where(r.c.active_flag == "N", r.c.end_date.is_not(None))
        ).scalar()
    assert by_rule == {other: 1000}  # the other rule's standing flags are untouched
    assert closed == count


def test_b52_a_normal_run_judges_only_its_own_rows(rules: SqlProject) -> None:
    load(rules, [(1, None, "DE"), (2, None, "DE")])
    add_rule(rules, "email set", NO_EMAIL)
    check(rules)
    assert flags(rules) == [("1", "REJECT"), ("2", "REJECT")]
    rules.new_run()
    rules.warehouse.execute("UPDATE crm.customers SET email = 'x@y' WHERE customer_id = 1")  # fixed outside any run
    load(rules, [(3, None, "FR")])
    result = check(rules)
    assert (result.counts.inserted, result.counts.updated) == (1, 0)  # key 1 was not written by this run
    assert flags(rules) == [("1", "REJECT"), ("2", "REJECT"), ("3", "REJECT")]
