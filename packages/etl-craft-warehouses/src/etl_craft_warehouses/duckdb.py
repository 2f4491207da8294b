"""DuckDB files: the default local warehouse. One writer per file, so every session holds an Engine DB lock.

DuckDB keeps names as written and matches them case-insensitively. Its DDL is transactional, so
CREATE_TABLE and OVERWRITE_TABLE replace a table inside the action's transaction. ROW_IDs are
computed (MAX + ROW_NUMBER) under the target lock: the writer lock already serialises every write
to the file, and a computed key needs no sequence object to carry through replacements. DuckDB has
no read-only transaction inside a writing connection, so the functions that change state are refused
in an author's SELECT before it runs. The driver is imported when a session connects.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import parse_qsl

from etl_craft.config.connections import LOGIN_KEYS, refuse_keys
from etl_craft.config.model import ConnectionProfile
from etl_craft.config.urls import JdbcTarget, Refuse, Resolve, refuse_credentials, shown_url, url_kind
from etl_craft.config.values import Reader
from etl_craft.warehouse.dialect import WarehouseDialect
from etl_craft.warehouse.session import Column, Session, driver_errors, log

if TYPE_CHECKING:
    import duckdb
    import sqlalchemy as sa

_CATALOG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FLOATS = frozenset({"float", "double", "real", "float4", "float8"})
_TEXT = frozenset({"varchar", "uuid"})
_INTEGER = frozenset(
    {"tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger", "ubigint"}
)
_DECIMAL = re.compile(r"^decimal\(\d+,\d+\)$")
_TIMESTAMP = frozenset({"timestamp", "timestamp_ms", "timestamp_s", "timestamp_ns"})
_ISO = "'%Y-%m-%dT%H:%M:%S.%fZ'"


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def _file_and_settings(url: str) -> tuple[str, str]:
    """The file and the settings of a jdbc:<subprotocol>:<file>[?settings] URL."""
    path, _, query = url.split(":", 2)[2].partition("?")
    return path, query


class DuckDBSession(Session):
    def __init__(self, dialect: DuckDBDialect, conn: duckdb.DuckDBPyConnection, error_class: type[Exception]) -> None:
        super().__init__(dialect, error_class)
        self.conn = conn
        self._open_transaction = False

    def _statement(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        result = self.conn.execute(sql, params) if params is not None else self.conn.execute(sql)
        rows = result.fetchall()
        if fetch:
            return rows, len(rows)
        # INSERT, UPDATE and DELETE answer with one row holding the number of rows they changed.
        changed = rows[0][0] if len(rows) == 1 and len(rows[0]) == 1 and isinstance(rows[0][0], int) else -1
        return [], changed

    def begin(self) -> None:
        self.conn.begin()
        self._open_transaction = True

    def commit(self) -> None:
        if self._open_transaction:
            self._open_transaction = False
            self.conn.commit()

    def rollback(self) -> None:
        if self._open_transaction:
            self._open_transaction = False
            try:
                self.conn.rollback()
            except self.error_class:
                log.debug("rollback after a failed DuckDB transaction", exc_info=True)

    def close(self) -> None:
        self.conn.close()

    def cancel_statement(self) -> str | None:
        self.conn.interrupt()  # the statement stops with an InterruptException in this process
        return "DuckDB interrupt()"


class DuckDBDialect(WarehouseDialect):
    name = "duckdb"
    display_name = "DuckDB"
    jdbc_subprotocols = ("duckdb",)
    url_form = "jdbc:duckdb:<file>"
    default_schema = "main"
    profile_keys = ()
    sqlglot_dialect = "duckdb"
    identifier_case = None
    identity_columns = False
    single_writer = True
    session_settings: ClassVar[tuple[str, ...]] = ("SET TimeZone = 'UTC'",)
    state_changing_functions = frozenset({"nextval", "setval", "setseed", "checkpoint", "force_checkpoint"})

    # -- configuration --------------------------------------------------------------------------
    @classmethod
    def parse_url(cls, url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
        """A file (resolved beside the config) whose stem makes DuckDB's catalog name; never in memory."""
        path, query = _file_and_settings(url)
        if path == "" or path.startswith(":memory:"):
            raise refuse(
                "an in-memory DuckDB database",
                found=shown_url(url),
                expected=f"{cls.url_form}, e.g. {cls.url_form.replace('<file>', 'warehouse.duckdb')}",
                remedy="name a file: each task runs in its own process and would see an empty in-memory database",
            )
        refuse_credentials(query, refuse)
        if not _CATALOG_NAME.fullmatch(Path(path).stem):
            raise refuse(
                f"the file name {Path(path).name!r} does not make a catalog name",
                expected="a file name whose stem is letters, digits and _, not starting with a digit",
                remedy="rename the file, e.g. warehouse.duckdb; DuckDB uses that name as the catalog",
            )
        rewritten = f"jdbc:{url_kind(url)}:{resolve(path)}" + (f"?{query}" if query else "")
        return JdbcTarget(cls.name, rewritten)

    @classmethod
    def read_profile(cls, reader: Reader, profile: ConnectionProfile) -> ConnectionProfile:
        refuse_keys(reader, LOGIN_KEYS, "is not used: a DuckDB file has no login")
        return profile

    @classmethod
    def describe_login(cls, profile: ConnectionProfile) -> str:
        return "a file, no login"

    # -- connections ----------------------------------------------------------------------------
    @property
    def path(self) -> Path:
        return Path(_file_and_settings(self.profile.jdbc_url)[0])

    def writer_lock_name(self) -> str:
        # One lock per file, whichever Warehouse settings name it: SQL tasks and task.warehouse() share it.
        return f"duckdb-writer:{self.path}"

    def storage_file(self) -> Path | None:
        return self.path

    def connect(self) -> Session:
        import duckdb

        with driver_errors(duckdb.Error, "connect"):
            conn = duckdb.connect(str(self.path))
        return DuckDBSession(self, conn, duckdb.Error)

    def script_engine(self) -> sa.Engine:
        import sqlalchemy as sa
        from sqlalchemy.pool import NullPool

        settings = dict(parse_qsl(_file_and_settings(self.profile.jdbc_url)[1], keep_blank_values=True))
        # NullPool: the file stays locked only while a connection is open, so the next writer can start.
        return sa.create_engine(
            sa.URL.create("duckdb", database=str(self.path)),
            poolclass=NullPool,
            connect_args={"config": settings} if settings else {},
        )

    def database_name(self) -> str | None:
        return self.path.stem

    # -- catalog --------------------------------------------------------------------------------
    def _lookup(self, session: Session, database: str | None, schema: str, table: str) -> list[Column]:
        found = session.rows(
            "SELECT column_name, data_type FROM duckdb_columns()"
            " WHERE lower(database_name) = lower(coalesce(?, current_database()))"
            " AND lower(schema_name) = lower(?) AND lower(table_name) = lower(?)"
            " ORDER BY column_index",
            [database, schema, table],
        )
        return [Column(str(n), str(t)) for n, t in found]

    def columns(self, session: Session, parts: tuple[str, ...]) -> list[Column]:
        database = parts[0] if len(parts) == 3 else None
        return self._lookup(session, database, parts[-2], parts[-1])

    def describe_schemas(self, session: Session, schemas: Sequence[str]) -> list[tuple[Any, ...]]:
        return session.rows(
            "SELECT c.schema_name, c.table_name, c.column_name, c.data_type, c.comment, t.comment"
            " FROM duckdb_columns() c LEFT JOIN duckdb_tables() t ON t.table_oid = c.table_oid"
            " WHERE c.database_name = current_database() AND list_contains(?, lower(c.schema_name))"
            " ORDER BY c.schema_name, c.table_name, c.column_index",
            [[s.lower() for s in schemas]],
        )

    def scratch_columns(self, session: Session, name: str) -> list[Column]:
        return self._lookup(session, "temp", "main", name)

    # -- SQL ------------------------------------------------------------------------------------
    def login_sql(self) -> str:
        # A DuckDB file has no login; the operating-system user who ran the task stands in for it.
        import getpass

        try:
            user = getpass.getuser()
        except (KeyError, OSError):
            user = "duckdb"
        return _sql_string(user)

    def is_float(self, type_text: str) -> bool:
        return type_text.lower() in _FLOATS

    def canonical_text(self, expr: str, type_text: str) -> str | None:
        kind = type_text.lower()
        if kind in _TEXT or kind in _INTEGER or _DECIMAL.match(kind):
            return f"CAST({expr} AS VARCHAR)"
        if kind == "boolean":
            return f"CASE WHEN {expr} THEN 'true' ELSE 'false' END"
        if kind == "date":
            return f"strftime({expr}, '%Y-%m-%d')"
        if kind in _TIMESTAMP:
            return f"strftime(CAST({expr} AS TIMESTAMP), {_ISO})"
        if kind == "timestamp with time zone":
            return f"strftime({expr} AT TIME ZONE 'UTC', {_ISO})"
        if kind == "time":
            return f"strftime(DATE '2000-01-01' + {expr}, '%H:%M:%S.%f')"
        return None
