"""Snowflake through snowflake-connector-python (extra `etl-craft-warehouses[snowflake]`).

Snowflake folds unquoted names to upper case. Its DML is transactional but every DDL statement
commits the open transaction, so the actions are built to stay safe around that: a stage is created
before the target is touched and dropped after the writes; CREATE_TABLE publishes with one
`CREATE OR REPLACE TABLE ... AS SELECT` (atomic: the old table stays until the new one is complete),
and OVERWRITE_TABLE and the merges change rows with DML only. Sessions start in UTC through the
connection's TIMEZONE parameter. ROW_IDs are computed (MAX + ROW_NUMBER) under the target lock.
Snowflake has no read-only transaction, so the functions that change state are refused in an
author's SELECT before it runs.

A stage is a TRANSIENT table (no Fail-safe storage) in the section's schema, named
`etl_stage_<task_run_id>_<token>` and dropped by the action: a temporary table's columns are not in
the information schema of every Snowflake-compatible engine, and the stage's full types (VARCHAR
lengths, NUMBER scales) must be read from it. A task process killed mid-action can leave one behind
(docs/warehouses/snowflake.md, limits). The driver is imported when a session connects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlsplit

from etl_craft.config.connections import with_login
from etl_craft.config.model import ConnectionProfile
from etl_craft.config.urls import JdbcTarget, Refuse, Resolve, refuse_credentials, shown_url
from etl_craft.config.values import Reader
from etl_craft.core.errors import ConfigurationError
from etl_craft.warehouse.dialect import WarehouseDialect
from etl_craft.warehouse.session import Column, Session, driver_errors

if TYPE_CHECKING:
    import snowflake.connector
    import sqlalchemy as sa

URL_FORM = "jdbc:snowflake://<account>.snowflakecomputing.com/?db=<database>[&warehouse=<name>][&role=<name>]"
# The URL settings the dialect reads; any other is refused rather than ignored.
URL_SETTINGS = ("db", "warehouse", "role", "account", "ssl")
_FLOATS = frozenset({"float", "double", "real", "double precision", "float4", "float8"})
_NUMBER = re.compile(r"^number\((\d+),(\d+)\)$")
_TEXT = re.compile(r"^varchar(\(\d+\))?$")
_ISO = "'YYYY-MM-DD\"T\"HH24:MI:SS.FF6'"
_MAX_VARCHAR = 16_777_216
_INTEGERS = frozenset({"INT", "INTEGER", "BIGINT", "SMALLINT", "TINYINT", "BYTEINT"})
_INFORMATION_TYPES = {"TEXT": "VARCHAR", "FIXED": "NUMBER", "REAL": "FLOAT"}


def _settings(url: str) -> tuple[str, int | None, dict[str, str]]:
    parts = urlsplit(url.removeprefix("jdbc:"))
    return parts.hostname or "", parts.port, {k.lower(): v for k, v in parse_qsl(parts.query, keep_blank_values=True)}


def type_text(kind: str, length: int | None, precision: int | None, scale: int | None) -> str:
    """The DDL type of a column from its catalog or result metadata: NUMBER(p,s), VARCHAR(n), ..."""
    kind = _INFORMATION_TYPES.get(kind.upper(), kind.upper())
    if kind in _INTEGERS:  # Snowflake's synonyms of NUMBER(38,0)
        return "NUMBER(38,0)"
    if kind == "NUMBER":
        return f"NUMBER({precision if precision is not None else 38},{scale or 0})"
    if kind == "VARCHAR":
        # 16,777,216 is VARCHAR's maximum, which Snowflake reports for a VARCHAR declared without one.
        return f"VARCHAR({length})" if length and length != _MAX_VARCHAR else "VARCHAR"
    return kind


class SnowflakeSession(Session):
    def __init__(
        self, dialect: SnowflakeDialect, conn: snowflake.connector.SnowflakeConnection, error_class: type[Exception]
    ) -> None:
        super().__init__(dialect, error_class)
        self.conn = conn

    def _statement(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        cursor = self.conn.cursor()
        try:
            cursor.execute(sql, params)
            rows = [tuple(r) for r in cursor.fetchall()] if fetch else []
            return rows, cursor.rowcount if cursor.rowcount is not None else -1
        finally:
            cursor.close()

    def begin(self) -> None:
        """The connection runs with autocommit off: the first statement opens the transaction."""

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        if not self.conn.is_closed():
            self.conn.rollback()

    def close(self) -> None:
        self.conn.close()


class SnowflakeDialect(WarehouseDialect):
    name = "snowflake"
    display_name = "Snowflake"
    jdbc_subprotocols = ("snowflake",)
    url_form = URL_FORM
    sqlglot_dialect = "snowflake"
    identifier_case = "upper"
    identity_columns = False
    single_writer = False
    replace_strategy = "create_or_replace"
    placeholder = "%s"
    state_changing_functions = frozenset(
        {
            "system$cancel_query",
            "system$cancel_all_queries",
            "system$abort_session",
            "system$abort_transaction",
            "system$wait",
            "system$pipe_force_resume",
            "system$task_force_resume",
            "system$set_return_value",
        }
    )

    # -- configuration --------------------------------------------------------------------------
    @classmethod
    def parse_url(cls, url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
        """jdbc:snowflake://<host>[:port]/?db=...: the host names the account unless `account=` does."""
        rest = url[len("jdbc:snowflake:") :]
        parts = urlsplit(rest)
        if not rest.startswith("//") or not parts.hostname:
            raise refuse(
                found=shown_url(url), expected=URL_FORM, remedy="name the account's host after jdbc:snowflake://"
            )
        refuse_credentials(parts.query, refuse)
        if parts.username or parts.password:
            raise refuse(
                "the URL carries a login",
                found=shown_url(url),
                expected="a URL without user or password",
                remedy="set user and secret in the Warehouse section",
            )
        _host, _port, settings = _settings(url)
        unknown = sorted(set(settings) - set(URL_SETTINGS))
        if unknown:
            raise refuse(
                f"the setting(s) {', '.join(unknown)} are not read by the Snowflake dialect",
                found=shown_url(url),
                expected="settings among " + ", ".join(URL_SETTINGS),
                remedy="remove them",
            )
        if not settings.get("db"):
            raise refuse(
                "the URL names no database",
                found=shown_url(url),
                expected=URL_FORM,
                remedy="add ?db=<database> (the database that holds the target schemas)",
            )
        if settings.get("ssl", "on").lower() not in ("on", "off"):
            raise refuse(found=shown_url(url), expected="ssl=on or ssl=off", remedy="correct the ssl setting")
        return JdbcTarget(cls.name, url)

    @classmethod
    def read_profile(cls, reader: Reader, profile: ConnectionProfile) -> ConnectionProfile:
        checked = with_login(reader, profile)
        if checked.auth_mode is None:  # Snowflake has no trust login
            raise reader.missing(
                "secret",
                expected="a login: user and secret (auth_mode password or token), or user and key_file (key pair)",
            )
        return checked

    # -- connections ----------------------------------------------------------------------------
    def connection_arguments(self) -> dict[str, Any]:
        """The driver's keyword arguments: account, host, database, schema, login; UTC sessions."""
        host, port, settings = _settings(self.profile.jdbc_url)
        args: dict[str, Any] = {
            "account": settings.get("account") or host.split(".")[0],
            "host": host,
            "database": settings["db"],
            "schema": self.fold(self.profile.schema or "PUBLIC"),
            "user": self.profile.user,
            "autocommit": False,
            "session_parameters": {"TIMEZONE": "UTC", "QUERY_TAG": "etl-craft"},
            "application": "etl_craft",
            "login_timeout": 30,
        }
        if port:
            args["port"] = port
        if settings.get("ssl", "on").lower() == "off":
            args["protocol"] = "http"
        for key in ("warehouse", "role"):
            if settings.get(key):
                args[key] = settings[key]
        mode = self.profile.auth_mode
        secret = self.config.secret(self.profile.secret_var) if self.profile.secret_var else None
        if mode == "password":
            args["password"] = secret
        elif mode == "token":
            args["authenticator"] = "oauth"
            args["token"] = secret
        elif mode == "key_file":
            if self.profile.key_file is None:
                raise ConfigurationError(
                    f"craft-connector.yml: {self.profile.where}.key_file",
                    found="nothing",
                    expected="the private key file (PEM) of the Snowflake user",
                    remedy="set key_file",
                )
            args["private_key_file"] = str(self.profile.key_file)
            if secret:
                args["private_key_file_pwd"] = secret
        return args

    def connect(self) -> Session:
        import snowflake.connector

        with driver_errors(snowflake.connector.Error, "connect"):
            conn = snowflake.connector.connect(**self.connection_arguments())
        return SnowflakeSession(self, conn, snowflake.connector.Error)

    def script_engine(self) -> sa.Engine:
        import sqlalchemy as sa

        args = self.connection_arguments()
        url = sa.URL.create("snowflake", host=args["account"], database=f"{args['database']}/{args['schema']}")
        return sa.create_engine(url, connect_args={k: v for k, v in args.items() if k != "autocommit"})

    def database_name(self) -> str | None:
        return self.fold(_settings(self.profile.jdbc_url)[2]["db"])

    # -- catalog --------------------------------------------------------------------------------
    def _lookup(self, session: Session, database: str | None, schema: str, table: str) -> list[Column]:
        prefix = f"{self.ident(database)}." if database else ""
        found = session.rows(
            "SELECT column_name, data_type, character_maximum_length, numeric_precision, numeric_scale"
            f" FROM {prefix}information_schema.columns WHERE table_schema = %s AND table_name = %s"
            " ORDER BY ordinal_position",
            (schema, table),
        )
        return [Column(str(n), type_text(str(t), length, precision, scale)) for n, t, length, precision, scale in found]

    def columns(self, session: Session, parts: tuple[str, ...]) -> list[Column]:
        database = parts[0] if len(parts) == 3 else None
        return self._lookup(session, database, self.fold(parts[-2]), self.fold(parts[-1]))

    def scratch_columns(self, session: Session, name: str) -> list[Column]:
        return self._lookup(session, None, self.fold(self.profile.schema or "PUBLIC"), name)

    # -- stages ---------------------------------------------------------------------------------
    def scratch_sql(self, name: str) -> str:
        return f"{self.ident(self.profile.schema or 'PUBLIC')}.{self.quote(name)}"

    def stage_select(self, session: Session, name: str, select: str) -> None:
        session.execute(f"CREATE TRANSIENT TABLE {self.scratch_sql(name)} AS {select}")

    def create_scratch_table_sql(self, name: str, definition: str) -> str:
        return f"CREATE TRANSIENT TABLE {self.scratch_sql(name)} ({definition})"

    # -- SQL ------------------------------------------------------------------------------------
    def login_sql(self) -> str:
        return "CURRENT_USER()"

    def timestamp_type(self) -> str:
        return "TIMESTAMP_TZ"

    def is_float(self, type_text: str) -> bool:
        return type_text.lower() in _FLOATS

    def canonical_text(self, expr: str, type_text: str) -> str | None:
        kind = type_text.lower()
        if _TEXT.match(kind) or _NUMBER.match(kind):
            return f"TO_VARCHAR({expr})"  # NUMBER keeps its declared scale: 1.500 for NUMBER(12,3)
        if kind == "boolean":
            return f"CASE WHEN {expr} THEN 'true' ELSE 'false' END"
        # The casts change nothing on Snowflake; fakesnow applies a TO_CHAR format only to a cast value.
        if kind == "date":
            return f"TO_CHAR(CAST({expr} AS DATE), 'YYYY-MM-DD')"
        if kind == "timestamp_ntz":
            return f"TO_CHAR(CAST({expr} AS TIMESTAMP_NTZ), {_ISO}) || 'Z'"
        if kind in ("timestamp_tz", "timestamp_ltz"):
            return f"TO_CHAR(CONVERT_TIMEZONE('UTC', {expr}), {_ISO}) || 'Z'"
        return None  # TIME has no form the suite can prove yet (docs/warehouses/snowflake.md, limits)
