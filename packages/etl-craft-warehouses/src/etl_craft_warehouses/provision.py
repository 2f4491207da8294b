"""Throwaway warehouses for the compliance suite (tests/warehouses/compliance), one Provision per dialect.

The suite finds them through the `etl_craft.warehouse_provisions` entry points, each under its
dialect's name, so a warehouse from any distribution runs the same scenarios. A provision says what
it needs to run here, which of the suite's requirements its warehouse meets, and how to look at the
warehouse independently of the dialect under test (a plain DB-API connection and the catalog
queries the scenarios check with). Drivers are imported when used.

The suite's requirements (`requirements`), beyond what the dialect's own capabilities tell:
- `sequences`: CREATE SEQUENCE, nextval and setval, as PostgreSQL and DuckDB spell them;
- `writing_functions`: a user-defined function can write a table (PL/pgSQL).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

# Every requirement a provision may declare (see the module's docstring).
REQUIREMENTS = frozenset({"sequences", "writing_functions"})
PG_HOST = os.environ.get("ETL_CRAFT_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("ETL_CRAFT_TEST_PG_PORT", "5432"))
PG_USER = os.environ.get("ETL_CRAFT_TEST_PG_USER", "postgres")


class Provision:
    """How to get a throwaway warehouse of one dialect, and what the scenarios may expect of it."""

    name: ClassVar[str]  # the dialect's name (its entry point's name in etl_craft.warehouses)
    marker: ClassVar[str]  # the pytest marker of a test on this warehouse
    requirements: ClassVar[frozenset[str]] = frozenset()
    # How the catalog reports a type the scenarios CAST to (lower case), where the warehouse changes it.
    stored_types: ClassVar[Mapping[str, str]] = {}
    section_schema: ClassVar[str]  # the schema the Warehouse section names (a session's default)
    # One warehouse serves every test of a process (each test in its own schema), instead of one per test.
    shared: ClassVar[bool] = False
    # An environment variable that, when set, turns "no warehouse can be had here" into a failure.
    required_by: ClassVar[str | None] = None

    def problem(self) -> str | None:
        """Why no warehouse can be had on this machine, or None."""
        return None

    @contextmanager
    def warehouse(self, folder: Path) -> Iterator[str]:
        """A new empty warehouse (its jdbc_url), removed afterwards; `folder` is the test's own."""
        raise NotImplementedError
        yield  # pragma: no cover

    def section(self, jdbc_url: str) -> str:
        return f"Warehouse:\n  jdbc_url: {jdbc_url}\n"

    def connect(self, jdbc_url: str) -> Any:
        """A DB-API connection that commits each statement, in UTC."""
        raise NotImplementedError

    # Catalog queries taking (schema, table): a table's columns (name, full type) in order, its comment.
    columns_sql: ClassVar[str]
    comment_sql: ClassVar[str]

    def columns(self, cursor: Any, schema: str, table: str) -> list[tuple[str, str]]:
        cursor.execute(self.columns_sql, (schema, table))
        return [(str(n), str(t)) for n, t in cursor.fetchall()]

    def table_comment(self, cursor: Any, schema: str, table: str) -> str | None:
        cursor.execute(self.comment_sql, (schema, table))
        found = cursor.fetchall()
        return found[0][0] if found else None


class DuckDBProvision(Provision):
    name = "duckdb"
    marker = "duckdb"
    requirements = frozenset({"sequences"})
    # DuckDB stores CHAR and VARCHAR bounds as VARCHAR.
    stored_types: ClassVar[Mapping[str, str]] = {"char(3)": "varchar", "varchar(20)": "varchar"}
    section_schema = "main"
    url_prefix: ClassVar[str] = "jdbc:duckdb:"
    columns_sql = (
        "SELECT column_name, data_type FROM duckdb_columns() WHERE schema_name = ? AND table_name = ?"
        " ORDER BY column_index"
    )
    comment_sql = "SELECT comment FROM duckdb_tables() WHERE schema_name = ? AND table_name = ?"

    @contextmanager
    def warehouse(self, folder: Path) -> Iterator[str]:
        yield f"{self.url_prefix}{folder / 'warehouse.duckdb'}"

    def connect(self, jdbc_url: str) -> Any:
        import duckdb

        conn = duckdb.connect(jdbc_url.removeprefix(self.url_prefix))
        conn.execute("SET TimeZone = 'UTC'")
        return conn


class PostgresProvision(Provision):
    """A database per test process on the local server (ETL_CRAFT_TEST_PG_HOST/PORT/USER, trust auth)."""

    name = "postgres"
    marker = "warehouse_postgres"
    requirements = frozenset({"sequences", "writing_functions"})
    stored_types: ClassVar[Mapping[str, str]] = {
        "decimal(12,2)": "numeric(12,2)",
        "char(3)": "character(3)",
        "varchar(20)": "character varying(20)",
        "timestamp": "timestamp without time zone",
    }
    section_schema = "public"
    columns_sql = (
        "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
        " WHERE a.attrelid = to_regclass(quote_ident(%s) || '.' || quote_ident(%s))"
        " AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum"
    )
    comment_sql = "SELECT obj_description(to_regclass(quote_ident(%s) || '.' || quote_ident(%s)))"
    shared = True
    required_by = "ETL_CRAFT_REQUIRE_POSTGRES"

    def _admin(self, statement: str | None = None) -> None:
        import psycopg

        dsn = f"host={PG_HOST} port={PG_PORT} user={PG_USER} dbname=postgres connect_timeout=5"
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(statement or "SELECT 1")

    def problem(self) -> str | None:
        import psycopg

        try:
            self._admin()
        except psycopg.Error as exc:
            return f"no PostgreSQL server answers at {PG_HOST}:{PG_PORT} ({str(exc).strip()})"
        return None

    @contextmanager
    def warehouse(self, folder: Path) -> Iterator[str]:
        database = f"etlc_wh_{uuid.uuid4().hex[:12]}"
        self._admin(f"CREATE DATABASE {database}")
        try:
            yield f"jdbc:postgresql://{PG_HOST}:{PG_PORT}/{database}"
        finally:
            self._admin(f"DROP DATABASE IF EXISTS {database} WITH (FORCE)")

    def section(self, jdbc_url: str) -> str:
        return f"{super().section(jdbc_url)}  schema: {self.section_schema}\n  user: {PG_USER}\n"

    def connect(self, jdbc_url: str) -> Any:
        import psycopg

        database = jdbc_url.rsplit("/", 1)[1]
        conn = psycopg.connect(host=PG_HOST, port=PG_PORT, user=PG_USER, dbname=database, autocommit=True)
        conn.execute("SET TIME ZONE 'UTC'")
        return conn
