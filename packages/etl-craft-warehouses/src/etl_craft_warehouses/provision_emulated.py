"""Provisions of the warehouses no server of which runs here (Trino, Databricks): sqlglot-checked
statements on DuckDB, or the live service when its URL variable is set (see EmulatedProvision)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

from etl_craft_warehouses.provision import DuckDBProvision, Provision


class EmulatedProvision(Provision):
    """A warehouse no server of which runs here: sqlglot-checked statements on DuckDB, or the live service.

    With the live URL variable set, the scenarios run on that service, each test in a schema of its
    own. Otherwise every statement the dialect sends is parsed with its sqlglot dialect and run on a
    DuckDB file named after the URL's catalog, in autocommit (tests/fixtures/emulation.py); the
    scenarios that need a second process or the command line are skipped there.
    """

    live_variable: ClassVar[str]
    emulation_variable: ClassVar[str]
    emulated_url: ClassVar[str]  # its catalog is the DuckDB file's stem
    live_schema_variable: ClassVar[str]
    extra: ClassVar[str]
    driver_module: ClassVar[str]

    @property
    def live(self) -> str | None:
        return os.environ.get(self.live_variable) or None

    @property
    def requirements(self) -> frozenset[str]:  # type: ignore[override]
        return frozenset({"processes", "driver"}) if self.live else frozenset()

    @property
    def shared(self) -> bool:  # type: ignore[override]
        return bool(self.live)

    @property
    def section_schema(self) -> str:  # type: ignore[override]
        return os.environ.get(self.live_schema_variable, "default") if self.live else "main"

    @property
    def columns_sql(self) -> str:  # type: ignore[override]
        return self.live_columns_sql if self.live else DuckDBProvision.columns_sql

    @property
    def comment_sql(self) -> str:  # type: ignore[override]
        return self.live_comment_sql if self.live else DuckDBProvision.comment_sql

    live_columns_sql: ClassVar[str]
    live_comment_sql: ClassVar[str]

    def problem(self) -> str | None:
        import importlib

        try:
            importlib.import_module(self.driver_module)
        except ImportError as exc:
            return f"the {self.extra} extra is not installed ({exc}); install etl-craft-warehouses[{self.extra}]"
        return None

    @contextmanager
    def warehouse(self, folder: Path) -> Iterator[str]:
        if self.live:
            yield self.live
            return
        catalog = self.emulated_url.rsplit("/", 1)[1].split("?")[0]
        previous = os.environ.get(self.emulation_variable)
        os.environ[self.emulation_variable] = str(folder / f"{catalog}.duckdb")
        try:
            yield self.emulated_url
        finally:
            if previous is None:
                os.environ.pop(self.emulation_variable, None)
            else:
                os.environ[self.emulation_variable] = previous

    def columns(self, cursor: Any, schema: str, table: str) -> list[tuple[str, str]]:
        found = super().columns(cursor, schema, table)
        if self.live:
            return found
        from etl_craft.warehouse.dialect import dialect_class
        from tests.fixtures.emulation import EMULATED, warehouse_type

        emulated = EMULATED[dialect_class(self.name)]
        return [(n, warehouse_type(emulated, t)) for n, t in found]

    def connect(self, jdbc_url: str) -> Any:
        if self.live:
            return self.live_connection(jdbc_url)
        from tests.fixtures.emulation import open_duckdb

        return open_duckdb(os.environ[self.emulation_variable])

    def live_connection(self, jdbc_url: str) -> Any:
        raise NotImplementedError


class TrinoProvision(EmulatedProvision):
    """Trino: ETL_CRAFT_TRINO_URL (jdbc:trino://host:port/<iceberg catalog>), ETL_CRAFT_TRINO_SCHEMA,
    ETL_CRAFT_TRINO_USER and, for a password login over SSL, ETL_CRAFT_TRINO_SECRET."""

    name = "trino"
    marker = "warehouse_trino"
    live_variable = "ETL_CRAFT_TRINO_URL"
    emulation_variable = "ETL_CRAFT_TRINO_EMULATION_FILE"
    emulated_url = "jdbc:trino://127.0.0.1:8080/iceberg"
    live_schema_variable = "ETL_CRAFT_TRINO_SCHEMA"
    extra = "trino"
    driver_module = "trino"
    # The emulation's stored types are DuckDB's, reported in Trino's names.
    stored_types: ClassVar[Mapping[str, str]] = {
        "char(3)": "varchar",
        "varchar(20)": "varchar",
        "timestamp": "timestamp(6)",
        "timestamp with time zone": "timestamp(6) with time zone",
    }
    live_columns_sql = (
        "SELECT column_name, data_type FROM information_schema.columns"
        " WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position"
    )
    live_comment_sql = "SELECT comment FROM system.metadata.table_comments WHERE schema_name = ? AND table_name = ?"

    def section(self, jdbc_url: str) -> str:
        text = f"{super().section(jdbc_url)}  schema: {self.section_schema}\n"
        if not self.live:
            return text + "  user: etl\n"
        text += f"  user: {os.environ.get('ETL_CRAFT_TRINO_USER', 'etl')}\n"
        if os.environ.get("ETL_CRAFT_TRINO_SECRET"):
            text += "  auth_mode: password\n  secret: ETL_CRAFT_TRINO_SECRET\n"
        return text

    def live_connection(self, jdbc_url: str) -> Any:
        import trino.auth
        import trino.dbapi

        from etl_craft_warehouses.trino import _parts

        host, port, catalog, settings = _parts(jdbc_url)
        ssl = settings.get("ssl", "false").lower() == "true"
        secret = os.environ.get("ETL_CRAFT_TRINO_SECRET")
        user = os.environ.get("ETL_CRAFT_TRINO_USER", "etl")
        return trino.dbapi.connect(
            host=host,
            port=port or (443 if ssl else 8080),
            catalog=catalog,
            user=user,
            http_scheme="https" if ssl else "http",
            auth=trino.auth.BasicAuthentication(user, secret) if secret else None,
            timezone="UTC",
        )


class DatabricksProvision(EmulatedProvision):
    """Databricks: ETL_CRAFT_DATABRICKS_URL (jdbc:databricks://<host>/<catalog>?httpPath=...),
    ETL_CRAFT_DATABRICKS_SCHEMA and ETL_CRAFT_DATABRICKS_TOKEN (a personal access token).

    Here no workspace and no Delta Lake can be had: the statements are parsed with sqlglot's
    databricks dialect and run on DuckDB, and the Spark proof (tests/warehouses/spark) runs the ones
    plain Spark SQL can run on a local SparkSession.
    """

    name = "databricks"
    marker = "warehouse_databricks"
    live_variable = "ETL_CRAFT_DATABRICKS_URL"
    emulation_variable = "ETL_CRAFT_DATABRICKS_EMULATION_FILE"
    emulated_url = "jdbc:databricks://emulated.cloud.databricks.com/lake?httpPath=/sql/1.0/warehouses/emulated"
    live_schema_variable = "ETL_CRAFT_DATABRICKS_SCHEMA"
    extra = "databricks"
    driver_module = "databricks.sql"
    stored_types: ClassVar[Mapping[str, str]] = {
        "char(3)": "string",
        "varchar(20)": "string",
        "integer": "int",
        "timestamp with time zone": "timestamp",  # Databricks' TIMESTAMP is an instant (LTZ)
    }
    live_columns_sql = (
        "SELECT column_name, full_data_type FROM information_schema.columns"
        " WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position"
    )
    live_comment_sql = "SELECT comment FROM information_schema.tables WHERE table_schema = ? AND table_name = ?"

    def section(self, jdbc_url: str) -> str:
        os.environ.setdefault("ETL_CRAFT_DATABRICKS_TOKEN", "emulated")
        return (
            f"{super().section(jdbc_url)}  schema: {self.section_schema}\n"
            "  user: token\n  auth_mode: token\n  secret: ETL_CRAFT_DATABRICKS_TOKEN\n"
        )

    def live_connection(self, jdbc_url: str) -> Any:
        from databricks import sql as databricks_sql

        from etl_craft_warehouses.databricks import _parts

        host, _port, catalog, settings = _parts(jdbc_url)
        return databricks_sql.connect(
            server_hostname=host,
            http_path=settings["httppath"],
            access_token=os.environ["ETL_CRAFT_DATABRICKS_TOKEN"],
            catalog=catalog,
            session_configuration={"TIMEZONE": "UTC"},
        )
