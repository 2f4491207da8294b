"""Throwaway warehouses for the compliance suite (tests/warehouses/compliance), one Provision per dialect.

The suite finds them through the `etl_craft.warehouse_provisions` entry points, each under its
dialect's name, so a warehouse from any distribution runs the same scenarios. A provision says what
it needs to run here, which of the suite's requirements its warehouse meets, and how to look at the
warehouse independently of the dialect under test (a plain DB-API connection and the catalog
queries the scenarios check with). Drivers are imported when used.

The suite's requirements (`requirements`), beyond what the dialect's own capabilities tell:
- `sequences`: CREATE SEQUENCE, nextval and setval, as PostgreSQL and DuckDB spell them;
- `writing_functions`: a user-defined function can write a table (PL/pgSQL);
- `check_constraints`: CHECK constraints are enforced, so a scenario can make a write fail midway
  (Snowflake has none);
- `processes`: sessions from several processes can write at once (the Trino emulation is a DuckDB
  file inside the test process, which one process at a time can open);
- `driver`: the dialect's own driver and SQLAlchemy engine reach the warehouse (the Trino emulation
  replaces the driver's sessions, so task.warehouse()'s engine has no server to reach).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

# Every requirement a provision may declare (see the module's docstring).
REQUIREMENTS = frozenset({"sequences", "writing_functions", "check_constraints", "processes", "driver"})
PG_HOST = os.environ.get("ETL_CRAFT_TEST_PG_HOST", "127.0.0.1")
PG_PORT = int(os.environ.get("ETL_CRAFT_TEST_PG_PORT", "5432"))
PG_USER = os.environ.get("ETL_CRAFT_TEST_PG_USER", "postgres")
# The uv project of the fakesnow server (tests/fixtures/fakesnow/pyproject.toml says why it has its own).
FAKESNOW_PROJECT = Path(os.environ.get("ETL_CRAFT_FAKESNOW_PROJECT", "tests/fixtures/fakesnow")).resolve()


class Provision:
    """How to get a throwaway warehouse of one dialect, and what the scenarios may expect of it."""

    name: ClassVar[str]  # the dialect's name (its entry point's name in etl_craft.warehouses)
    marker: ClassVar[str]  # the pytest marker of a test on this warehouse
    requirements: ClassVar[frozenset[str]] = frozenset()
    # How the catalog reports a type the scenarios CAST to (lower case), where the warehouse changes it.
    stored_types: ClassVar[Mapping[str, str]] = {}
    # How it reports a type a column added by ALTER TABLE ADD COLUMN got, where that differs again.
    added_types: ClassVar[Mapping[str, str]] = {}
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
    requirements = frozenset({"sequences", "check_constraints", "processes", "driver"})
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
    requirements = frozenset({"sequences", "writing_functions", "check_constraints", "processes", "driver"})
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


class SnowflakeProvision(Provision):
    """A fakesnow server (DuckDB behind Snowflake's HTTP protocol) per test process, one database in it.

    The server runs in its own uv environment (tests/fixtures/fakesnow); the dialect's own driver,
    snowflake-connector-python, connects to it over HTTP, so every statement the dialect emits goes
    through the real connector and fakesnow's Snowflake-to-DuckDB translation.
    With ETL_CRAFT_SNOWFLAKE_URL (a jdbc:snowflake:// URL), ETL_CRAFT_SNOWFLAKE_USER and
    ETL_CRAFT_SNOWFLAKE_SECRET set, the same scenarios run against that real account instead, each test
    in a schema of its own in the database the URL names.
    """

    name = "snowflake"
    marker = "warehouse_snowflake"
    requirements = frozenset({"processes", "driver"})
    stored_types: ClassVar[Mapping[str, str]] = {
        "decimal(12,2)": "number(12,2)",
        "decimal(18,4)": "number(18,4)",
        "char(3)": "varchar",  # fakesnow (DuckDB) drops CHAR's length; Snowflake reports varchar(3)
        "varchar(20)": "varchar(20)",
        "integer": "number(38,0)",
        "bigint": "number(38,0)",
        "timestamp": "timestamp_ntz",
        "timestamp with time zone": "timestamp_tz",
    }
    # fakesnow's ALTER TABLE ADD COLUMN drops VARCHAR lengths (Snowflake keeps them).
    added_types: ClassVar[Mapping[str, str]] = {"varchar(20)": "varchar"}
    section_schema = "PUBLIC"
    columns_sql = (
        "SELECT column_name, data_type, character_maximum_length, numeric_precision, numeric_scale"
        " FROM information_schema.columns WHERE table_schema = UPPER(%s) AND table_name = UPPER(%s)"
        " ORDER BY ordinal_position"
    )
    comment_sql = (
        "SELECT comment FROM information_schema.tables WHERE table_schema = UPPER(%s) AND table_name = UPPER(%s)"
    )
    shared = True
    required_by = "ETL_CRAFT_REQUIRE_SNOWFLAKE"

    def problem(self) -> str | None:
        try:
            import snowflake.connector  # noqa: F401
        except ImportError as exc:
            return f"the snowflake extra is not installed ({exc}); install etl-craft-warehouses[snowflake]"
        if os.environ.get("ETL_CRAFT_SNOWFLAKE_URL"):
            return None
        if not (FAKESNOW_PROJECT / "pyproject.toml").is_file():
            return f"no fakesnow server project at {FAKESNOW_PROJECT} (set ETL_CRAFT_FAKESNOW_PROJECT)"
        if _uv() is None:
            return "uv is not on PATH: the fakesnow server runs in its own uv environment"
        return None

    def columns(self, cursor: Any, schema: str, table: str) -> list[tuple[str, str]]:
        from etl_craft_warehouses.snowflake import type_text

        cursor.execute(self.columns_sql, (schema, table))
        return [(str(n), type_text(str(t), ln, p, s)) for n, t, ln, p, s in cursor.fetchall()]

    @contextmanager
    def warehouse(self, folder: Path) -> Iterator[str]:
        live = os.environ.get("ETL_CRAFT_SNOWFLAKE_URL")
        if live:  # the account's database; each test works in a schema of its own, dropped afterwards
            yield live
            return
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        log = (folder / "fakesnow.log").open("wb")
        uv = _uv()
        assert uv is not None
        project = ["--project", str(FAKESNOW_PROJECT), "--frozen", "--quiet"]
        with _sync_lock():  # test processes share the server's environment: one creates it
            subprocess.run([*uv, "sync", *project], check=True, stdout=log, stderr=subprocess.STDOUT)
        server = subprocess.Popen(
            [
                *uv,
                "run",
                *project,
                "--no-sync",
                "python",
                "-m",
                "fakesnow",
                "-s",
                "--host",
                "127.0.0.1",
                "-p",
                str(port),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            env={k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"},
        )
        try:
            _wait_for_port(port, server)
            url = f"jdbc:snowflake://127.0.0.1:{port}/?account=fakesnow&db=ETLC&ssl=off"
            conn = self.connect(url, database=None)
            try:
                for statement in ("CREATE DATABASE ETLC", "USE DATABASE ETLC", "CREATE SCHEMA IF NOT EXISTS PUBLIC"):
                    conn.cursor().execute(statement)
            finally:
                conn.close()
            yield url
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()

    def section(self, jdbc_url: str) -> str:
        user = os.environ.get("ETL_CRAFT_SNOWFLAKE_USER", "fake")
        secret = (
            "ETL_CRAFT_SNOWFLAKE_SECRET" if os.environ.get("ETL_CRAFT_SNOWFLAKE_URL") else "ETL_CRAFT_FAKESNOW_SECRET"
        )
        os.environ.setdefault("ETL_CRAFT_FAKESNOW_SECRET", "snow")
        return f"{super().section(jdbc_url)}  schema: {self.section_schema}\n  user: {user}\n  secret: {secret}\n"

    def connect(self, jdbc_url: str, database: str | None = "") -> Any:
        import snowflake.connector

        from etl_craft_warehouses.snowflake import URL_SETTINGS, _settings

        host, port, settings = _settings(jdbc_url)
        args: dict[str, Any] = {
            "account": settings.get("account") or host.split(".")[0],
            "host": host,
            "user": os.environ.get("ETL_CRAFT_SNOWFLAKE_USER", "fake"),
            "password": os.environ.get("ETL_CRAFT_SNOWFLAKE_SECRET", "snow"),
            "autocommit": True,
            "session_parameters": {"TIMEZONE": "UTC"},
        }
        if database is not None:
            args["database"] = settings.get("db")
        if port:
            args["port"] = port
        if settings.get("ssl") == "off":
            args["protocol"] = "http"
        args.update({k: settings[k] for k in ("warehouse", "role") if k in settings and k in URL_SETTINGS})
        return snowflake.connector.connect(**args)


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


def _uv() -> list[str] | None:
    """The uv command: `uv run` names itself in UV; otherwise uv on PATH, or python3 -m uv."""
    if os.environ.get("UV"):
        return [os.environ["UV"]]
    found = shutil.which("uv")
    if found:
        return [found]
    python = shutil.which("python3")
    if python and subprocess.run([python, "-m", "uv", "--version"], capture_output=True, check=False).returncode == 0:
        return [python, "-m", "uv"]
    return None


@contextmanager
def _sync_lock() -> Iterator[None]:
    import fcntl

    with (FAKESNOW_PROJECT / ".sync.lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _wait_for_port(port: int, server: subprocess.Popen[bytes]) -> None:
    """Until the server accepts connections; its exit ends the wait with the reason."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"the fakesnow server exited with status {server.returncode} before it listened")
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError(f"the fakesnow server did not listen on port {port} within 60 s")
