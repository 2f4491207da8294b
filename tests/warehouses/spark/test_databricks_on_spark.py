"""The Databricks dialect's SQL on a local Spark session: Spark's parser and Spark's functions.

Run by `nox -s tests_databricks`, after the Databricks compliance scenarios in the same process: those
run on the DuckDB emulation and record every statement the dialect sent; here Spark's own SQL parser
(the one Databricks SQL extends) parses each of them, and the statements plain Spark tables can run
are run: the session settings, stages, inserts, schema evolution, and the canonical hash, whose
golden digests must come out the same as on every other warehouse.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from etl_craft.handlers.sql.hashing import hash_sql
from etl_craft_warehouses.databricks import DatabricksDialect
from tests.fixtures import emulation
from tests.warehouses.compliance.test_hash import GOLDEN, NAMES, golden_rows
from tests.warehouses.test_databricks import load

pytestmark = pytest.mark.databricks_spark

URL = "jdbc:databricks://adb-1.azuredatabricks.net/main?httpPath=/sql/1.0/warehouses/abc"
# The golden inputs in Spark's types: TIMESTAMP is an instant (shown in the session's zone), and
# TIMESTAMP_NTZ a wall-clock time.
SPARK_TYPES = ("INT", "STRING", "DECIMAL(12,3)", "TIMESTAMP", "TIMESTAMP_NTZ", "DATE", "BOOLEAN", "BIGINT")
# Statements only a Delta (or other v2) table runs; Spark's own tables refuse them after parsing.
DELTA_ONLY = ("MERGE INTO", "DELETE FROM", "UPDATE ", "CREATE OR REPLACE TABLE")
AUTHOR = re.compile(r"\(\n(.*)\n\) etl_src", re.DOTALL)


def dialect(tmp_path: Path) -> DatabricksDialect:
    return load(tmp_path, URL, "  schema: proof\n  user: token\n  auth_mode: token\n  secret: DBX_TOKEN\n")


def _literal(value: object, sql_type: str) -> str:
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    text = str(value).replace("'", "''")
    if sql_type == "TIMESTAMP":  # '+02' offsets as Spark reads them: +02:00
        text = text[:-3] + text[-3:] + ":00"
    return f"CAST('{text}' AS {sql_type})"


def test_the_golden_digests_are_the_same_on_spark(spark: Any, tmp_path: Path) -> None:
    wh = dialect(tmp_path)
    for statement in wh.session_settings:
        spark.sql(statement)
    assert spark.conf.get("spark.sql.session.timeZone") == "UTC"
    rows = " UNION ALL ".join(
        "SELECT " + ", ".join(f"{_literal(v, t)} AS {n}" for v, t, n in zip(row, SPARK_TYPES, NAMES, strict=True))
        for row in golden_rows()
    )
    spark.sql("CREATE SCHEMA IF NOT EXISTS proof")
    wh_stage = wh.scratch_sql("etl_stage_1_golden")
    spark.sql(f"CREATE TABLE {wh_stage} AS {rows}")  # the dialect's stage_select statement
    columns = {r.col_name: r.data_type for r in spark.sql(f"DESCRIBE TABLE {wh_stage}").collect()}
    values = [(f"s.{wh.quote(n)}", n, columns[n]) for n in NAMES[1:]]
    digest = hash_sql(wh, values, "golden")
    found = spark.sql(f"SELECT id, {digest} AS h FROM {wh_stage} s ORDER BY id").collect()
    assert [(r.id, r.h) for r in found] == [(id_, d) for id_, _values, d in GOLDEN]
    spark.sql(f"DROP TABLE {wh_stage}")


def test_stages_inserts_and_schema_evolution_run_on_spark(spark: Any, tmp_path: Path) -> None:
    wh = dialect(tmp_path)
    spark.sql("CREATE SCHEMA IF NOT EXISTS proof")
    target = wh.table_sql(("proof", "Customers"))
    stage = wh.scratch_sql("etl_stage_2_ab")
    spark.sql(f"DROP TABLE IF EXISTS {target}")
    spark.sql(f"CREATE TABLE {target} (`id` INT, `name` STRING, `row_id` BIGINT, `update_date` {wh.timestamp_type()})")
    spark.sql(f"CREATE TABLE {stage} AS SELECT 1 AS id, 'It''s' AS name UNION ALL SELECT 2, 'a\\\\b'")
    spark.sql(
        f"INSERT INTO {target} (`id`, `name`, `row_id`, `update_date`) SELECT s.`id`, s.`name`,"
        f" 0 + ROW_NUMBER() OVER (ORDER BY s.`id`), CAST('2026-03-14T10:00:00.000001+00:00' AS {wh.timestamp_type()})"
        f" FROM {stage} s"
    )
    spark.sql(f"ALTER TABLE {target} ADD COLUMN `note` {wh.text_type()}")
    rows = spark.sql(f"SELECT id, name, row_id, CAST(update_date AS STRING) AS u, note FROM {target} ORDER BY id")
    assert [tuple(r) for r in rows.collect()] == [
        (1, "It's", 1, "2026-03-14 10:00:00.000001", None),
        (2, "a\\b", 2, "2026-03-14 10:00:00.000001", None),
    ]
    assert spark.sql(f"SELECT {wh.login_sql()}").collect()[0][0]
    spark.sql(f"DROP TABLE IF EXISTS {stage}")
    assert not spark.catalog.tableExists("proof.etl_stage_2_ab")


def _author_select(sql: str) -> str | None:
    """The author's SELECT a statement embeds (`(\n<select>\n) etl_src`, handlers/sql/text.py), or None."""
    found = AUTHOR.search(sql)
    return found.group(1) if found else None


def test_every_statement_the_suite_sent_parses_in_spark(spark: Any) -> None:
    """Every statement of the Databricks compliance run, through Spark's own SQL parser.

    A statement embedding a scenario's own SELECT that Spark does not read (the scenarios are written
    once for every warehouse, e.g. CAST(... AS TIMESTAMP WITH TIME ZONE)) is parsed with that SELECT
    replaced, so what is checked is the SQL the dialect wrote around it.
    """
    sent = emulation.SENT.get("databricks", [])
    if len(sent) < 200:
        pytest.fail(
            f"only {len(sent)} Databricks statements were recorded: run this after the compliance scenarios in"
            " the same process (nox -s tests_databricks)"
        )
    parser = spark._jsparkSession.sessionState().sqlParser()

    def refusal(sql: str) -> str | None:
        try:
            parser.parsePlan(sql)
        except Exception as exc:  # py4j carries Spark's ParseException as a Java error
            return " ".join(str(exc).split())[:300]
        return None

    refused, authors = [], set()
    for sql in dict.fromkeys(sent):
        problem = refusal(sql)
        author = _author_select(sql) if problem else None
        if author is not None and refusal(author) is not None:
            authors.add(author)
            problem = refusal(sql.replace(author, "SELECT 1 AS id"))
        if problem:
            refused.append(f"{sql}\n  -> {problem}")
    assert not refused, f"Spark's parser refuses {len(refused)}:\n" + "\n".join(refused[:10])
    assert len(authors) < 10, sorted(authors)  # the scenarios' own SELECTs Spark does not read: few, known
    kinds = {kind for sql in sent for kind in DELTA_ONLY if sql.lstrip().upper().startswith(kind)}
    assert kinds == set(DELTA_ONLY), kinds
