"""Databricks SQL through databricks-sql-connector (extra `etl-craft-warehouses[databricks]`), Delta tables.

Databricks matches names case-insensitively and stores table names in lower case; names are quoted
with backticks. Every statement commits on its own (Delta has no multi-statement transaction), so
the session is treated as autocommit and the actions publish in one statement where they replace:
CREATE_TABLE and OVERWRITE_TABLE are one `CREATE OR REPLACE TABLE ... AS SELECT` (a new Delta
version: readers see the old table until it commits); updates are one `MERGE` (Databricks has no
UPDATE ... FROM). Stages are Delta tables in the section's schema (Databricks has no temporary
tables), named `etl_stage_<task_run_id>_<token>` and dropped by the action. ROW_IDs are computed
(MAX + ROW_NUMBER) under the target lock. Sessions start in UTC (`SET TIME ZONE`). Spark SQL reads
a backslash inside a string literal as an escape, so every literal etl-craft writes here is free of
backslashes (flags, ISO timestamps, formats).

This project's machines reach no Databricks workspace and no Maven repository (so no Delta Lake
jars): the compliance suite parses every statement with sqlglot's `databricks` dialect and runs it on
DuckDB, and the Spark proof (`nox -s tests_databricks`) runs the statements plain Spark SQL can run
on a local SparkSession (docs/warehouses/databricks.md says which were not executed). The driver is
imported when a session connects.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import parse_qsl, urlsplit

from etl_craft.config.model import ConnectionProfile
from etl_craft.config.urls import JdbcTarget, Refuse, Resolve, refuse_credentials, shown_url
from etl_craft.config.values import Reader
from etl_craft.warehouse.dialect import WarehouseDialect
from etl_craft.warehouse.session import Column, Session, driver_errors
from etl_craft_warehouses.autocommit import AutocommitSession

if TYPE_CHECKING:
    import sqlalchemy as sa

URL_FORM = "jdbc:databricks://<workspace host>[:443]/<catalog>?httpPath=/sql/1.0/warehouses/<id>"
URL_SETTINGS = ("httppath",)
_FLOATS = frozenset({"float", "double", "real"})
_TEXT = re.compile(r"^(string|varchar\(\d+\)|char\(\d+\))$")
_INTEGER = frozenset({"tinyint", "smallint", "int", "integer", "bigint", "byte", "short", "long"})
_DECIMAL = re.compile(r"^decimal\(\d+,\d+\)$")
# What DESCRIBE-style catalog answers call a type, in the DDL spelling the actions write back.
_TYPE_NAMES = {"integer": "int", "long": "bigint", "short": "smallint", "byte": "tinyint"}


def _parts(url: str) -> tuple[str, int | None, str, dict[str, str]]:
    """(host, port, catalog, settings in lower case) of a jdbc:databricks:// URL."""
    parts = urlsplit(url.removeprefix("jdbc:"))
    settings = {k.lower(): v for k, v in parse_qsl(parts.query, keep_blank_values=True)}
    return parts.hostname or "", parts.port, parts.path.strip("/"), settings


def type_text(kind: str) -> str:
    """The DDL type of a column from the information schema's full type (DECIMAL(12,2), STRING...)."""
    kind = kind.lower().replace(" ", "")
    return _TYPE_NAMES.get(kind, kind)


