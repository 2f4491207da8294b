"""DuckDB files: the default local warehouse. One writer per file, so every session holds an Engine DB lock.

DuckDB keeps names as written and matches them case-insensitively. Its DDL is transactional, so
CREATE_TABLE and OVERWRITE_TABLE replace a table inside the action's transaction. ROW_IDs are
computed (MAX + ROW_NUMBER) under the target lock: the writer lock already serialises every write
to the file, and a computed key needs no sequence object to carry through replacements.
"""

from __future__ import annotations

import getpass
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import duckdb

from etl_craft.handlers.sql.dialect import Column, Session, WarehouseDialect, WarehouseError, log

_FLOATS = frozenset({"float", "double", "real", "float4", "float8"})
_TEXT = frozenset({"varchar", "uuid"})
_INTEGER = frozenset(
    {"tinyint", "smallint", "integer", "bigint", "hugeint", "utinyint", "usmallint", "uinteger", "ubigint"}
)
_DECIMAL = re.compile(r"^decimal\(\d+,\d+\)$")
_TIMESTAMP = frozenset({"timestamp", "timestamp_ms", "timestamp_s", "timestamp_ns"})
_ISO = "'%Y-%m-%dT%H:%M:%S.%fZ'"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


class DuckDBSession(Session):
    def __init__(self, dialect: DuckDBDialect, conn: duckdb.DuckDBPyConnection) -> None:
        super().__init__(dialect)
        self.conn = conn
        self._open_transaction = False

    def _run(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        started = time.monotonic()
        try:
            result = self.conn.execute(sql, params) if params is not None else self.conn.execute(sql)
            rows = result.fetchall()
            log.debug("warehouse statement (%.3f s):\n%s", time.monotonic() - started, sql)
        except duckdb.Error as exc:
            raise WarehouseError(type(exc).__name__, _first_line(exc), sql) from exc
        if fetch:
            return rows, len(rows)
        # INSERT, UPDATE and DELETE answer with one row holding the number of rows they changed.
        changed = rows[0][0] if len(rows) == 1 and len(rows[0]) == 1 and isinstance(rows[0][0], int) else -1
        return [], changed

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        try:
            self.conn.executemany(sql, [list(r) for r in rows])
        except duckdb.Error as exc:
            raise WarehouseError(type(exc).__name__, _first_line(exc), sql) from exc

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
            except duckdb.Error:
                log.debug("rollback after a failed DuckDB transaction", exc_info=True)

    def close(self) -> None:
        self.conn.close()


class DuckDBDialect(WarehouseDialect):
    name = "duckdb"
    display_name = "DuckDB"
    sqlglot_dialect = "duckdb"
    replace_strategy = "transactional"
    update_strategy = "update_from"
    identifier_case = None
    identity_columns = False
    temporary_tables = True
    table_formats = ("native",)
    single_writer = True
    index_stages = False
    session_settings: ClassVar[tuple[str, ...]] = ("SET TimeZone = 'UTC'",)
    max_parameters = 65535

    @property
    def path(self) -> Path:
        return Path(self.profile.jdbc_url.removeprefix("jdbc:duckdb:").split("?", 1)[0])

    def writer_lock_name(self) -> str:
        # The same name ingestion scripts' task.warehouse() waits on (etl_craft.scripting.DUCKDB_WRITER_LOCK).
        file = self.profile.jdbc_url.removeprefix("jdbc:duckdb:").partition("?")[0]
        return f"duckdb-writer:{file}"

    def connect(self) -> Session:
        try:
            conn = duckdb.connect(str(self.path))
        except duckdb.Error as exc:
            raise WarehouseError(type(exc).__name__, _first_line(exc), "connect") from exc
        return DuckDBSession(self, conn)

    def database_name(self) -> str | None:
        return self.path.stem

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

    def scratch_columns(self, session: Session, name: str) -> list[Column]:
        return self._lookup(session, "temp", "main", name)

    def login_sql(self) -> str:
        # A DuckDB file has no login; the operating-system user who ran the task stands in for it.
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
