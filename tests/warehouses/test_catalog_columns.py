"""`generate-docs --with-warehouse` on DuckDB and PostgreSQL warehouses: each table page lists the
warehouse's columns with their types and comments, read in one catalog statement per build."""

from __future__ import annotations

import html
import json

import pytest

from tests.fixtures.cli import run_cli
from tests.fixtures.warehouse import WAREHOUSES, SqlProject

ON_FILE_AND_SERVER = pytest.mark.parametrize(
    "warehouse",
    [p for p in WAREHOUSES if p.id in ("duckdb", "postgres")],
    indirect=True,
)


def _rows_of(page: str, heading: str) -> str:
    """The part of a table page under `heading`, up to the next heading."""
    return page.split(f"<h2>{heading}</h2>", 1)[1].split("<h2>", 1)[0]


@ON_FILE_AND_SERVER
def test_table_pages_show_the_warehouse_columns_types_and_comments(sqlp: SqlProject) -> None:
    schema = sqlp.warehouse.schema
    sqlp.warehouse.execute(f"CREATE TABLE {schema}.orders (order_id INTEGER, amount DECIMAL(12,2), note VARCHAR(20))")
    sqlp.warehouse.execute(f"COMMENT ON TABLE {schema}.orders IS 'one row per order'")
    sqlp.warehouse.execute(f"COMMENT ON COLUMN {schema}.orders.amount IS 'in euros, tax included'")
    sqlp.warehouse.execute(f"CREATE TABLE {schema}.other (x INTEGER)")  # not in the catalog: not shown
    sqlp.task("load", {"SQL_ACTION": "INSERT_ROWS", "TARGET_OBJECT": f"{schema}.orders", "SOURCE_SQL": "SELECT 1"})
    sqlp.task("later", {"SQL_ACTION": "INSERT_ROWS", "TARGET_OBJECT": f"{schema}.missing", "SOURCE_SQL": "SELECT 1"})
    site = sqlp.root / "site"
    config = str(sqlp.config_path)

    built = run_cli("--config", config, "generate-docs", "--with-warehouse", "--output", str(site), "--format", "json")

    assert built.returncode == 0, built
    pages = sorted(p for p in built.json()["written"] if p.endswith(".html"))
    assert pages == sorted(["index.html", "pipelines/sales.html", f"tables/{schema}.orders.html",
                            f"tables/{schema}.missing.html"])  # fmt: skip
    orders = html.unescape((site / f"tables/{schema}.orders.html").read_text(encoding="utf-8"))
    section = _rows_of(orders, "In the warehouse")
    assert '<p class="comment">one row per order</p>' in section
    types = {"duckdb": ("INTEGER", "DECIMAL(12,2)", "VARCHAR"), "postgres": ("integer", "numeric(12,2)",
             "character varying(20)")}[sqlp.warehouse.kind]  # fmt: skip
    rows = section.split("<tbody>", 1)[1].split("</tbody>", 1)[0].split("</tr>")[:-1]
    assert [r.replace("<tr>", "") for r in rows] == [
        f"<td>order_id</td><td><code>{types[0]}</code></td><td></td>",
        f"<td>amount</td><td><code>{types[1]}</code></td><td>in euros, tax included</td>",
        f"<td>note</td><td><code>{types[2]}</code></td><td></td>",
    ]
    missing = (site / f"tables/{schema}.missing.html").read_text(encoding="utf-8")
    assert "The warehouse holds no table of this name" in _rows_of(missing, "In the warehouse")
    assert "other" not in json.loads((site / "manifest.json").read_text())["pages"]

    # Without the flag the pages have no warehouse section, so exactly the two table pages change.
    plain = run_cli("--config", config, "generate-docs", "--output", str(site), "--format", "json")
    assert plain.returncode == 0, plain
    assert sorted(plain.json()["written"]) == sorted([f"tables/{schema}.orders.html", f"tables/{schema}.missing.html"])
    assert "In the warehouse" not in (site / f"tables/{schema}.orders.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("warehouse", [p for p in WAREHOUSES if p.id == "trino"], indirect=True)
def test_a_warehouse_whose_dialect_cannot_describe_its_tables_is_refused(sqlp: SqlProject) -> None:
    """In-process: the Trino emulation replaces the dialect's sessions in this test process only."""
    from etl_craft.core.errors import ConfigurationError, ExitCode
    from etl_craft.services.catalog import generate_docs
    from etl_craft.services.context import open_context

    sqlp.task("load", {"SQL_ACTION": "INSERT_ROWS", "TARGET_OBJECT": "main.orders", "SOURCE_SQL": "SELECT 1"})
    site = sqlp.root / "site"
    ctx = open_context(str(sqlp.config_path))
    try:
        with pytest.raises(ConfigurationError) as refused:
            generate_docs(ctx, site, strict=False, with_warehouse=True)
    finally:
        ctx.close()
    assert refused.value.exit_code == ExitCode.CONFIGURATION
    message = str(refused.value)
    assert "generate-docs --with-warehouse" in message and "Trino" in message
    assert "Run generate-docs without --with-warehouse on this warehouse" in message
    assert not site.exists()  # refused before anything is written