class DatabricksDialect(WarehouseDialect):
    name = "databricks"
    display_name = "Databricks"
    jdbc_subprotocols = ("databricks",)
    url_form = URL_FORM
    sqlglot_dialect = "databricks"
    identifier_case = "lower"
    identity_columns = False
    single_writer = False
    replace_strategy = "create_or_replace"
    transactional = False
    update_with_merge = True
    placeholder = "?"
    session_settings: ClassVar[tuple[str, ...]] = ("SET TIME ZONE 'UTC'",)
    # Spark SQL runs no writing function in a SELECT; reflect() calls a Java method, so it is refused.
    state_changing_functions = frozenset({"reflect", "java_method"})

    # -- configuration --------------------------------------------------------------------------
    @classmethod
    def parse_url(cls, url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
        rest = url[len("jdbc:databricks:") :]
        parts = urlsplit(rest)
        if not rest.startswith("//") or not parts.hostname:
            raise refuse(found=shown_url(url), expected=URL_FORM, remedy="name the workspace after jdbc:databricks://")
        if ";" in rest:
            raise refuse(
                "the URL has JDBC driver settings after ';'",
                found=shown_url(url),
                expected=URL_FORM,
                remedy="write the catalog as the path and httpPath as a query setting (?httpPath=...)",
            )
        refuse_credentials(parts.query, refuse)
        if parts.username or parts.password:
            raise refuse(
                "the URL carries a login",
                found=shown_url(url),
                expected="a URL without user or password",
                remedy="put the access token's variable in the section's secret",
            )
        _host, _port, catalog, settings = _parts(url)
        if not catalog or "/" in catalog:
            raise refuse(
                "the URL does not name exactly one catalog",
                found=shown_url(url),
                expected=URL_FORM,
                remedy="name the Unity Catalog catalog (or hive_metastore) after the host",
            )
        unknown = sorted(set(settings) - set(URL_SETTINGS))
        if unknown:
            raise refuse(
                f"the setting(s) {', '.join(unknown)} are not read by the Databricks dialect",
                found=shown_url(url),
                expected="httpPath",
                remedy="remove them",
            )
        if not settings.get("httppath", "").startswith("/"):
            raise refuse(
                "the URL names no SQL warehouse",
                found=shown_url(url),
                expected=URL_FORM,
                remedy="add ?httpPath= with the HTTP path of the SQL warehouse (its connection details)",
            )
        return JdbcTarget(cls.name, url)

    @classmethod
    def read_profile(cls, reader: Reader, profile: ConnectionProfile) -> ConnectionProfile:
        checked = super().read_profile(reader, profile)
        if checked.auth_mode != "token":
            raise reader.error(
                "auth_mode",
                found=checked.auth_mode or "no auth_mode",
                expected="auth_mode token with secret naming the variable that holds a personal access token",
                remedy="set auth_mode: token and secret: <variable>",
            )
        return checked

    @classmethod
    def describe_login(cls, profile: ConnectionProfile) -> str:
        return "a personal access token"

    # -- connections ----------------------------------------------------------------------------
    def connection_arguments(self) -> dict[str, Any]:
        host, port, catalog, settings = _parts(self.profile.jdbc_url)
        return {
            "server_hostname": host if port in (None, 443) else f"{host}:{port}",
            "http_path": settings["httppath"],
            "access_token": self.config.secret(self.profile.secret_var) if self.profile.secret_var else None,
            "catalog": catalog,
            "schema": self.fold(self.profile.schema or "default"),
            "user_agent_entry": "etl-craft",
        }

    def connect(self) -> Session:
        from databricks import sql as databricks_sql

        with driver_errors(databricks_sql.Error, "connect"):
            conn = databricks_sql.connect(**self.connection_arguments())
        return AutocommitSession(self, conn, databricks_sql.Error)

    def script_engine(self) -> sa.Engine:
        import sqlalchemy as sa

        args = self.connection_arguments()
        url = sa.URL.create(
            "databricks",
            username="token",
            host=args["server_hostname"],
            query={"http_path": args["http_path"], "catalog": args["catalog"], "schema": args["schema"]},
        )
        return sa.create_engine(url, connect_args={"access_token": args["access_token"]})

    def database_name(self) -> str | None:
        return self.fold(_parts(self.profile.jdbc_url)[2])

    # -- names ----------------------------------------------------------------------------------
    def quote(self, name: str) -> str:
        return "`" + name.replace("`", "``") + "`"

    # -- catalog --------------------------------------------------------------------------------
    def _lookup(self, session: Session, catalog: str | None, schema: str, table: str) -> list[Column]:
        prefix = f"{self.ident(catalog)}." if catalog else ""
        found = session.rows(
            f"SELECT column_name, full_data_type FROM {prefix}information_schema.columns"
            " WHERE lower(table_schema) = ? AND lower(table_name) = ? ORDER BY ordinal_position",
            (schema, table),
        )
        return [Column(str(n), type_text(str(t))) for n, t in found]

    def columns(self, session: Session, parts: tuple[str, ...]) -> list[Column]:
        catalog = parts[0] if len(parts) == 3 else None
        return self._lookup(session, catalog, self.fold(parts[-2]), self.fold(parts[-1]))

    def scratch_columns(self, session: Session, name: str) -> list[Column]:
        return self._lookup(session, None, self.fold(self.profile.schema or "default"), name)

    # -- stages ---------------------------------------------------------------------------------
    def scratch_sql(self, name: str) -> str:
        return f"{self.ident(self.profile.schema or 'default')}.{self.quote(name)}"

    def stage_select(self, session: Session, name: str, select: str) -> None:
        session.execute(f"CREATE TABLE {self.scratch_sql(name)} AS {select}")

    def create_scratch_table_sql(self, name: str, definition: str) -> str:
        return f"CREATE TABLE {self.scratch_sql(name)} ({definition})"

    # -- SQL ------------------------------------------------------------------------------------
    def login_sql(self) -> str:
        return "current_user()"

    def timestamp_type(self) -> str:
        return "TIMESTAMP"  # an instant, shown in the session's time zone (UTC)

    def text_type(self, length: int | None = None) -> str:
        return "STRING"  # Spark casts to no VARCHAR(n), and a STRING holds HASH_KEY and the flags as well

    def is_float(self, type_text: str) -> bool:
        return type_text.lower() in _FLOATS

    def canonical_text(self, expr: str, type_text: str) -> str | None:
        kind = type_text.lower()
        if _TEXT.match(kind) or kind in _INTEGER or _DECIMAL.match(kind):
            return f"CAST({expr} AS STRING)"  # a decimal keeps its declared scale: 1.500 for DECIMAL(12,3)
        if kind == "boolean":
            return f"CASE WHEN {expr} THEN 'true' ELSE 'false' END"
        if kind == "date":
            return f"date_format({expr}, 'yyyy-MM-dd')"
        if kind in ("timestamp", "timestamp_ntz"):
            # TIMESTAMP is shown in the session's UTC; the patterns hold no quoted letters, which Spark
            # reads as literals but not every translator of its formats does.
            return f"concat(date_format({expr}, 'yyyy-MM-dd'), 'T', date_format({expr}, 'HH:mm:ss.SSSSSS'), 'Z')"
        return None
