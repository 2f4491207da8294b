"""PostgreSQL through psycopg 3: one transaction per action, temporary stages, identity ROW_IDs.

Sessions start in UTC (SET TIME ZONE before the first transaction), so timestamps with a time zone
render the same on every host. Stages are indexed on the merge key before they are joined, and
analyzed unless a unique index on one column already tells the planner what it needs, because
temporary tables are never analyzed by autovacuum.

An author's SELECT runs read-only: the stage is created empty, then filled by an INSERT inside a
savepoint whose subtransaction is READ ONLY. A subtransaction's read-only mode ends with it (even when
it is released), so the action's own writes that follow are not affected, and the stage's rows stay.
A function with side effects (setval, nextval, one that writes a table) fails there with SQLSTATE
25006 before it changes anything. The driver is imported when a session connects.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, ClassVar

from etl_craft.config.dialects.postgresql import POSTGRES_FORM, parse_postgres, postgres_address
from etl_craft.config.urls import JdbcTarget, Refuse, Resolve
from etl_craft.warehouse.dialect import WarehouseDialect
from etl_craft.warehouse.session import Column, ReadOnlyViolation, Session, WarehouseError, driver_errors

if TYPE_CHECKING:
    import psycopg
    import sqlalchemy as sa

READ_ONLY_SQLSTATE = "25006"  # read_only_sql_transaction
_FLOATS = frozenset({"real", "double precision"})
_TEXT = re.compile(r"^(text|character varying(\(\d+\))?|character(\(\d+\))?|bpchar|name|citext|uuid)$")
_INTEGER = frozenset({"smallint", "integer", "bigint"})
_NUMERIC = re.compile(r"^numeric\(\d+,\d+\)$")
_TIMESTAMP = re.compile(r"^timestamp(\(\d\))? without time zone$")
_TIMESTAMPTZ = re.compile(r"^timestamp(\(\d\))? with time zone$")
_TIME = re.compile(r"^time(\(\d\))? without time zone$")
_ISO = '\'YYYY-MM-DD"T"HH24:MI:SS.US"Z"\''


class PostgresSession(Session):
    def __init__(self, dialect: PostgresDialect, conn: psycopg.Connection[Any], error_class: type[Exception]) -> None:
        super().__init__(dialect, error_class)
        self.conn = conn

    def _statement(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        cursor = self.conn.execute(sql, params)
        return (cursor.fetchall() if fetch else []), cursor.rowcount

    def begin(self) -> None:
        """psycopg opens a transaction with the first statement; nothing to send."""

    def commit(self) -> None:
        self.conn.commit()

    def rollback(self) -> None:
        from psycopg.pq import TransactionStatus

        # ACTIVE: a statement interrupted by SIGTERM (cancelled, S5.D) still holds the connection; no
        # ROLLBACK can be sent, and the server rolls the transaction back when the connection closes.
        if not self.conn.closed and self.conn.info.transaction_status != TransactionStatus.ACTIVE:
            self.conn.rollback()

    def close(self) -> None:
        self.conn.close()

    def cancel_statement(self) -> str | None:
        # libpq's cancel request over a new connection to the server, as pg_cancel_backend(pid) would.
        self.conn.cancel_safe(timeout=10.0)
        return f"a cancel request for backend {self.conn.info.backend_pid}"


class PostgresDialect(WarehouseDialect):
    name = "postgres"
    display_name = "PostgreSQL"
    jdbc_subprotocols = ("postgresql",)
    url_form = POSTGRES_FORM
    sqlglot_dialect = "postgres"
    identifier_case = "lower"
    identity_columns = True
    single_writer = False
    session_settings: ClassVar[tuple[str, ...]] = ("SET TIME ZONE 'UTC'",)
    placeholder = "%s"

    # -- configuration --------------------------------------------------------------------------
    @classmethod
    def parse_url(cls, url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
        return parse_postgres(url, resolve, refuse)

    # -- connections ----------------------------------------------------------------------------
    def connect(self) -> Session:
        import psycopg

        from etl_craft.engine.dialects.postgresql.connect import connection_arguments

        url, args, _display = connection_arguments(self.config, self.profile)
        with driver_errors(psycopg.Error, "connect"):
            conn = psycopg.connect(host=url.host, port=url.port, dbname=url.database, autocommit=False, **args)
        return PostgresSession(self, conn, psycopg.Error)

    def script_engine(self) -> sa.Engine:
        import sqlalchemy as sa

        from etl_craft.engine.dialects.postgresql.connect import connection_arguments

        url, args, _ = connection_arguments(self.config, self.profile)
        return sa.create_engine(url, connect_args=args, pool_pre_ping=True)

    def server_address(self) -> tuple[str, int, str] | None:
        return postgres_address(self.profile.jdbc_url)

    def database_name(self) -> str | None:
        return postgres_address(self.profile.jdbc_url)[2] or None

    # -- catalog --------------------------------------------------------------------------------
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

    def describe_schemas(self, session: Session, schemas: Sequence[str]) -> list[tuple[Any, ...]]:
        # pg_catalog rather than information_schema: the comments live in pg_description only.
        return session.rows(
            "SELECT n.nspname, c.relname, a.attname, format_type(a.atttypid, a.atttypmod),"
            " col_description(c.oid, a.attnum), obj_description(c.oid, 'pg_class') FROM pg_attribute a"
            " JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = ANY(%s) AND a.attnum > 0 AND NOT a.attisdropped"
            " AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY n.nspname, c.relname, a.attnum",
            ([self.fold(s) for s in schemas],),
        )

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

    # -- reading an author's SELECT -------------------------------------------------------------
    @contextmanager
    def read_only(self, session: Session) -> Iterator[None]:
        session.execute("SAVEPOINT etl_read_only")
        session.execute("SET TRANSACTION READ ONLY")
        try:
            yield
        except WarehouseError as exc:
            if exc.sqlstate != READ_ONLY_SQLSTATE:
                raise
            raise ReadOnlyViolation(exc.kind, exc.message, exc.sql, exc.sqlstate) from exc
        session.execute("RELEASE SAVEPOINT etl_read_only")

    def stage_select(self, session: Session, name: str, select: str) -> None:
        # WITH NO DATA plans the SELECT for the stage's columns without running it.
        session.execute(f"CREATE TEMPORARY TABLE {self.scratch_sql(name)} AS {select}\nWITH NO DATA")
        with self.read_only(session):
            session.execute(f"INSERT INTO {self.scratch_sql(name)}\n{select}")

    # -- SQL ------------------------------------------------------------------------------------
    def row_id_column_sql(self, column: str) -> str:
        return f"{self.ident(column)} BIGINT GENERATED BY DEFAULT AS IDENTITY"

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
