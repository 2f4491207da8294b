"""PostgreSQL through psycopg 3: one transaction per action, temporary stages, identity ROW_IDs.

Sessions start in UTC (SET TIME ZONE before the first transaction), so timestamps with a time zone
render the same on every host. Stages are indexed on the merge key before they are joined, and
analyzed unless a unique index on one column already tells the planner what it needs, because
temporary tables are never analyzed by autovacuum.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any, ClassVar
from urllib.parse import urlsplit

import psycopg

from etl_craft.engine.dialects.postgresql.connect import connection_arguments
from etl_craft.handlers.sql.dialect import Column, Session, WarehouseDialect, WarehouseError, log

_FLOATS = frozenset({"real", "double precision"})
_TEXT = re.compile(r"^(text|character varying(\(\d+\))?|character(\(\d+\))?|bpchar|name|citext|uuid)$")
_INTEGER = frozenset({"smallint", "integer", "bigint"})
_NUMERIC = re.compile(r"^numeric\(\d+,\d+\)$")
_TIMESTAMP = re.compile(r"^timestamp(\(\d\))? without time zone$")
_TIMESTAMPTZ = re.compile(r"^timestamp(\(\d\))? with time zone$")
_TIME = re.compile(r"^time(\(\d\))? without time zone$")
_ISO = '\'YYYY-MM-DD"T"HH24:MI:SS.US"Z"\''


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


class PostgresSession(Session):
    def __init__(self, dialect: PostgresDialect, conn: psycopg.Connection[Any]) -> None:
        super().__init__(dialect)
        self.conn = conn

    def _run(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        started = time.monotonic()
        try:
            cursor = self.conn.execute(sql, params)
            rows = cursor.fetchall() if fetch else []
            log.debug("warehouse statement (%.3f s):\n%s", time.monotonic() - started, sql)
            return rows, cursor.rowcount
        except psycopg.Error as exc:
            raise WarehouseError(type(exc).__name__, _first_line(exc), sql, exc.sqlstate) from exc

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        try:
            with self.conn.cursor() as cursor:
                cursor.executemany(sql, rows)
        except psycopg.Error as exc:
            raise WarehouseError(type(exc).__name__, _first_line(exc), sql, exc.sqlstate) from exc

    def begin(self) -> None:
        """psycopg opens a transaction with the first statement; nothing to send."""

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        if not self.conn.closed:
            self.conn.rollback()

    def close(self) -> None:
        self.conn.close()


class PostgresDialect(WarehouseDialect):
    name = "postgres"
    display_name = "PostgreSQL"
    sqlglot_dialect = "postgres"
    replace_strategy = "transactional"
    update_strategy = "update_from"
    identifier_case = "lower"
    identity_columns = True
    temporary_tables = True
    table_formats = ("native",)
    single_writer = False
    index_stages = True
    session_settings: ClassVar[tuple[str, ...]] = ("SET TIME ZONE 'UTC'",)
    max_parameters = 65535
    placeholder = "%s"

    def connect(self) -> Session:
        url, args, _display = connection_arguments(self.config, self.profile)
        try:
            conn = psycopg.connect(host=url.host, port=url.port, dbname=url.database, autocommit=False, **args)
        except psycopg.Error as exc:
            raise WarehouseError(type(exc).__name__, _first_line(exc), "connect") from exc
        return PostgresSession(self, conn)

    def database_name(self) -> str | None:
        return urlsplit(self.profile.jdbc_url.removeprefix("jdbc:")).path.lstrip("/") or None

    def _schema_table(self, parts: tuple[str, ...]) -> tuple[str, str]:
        return self.fold(parts[-2]), self.fold(parts[-1])

    def table_sql(self, parts: tuple[str, ...]) -> str:
        # PostgreSQL can't reach another database, so a database part (checked) is left out.
        return ".".join(self.ident(p) for p in parts[-2:])

    def columns(self, session: Session, parts: tuple[str, ...]) -> list[Column]:
        schema, table = self._schema_table(parts)
        found = session.rows(
            "SELECT a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a"
            " JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = %s AND c.relname = %s AND a.attnum > 0 AND NOT a.attisdropped"
            " AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY a.attnum",
            (schema, table),
        )
        return [Column(str(name), str(type_)) for name, type_ in found]

    def scratch_columns(self, session: Session, name: str) -> list[Column]:
        found = session.rows(
            "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
            " WHERE attrelid = to_regclass(%s) AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
            (self.scratch_sql(name),),
        )
        return [Column(str(n), str(t)) for n, t in found]

    def row_id_generated(self, session: Session, parts: tuple[str, ...], column: str) -> bool:
        schema, table = self._schema_table(parts)
        found = session.scalar(
            "SELECT a.attidentity <> '' OR COALESCE(position('nextval(' in pg_get_expr(d.adbin, d.adrelid)) = 1, false)"
            " FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace"
            " LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum"
            " WHERE n.nspname = %s AND c.relname = %s AND a.attname = %s AND NOT a.attisdropped",
            (schema, table, self.fold(column)),
        )
        return bool(found)

    def row_id_column_sql(self, column: str) -> str:
        return f"{self.ident(column)} BIGINT GENERATED BY DEFAULT AS IDENTITY"

    def timestamp_type(self) -> str:
        return "TIMESTAMP WITH TIME ZONE"

    def analyze_stage(self, session: Session, stage: str, keys: Sequence[str], unique: bool) -> bool:
        """A (unique) index on the merge key, analyzed where needed; a unique index that fails means repeated keys."""
        table = self.scratch_sql(stage)
        columns = ", ".join(keys)
        if unique:
            session.execute("SAVEPOINT etl_stage_index")
            try:
                session.execute(f"CREATE UNIQUE INDEX ON {table} ({columns})")
            except WarehouseError as exc:
                if exc.sqlstate != "23505":
                    raise
                session.execute("ROLLBACK TO SAVEPOINT etl_stage_index")
                return False
            session.execute("RELEASE SAVEPOINT etl_stage_index")
        else:
            session.execute(f"CREATE INDEX ON {table} ({columns})")
        # CREATE INDEX records the stage's exact row count, and a unique index on one column tells the
        # planner every key is distinct: all the merge joins need. Other keys need ANALYZE's statistics.
        if not unique or len(keys) > 1:
            session.execute(f"ANALYZE {table}")
        return True

    def is_float(self, type_text: str) -> bool:
        return type_text.lower() in _FLOATS

    def canonical_text(self, expr: str, type_text: str) -> str | None:
        kind = type_text.lower()
        if _TEXT.match(kind) or kind in _INTEGER or _NUMERIC.match(kind):
            return f"CAST({expr} AS TEXT)"
        if kind == "boolean":
            return f"CASE WHEN {expr} THEN 'true' ELSE 'false' END"
        if kind == "date":
            return f"to_char({expr}, 'YYYY-MM-DD')"
        if _TIMESTAMP.match(kind):
            return f"to_char({expr}, {_ISO})"
        if _TIMESTAMPTZ.match(kind):
            return f"to_char({expr} AT TIME ZONE 'UTC', {_ISO})"
        if _TIME.match(kind):
            return f"to_char(DATE '2000-01-01' + {expr}, 'HH24:MI:SS.US')"
        return None
