"""Bind parameters in SOURCE_SQL and rule SQL, found with each warehouse's tokenizer (no database)."""

from __future__ import annotations

import pytest

from etl_craft.core.errors import SqlGuardError
from etl_craft.handlers.sql.binds import bind_markers, refuse_bind_parameters
from etl_craft.handlers.sql.spec import refuse_source_binds

pytestmark = pytest.mark.unit


def markers(sql: str, dialect: str) -> list[tuple[str, int]]:
    return [(m.text, m.line) for m in bind_markers(sql, dialect)]


@pytest.mark.parametrize("dialect", ["postgres", "duckdb", "trino", "snowflake", "databricks", ""])
@pytest.mark.parametrize(
    ("sql", "found"),
    [
        ("SELECT a FROM s.t\nWHERE b = :since\n  AND c = ?", [(":since", 2), ("?", 3)]),
        ("SELECT a FROM s.t WHERE a IN (?, :b) LIMIT ?", [("?", 1), (":b", 1), ("?", 1)]),
        ("SELECT CASE WHEN a > 0 THEN :x ELSE ? END AS v FROM s.t", [(":x", 1), ("?", 1)]),
        ("SELECT ? AS a, :name AS b", [("?", 1), (":name", 1)]),
        ("SELECT a FROM s.t WHERE b = %(since)s OR c = %s", [("%(since)s", 1), ("%s", 1)]),
        ("SELECT a FROM s.t WHERE b >=(%(since)s)", [("%(since)s", 1)]),
    ],
)
def test_each_marker_is_found_with_its_line_in_every_warehouse(dialect: str, sql: str, found: list) -> None:
    assert markers(sql, dialect) == found


@pytest.mark.parametrize("dialect", ["postgres", "duckdb", "trino", "snowflake", "databricks"])
@pytest.mark.parametrize(
    "sql",
    [
        "SELECT a::int, CAST(b AS DATE)::text FROM s.t",
        "SELECT '?', ':x', '%(y)s', '%s' FROM s.t -- ? :y %(z)s\n/* :z ? %s */",
        'SELECT "col?" AS "x:y" FROM s.t',
        "SELECT a % b, a%b, a % s, a%s, (a)%s FROM s.t",
        "SELECT a FROM s.t WHERE b = '2026-01-01 10:30:00'",
    ],
)
def test_casts_literals_comments_and_modulo_are_not_markers(dialect: str, sql: str) -> None:
    assert markers(sql, dialect) == []


def test_postgresql_json_operators_and_dollar_quoted_bodies_are_not_markers() -> None:
    sql = (
        "SELECT doc ? 'k', doc ?| array['a', 'b'], doc ?& array['c'], doc -> 'x' ? 'y', (doc) ? 'z',"
        " t.doc ? 'k', key ? 'k', $q$ :x ? %s $q$ AS body FROM s.t"
    )
    assert markers(sql, "postgres") == []
    assert markers("SELECT doc ? 'k' FROM s.t WHERE id = ?", "postgres") == [("?", 1)]


def test_semi_structured_paths_slices_and_named_arguments_are_not_markers() -> None:
    assert markers("SELECT v:name, v:a.b, parse_json(x):a, v[0]:b FROM s.t WHERE id = :1", "snowflake") == [(":1", 1)]
    assert markers("SELECT v:name FROM s.t WHERE id = :p", "databricks") == [(":p", 1)]
    duck = "SELECT l[:n], l[1:n], l[n:], {'a':1}, {'b': 2}, f(x := 1), ARRAY[?] FROM s.t"
    assert markers(duck, "duckdb") == [("?", 1)]


@pytest.mark.parametrize("dialect", ["postgres", "duckdb"])
def test_dollar_numbered_and_named_markers_are_found_where_they_bind(dialect: str) -> None:
    sql = "SELECT a FROM s.t\nWHERE b = $1 AND c IN ($2, $since)\n  AND d = $3::date AND e = f($name)"
    assert markers(sql, dialect) == [("$1", 2), ("$2", 2), ("$since", 2), ("$3", 3), ("$name", 3)]
    quiet = "SELECT a$b, $q$ $1 $x $q$, '$1', \"$2\" FROM s.t -- $3\n/* $4 */ WHERE c = $$ $5 $$"
    assert markers(quiet, dialect) == []


@pytest.mark.parametrize("dialect", ["snowflake", "trino", "databricks"])
def test_dollar_words_elsewhere_are_not_markers(dialect: str) -> None:
    """Snowflake: `$1` is a staged file's column, `$name` a session variable."""
    assert markers("SELECT $1, $2 FROM s.t WHERE c = $name", dialect) == []


def test_a_select_with_dollar_markers_is_refused_naming_them() -> None:
    with pytest.raises(SqlGuardError) as caught:
        refuse_source_binds("SELECT id FROM raw.orders WHERE loaded_on = $run_date AND n > $1", "postgres", "task o")
    message = str(caught.value)
    assert message.startswith("task o: found bind parameters $run_date (line 1), $1 (line 1); expected SQL"), message
    assert "Write $$run_date (with RUN_DATE_SUBSTITUTION = true) instead of $run_date" in message


def test_text_that_does_not_tokenize_is_left_to_the_read_only_check() -> None:
    assert markers("SELECT 'unterminated", "postgres") == []


def test_a_select_is_refused_with_the_tokens_that_give_the_run_s_values() -> None:
    sql = "SELECT id FROM raw.orders\nWHERE loaded_on = :run_date AND run_id = :pipeline_run_id AND region = ?"
    with pytest.raises(SqlGuardError) as caught:
        refuse_source_binds(sql, "duckdb", "task orders: SOURCE_SQL")
    assert str(caught.value) == (
        "task orders: SOURCE_SQL: found bind parameters :run_date (line 2), :pipeline_run_id (line 2), ? (line 2)"
        "; expected SQL without bind parameters: etl-craft passes no values to bind, so the statement could never"
        " run. Write $$run_date (with RUN_DATE_SUBSTITUTION = true) instead of :run_date; write $$pipeline_run_id"
        " (with PIPELINE_RUN_ID_SUBSTITUTION = true) instead of :pipeline_run_id; for the run's own values use a"
        " $$ token with its switch parameter ($$pipeline_id, $$pipeline_run_id, $$task_run_id,"
        " $$pipeline_run_id_filter, $$run_date); write any other value into the SELECT as a literal"
    )


def test_many_markers_are_listed_up_to_five() -> None:
    with pytest.raises(SqlGuardError, match=r"found bind parameters \? \(line 1\), .*\? \(line 1\) and 2 more;"):
        refuse_bind_parameters("SELECT ?, ?, ?, ?, ?, ?, ?", "trino", "task t: SOURCE_SQL", "remedy")
    refuse_bind_parameters("SELECT 1 AS a", "trino", "task t: SOURCE_SQL", "remedy")  # nothing to refuse
