"""`$$` tokens, trailing semicolons and the read-only check, without a database."""

from __future__ import annotations

import pytest

from etl_craft.core.errors import SqlGuardError
from etl_craft.handlers.sql.text import check_read_only, embed, scan, strip_trailing, substitute

pytestmark = pytest.mark.unit

VALUES = {
    "pipeline_id": "3",
    "pipeline_run_id": "97",
    "task_run_id": "5",
    "pipeline_run_id_filter": "pipeline_run_id = 97",
    "run_date": "DATE '2026-03-14'",
}
ALL_ON = {
    "PIPELINE_ID_SUBSTITUTION": True,
    "PIPELINE_RUN_ID_SUBSTITUTION": True,
    "TASK_RUN_ID_SUBSTITUTION": True,
    "PIPELINE_RUN_ID_FILTER": True,
    "RUN_DATE_SUBSTITUTION": True,
}


def test_scanning_gives_the_text_back_unchanged() -> None:
    sql = "SELECT 'it''s', E'a\\'b', \"Col\"\"x\", $q$ $$run_date $q$ /* a /* nested */ b */ -- c\n FROM t"
    assert "".join(p.text for p in scan(sql)) == sql
    kinds = [p.kind for p in scan(sql) if p.kind != "code"]
    assert kinds == ["string", "string", "identifier", "dollar", "comment", "comment"]


def test_s2_k_10_tokens_are_substituted_only_outside_literals_and_comments() -> None:
    sql = (
        "SELECT $$pipeline_id, $$pipeline_run_id, $$task_run_id, $$run_date, '$$run_date', \"$$x\","
        " $body$ $$task_run_id $body$ -- $$pipeline_id\n/* $$run_date */ FROM t WHERE $$pipeline_run_id_filter"
    )
    out = substitute(sql, VALUES, ALL_ON, "task t")
    assert out == (
        "SELECT 3, 97, 5, DATE '2026-03-14', '$$run_date', \"$$x\","
        " $body$ $$task_run_id $body$ -- $$pipeline_id\n/* $$run_date */ FROM t WHERE pipeline_run_id = 97"
    )


def test_each_token_needs_its_switch_and_each_switch_its_token() -> None:
    with pytest.raises(SqlGuardError, match=r"\$\$task_run_id with TASK_RUN_ID_SUBSTITUTION not true"):
        substitute("SELECT $$task_run_id", VALUES, {}, "task t")
    with pytest.raises(SqlGuardError, match=r"RUN_DATE_SUBSTITUTION = true but no \$\$run_date"):
        substitute("SELECT '$$run_date'", VALUES, {"RUN_DATE_SUBSTITUTION": True}, "task t")
    with pytest.raises(SqlGuardError, match="renamed"):
        substitute("SELECT $$pipeline_id_filter", VALUES, {}, "task t")
    assert substitute("SELECT price$ FROM t", VALUES, {}, "task t") == "SELECT price$ FROM t"


@pytest.mark.parametrize(
    ("sql", "stripped"),
    [
        ("SELECT 1;", "SELECT 1"),
        ("SELECT 1 ; ; ", "SELECT 1"),
        ("SELECT 1; -- done", "SELECT 1 -- done"),
        ("SELECT ';' AS s;\n/* end */", "SELECT ';' AS s\n/* end */"),
        ("SELECT 1 -- ;", "SELECT 1 -- ;"),
    ],
)
def test_b44_trailing_semicolons_are_stripped_and_comments_kept(sql: str, stripped: str) -> None:
    assert strip_trailing(sql) == stripped
    assert embed(sql).endswith("\n) etl_src")


@pytest.mark.parametrize(
    "sql", ["SELECT 1", "WITH x AS (SELECT 1 AS a) SELECT a FROM x", "VALUES (1), (2)", "TABLE s.t"]
)
def test_reads_are_accepted(sql: str) -> None:
    check_read_only(sql, "postgres", "task t")


@pytest.mark.parametrize(
    ("sql", "found"),
    [
        ("DELETE FROM s.t", r"found a statement that is not a query \(DELETE\);"),
        ("INSERT INTO s.t VALUES (1)", r"not a query \(INSERT\)"),
        ("SELECT * INTO s.x FROM s.t", "SELECT ... INTO"),
        ("WITH d AS (UPDATE s.t SET a = 1 RETURNING a) SELECT a FROM d", "found UPDATE inside the query"),
        ("SELECT 1; SELECT 2", "2 statements"),
        ("SELEC 1 FROM", r"does not parse|not a query \(COMMAND\)"),
    ],
)
def test_anything_but_one_read_is_refused(sql: str, found: str) -> None:
    with pytest.raises(SqlGuardError, match=found):
        check_read_only(sql, "postgres", "task t")
