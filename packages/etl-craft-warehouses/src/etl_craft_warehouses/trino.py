"""Trino through the `trino` client (extra `etl-craft-warehouses[trino]`), for the Iceberg connector.

Trino folds unquoted names to lower case. Its Iceberg connector commits every statement on its own:
a multi-statement transaction that writes is refused, so the session runs in autocommit and the
actions are built so each publishing step is one statement. CREATE_TABLE and OVERWRITE_TABLE publish
with one `CREATE OR REPLACE TABLE ... AS SELECT` (an Iceberg snapshot swap: readers see the old
table until the new one is complete); updates are one `MERGE` (Trino has no UPDATE ... FROM).
Stages are ordinary tables in the section's schema (Trino has no temporary tables), named
`etl_stage_<task_run_id>_<token>` and dropped by the action. ROW_IDs are computed (MAX +
ROW_NUMBER) under the target lock: Iceberg has no identity columns. Sessions run in UTC through
the client's `timezone`. Trino runs nothing in an author's SELECT that writes (procedures are CALL
statements, which the SELECT guard refuses), so no function needs refusing by name.

No Trino server can run on this project's machines: the compliance suite parses every statement
this dialect sends with sqlglot's `trino` dialect and runs it on DuckDB (tests/fixtures/emulation.py),
and runs live against the server ETL_CRAFT_TRINO_URL names (docs/warehouses/trino.md).
The driver is imported when a session connects.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from etl_craft.config.model import ConnectionProfile
from etl_craft.config.urls import JdbcTarget, Refuse, Resolve, refuse_credentials, shown_url
from etl_craft.config.values import Reader
from etl_craft.warehouse.dialect import WarehouseDialect
from etl_craft.warehouse.session import Column, Session, driver_errors
from etl_craft_warehouses.autocommit import AutocommitSession

if TYPE_CHECKING:
    import sqlalchemy as sa

URL_FORM = "jdbc:trino://<host>:<port>/<catalog>[?SSL=true]"
# The URL settings the dialect reads; any other is refused rather than ignored.
URL_SETTINGS = ("ssl",)
_FLOATS = frozenset({"real", "double"})
_TEXT = re.compile(r"^(varchar(\(\d+\))?|char(\(\d+\))?|uuid)$")
_INTEGER = frozenset({"tinyint", "smallint", "integer", "bigint"})
_DECIMAL = re.compile(r"^decimal\(\d+,\s*\d+\)$")
_TIMESTAMP = re.compile(r"^timestamp(\(\d+\))?$")
_TIMESTAMPTZ = re.compile(r"^timestamp(\(\d+\))? with time zone$")
_ISO = "'%Y-%m-%dT%H:%i:%s.%fZ'"


def _parts(url: str) -> tuple[str, int | None, str, dict[str, str]]:
    """(host, port, catalog, settings in lower case) of a jdbc:trino:// URL."""
    parts = urlsplit(url.removeprefix("jdbc:"))
    catalog = parts.path.strip("/").split("/")[0] if parts.path else ""
    settings = {k.lower(): v for k, v in parse_qsl(parts.query, keep_blank_values=True)}
    return parts.hostname or "", parts.port, catalog, settings


class TrinoDialect(WarehouseDialect):
    name = "trino"
    display_name = "Trino"
    jdbc_subprotocols = ("trino",)
    url_form = URL_FORM
    table_formats = ("iceberg",)
    sqlglot_dialect = "trino"
    identifier_case = "lower"
    identity_columns = False
    single_writer = False
    replace_strategy = "create_or_replace"
    transactional = False
    update_with_merge = True
    placeholder = "?"

    # -- configuration --------------------------------------------------------------------------
    @classmethod
    def parse_url(cls, url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
        """jdbc:trino://host:port/catalog: the catalog holds the section's schema; the login is not in it."""
        rest = url[len("jdbc:trino:") :]
        parts = urlsplit(rest)
        if not rest.startswith("//") or not parts.hostname:
            raise refuse(found=shown_url(url), expected=URL_FORM, remedy="name the server after jdbc:trino://")
        refuse_credentials(parts.query, refuse)
        if parts.username or parts.password:
            raise refuse(
                "the URL carries a login",
                found=shown_url(url),
                expected="a URL without user or password",
                remedy="set user and secret in the Warehouse section",
            )
        _host, _port, catalog, settings = _parts(url)
        path = parts.path.strip("/").split("/")
        if not catalog or len(path) > 1:
            raise refuse(
                "the URL does not name exactly one catalog",
                found=shown_url(url),
                expected=URL_FORM,
                remedy="name the Iceberg catalog after the port, and the schema in the section's `schema`",
            )
        unknown = sorted(set(settings) - set(URL_SETTINGS))
        if unknown:
            raise refuse(
                f"the setting(s) {', '.join(unknown)} are not read by the Trino dialect",
                found=shown_url(url),
                expected="settings among SSL",
                remedy="remove them",
            )
        if settings.get("ssl", "false").lower() not in ("true", "false"):
            raise refuse(found=shown_url(url), expected="SSL=true or SSL=false", remedy="correct the SSL setting")
        return JdbcTarget(cls.name, url)

    @classmethod
    def read_profile(cls, reader: Reader, profile: ConnectionProfile) -> ConnectionProfile:
        checked = super().read_profile(reader, profile)
        if checked.auth_mode == "key_file":
            raise reader.error(
                "auth_mode",
                found="key_file",
                expected="auth_mode password (LDAP, over SSL) or token (JWT), or none with a user",
                remedy="use auth_mode password or token; Trino's certificate login is not supported",
            )
        return checked

    # -- connections ----------------------------------------------------------------------------
    def connection_arguments(self) -> dict[str, Any]:
        """The client's keyword arguments: server, catalog and schema, login, UTC sessions."""
        import trino.auth

        host, port, catalog, settings = _parts(self.profile.jdbc_url)
        ssl = settings.get("ssl", "false").lower() == "true"
        args: dict[str, Any] = {
            "host": host,
            "port": port or (443 if ssl else 8080),
            "catalog": catalog,
            "schema": self.fold(self.profile.schema or "default"),
            "user": self.profile.user or "etl-craft",
            "http_scheme": "https" if ssl else "http",
            "timezone": "UTC",
            "source": "etl-craft",
        }
        secret = self.config.secret(self.profile.secret_var) if self.profile.secret_var else None
        if self.profile.auth_mode == "password":
            args["auth"] = trino.auth.BasicAuthentication(self.profile.user, secret)
        elif self.profile.auth_mode == "token":
            args["auth"] = trino.auth.JWTAuthentication(secret)
        return args

    def connect(self) -> Session:
        import trino.dbapi
        import trino.exceptions

        with driver_errors(trino.exceptions.Error, "connect"):
            conn = trino.dbapi.connect(**self.connection_arguments())
        return AutocommitSession(self, conn, trino.exceptions.Error)

    def script_engine(self) -> sa.Engine:
        import sqlalchemy as sa

        args = self.connection_arguments()
        url = sa.URL.create(
            "trino", host=args["host"], port=args["port"], database=f"{args['catalog']}/{args['schema']}"
        )
        connect_args = {k: args[k] for k in ("http_scheme", "source", "auth") if k in args}
        return sa.create_engine(url, connect_args={**connect_args, "user": args["user"]})

    def server_address(self) -> tuple[str, int, str] | None:
        host, port, catalog, settings = _parts(self.profile.jdbc_url)
        return host, port or (443 if settings.get("ssl", "false").lower() == "true" else 8080), catalog

    def database_name(self) -> str | None:
        return self.fold(_parts(self.profile.jdbc_url)[2])

    # -- catalog --------------------------------------------------------------------------------
    def _lookup(self, session: Session, catalog: str | None, schema: str, table: str) -> list[Column]:
        prefix = f"{self.ident(catalog)}." if catalog else ""
        found = session.rows(
            f"SELECT column_name, data_type FROM {prefix}information_schema.columns"
            " WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            (schema, table),
        )
        return [Column(str(n), str(t).replace(", ", ",")) for n, t in found]

    def columns(self, session: Session, parts: tuple[str, ...]) -> list[Column]:
        catalog = parts[0] if len(parts) == 3 else None
        return self._lookup(session, catalog, self.fold(parts[-2]), self.fold(parts[-1]))

    def scratch_columns(self, session: Session, name: str) -> list[Column]:
        return self._lookup(session, None, self.fold(self.profile.schema or "default"), name)

    def table_format(self, session: Session, parts: tuple[str, ...]) -> str:
        return "iceberg"  # the catalog the URL names is an Iceberg catalog (docs/warehouses/trino.md)

    # -- stages ---------------------------------------------------------------------------------
    def scratch_sql(self, name: str) -> str:
        return f"{self.ident(self.profile.schema or 'default')}.{self.quote(name)}"

    def stage_select(self, session: Session, name: str, select: str) -> None:
        session.execute(f"CREATE TABLE {self.scratch_sql(name)} AS {select}")

    def create_scratch_table_sql(self, name: str, definition: str) -> str:
        return f"CREATE TABLE {self.scratch_sql(name)} ({definition})"

    # -- SQL ------------------------------------------------------------------------------------
    def timestamp_type(self) -> str:
        return "TIMESTAMP(6) WITH TIME ZONE"  # Iceberg's timestamptz: microseconds, stored in UTC

    def is_float(self, type_text: str) -> bool:
        return type_text.lower() in _FLOATS

    def canonical_text(self, expr: str, type_text: str) -> str | None:
        kind = type_text.lower()
        if _TEXT.match(kind) or kind in _INTEGER or _DECIMAL.match(kind):
            return f"CAST({expr} AS VARCHAR)"  # a decimal keeps its declared scale: 1.500 for DECIMAL(12,3)
        if kind == "boolean":
            return f"CASE WHEN {expr} THEN 'true' ELSE 'false' END"
        if kind == "date":
            return f"date_format(CAST({expr} AS TIMESTAMP), '%Y-%m-%d')"
        if _TIMESTAMP.match(kind):
            return f"date_format({expr}, {_ISO})"
        if _TIMESTAMPTZ.match(kind):
            return f"date_format({expr} AT TIME ZONE 'UTC', {_ISO})"
        return None  # TIME: no form the suite can prove yet (docs/warehouses/trino.md, limits)

    def md5_sql(self, expr: str) -> str:
        return f"lower(to_hex(md5(to_utf8({expr}))))"
