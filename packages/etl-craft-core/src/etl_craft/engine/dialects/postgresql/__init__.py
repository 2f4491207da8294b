"""The PostgreSQL Engine DB: psycopg 3, the configured schema as search path, advisory locks and
LISTEN/NOTIFY wake-ups. One module per concern: connecting, locks, listening and access."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import ClassVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql
from sqlalchemy.pool import NullPool

from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.core.checks import FAIL, OK, CheckResult
from etl_craft.core.errors import ConfigurationError, EngineDbError
from etl_craft.engine.database import EngineDb, writing_for
from etl_craft.engine.dialects.base import EngineDialect, Listener
from etl_craft.engine.dialects.postgresql import access, connect, locks, project_login
from etl_craft.engine.dialects.postgresql.listen import PostgresListener
from etl_craft.engine.schema.scripts import ScriptRefused
from etl_craft.engine.schema.tables import PROJECT_SQL

_READ_ONLY_TRANSACTION = "25006"
_DISK_FULL = "53100"
_SET_PURPOSE = "SELECT set_config('etl_craft.purpose', %s, true)"


def _atomic_block(sql: str) -> str:
    """`sql` as the string a DO block EXECUTEs, quoted with a tag the file can't contain (so it can't
    end the string early and add statements of its own outside the block)."""
    while True:
        tag = f"$etl_craft_{secrets.token_hex(8)}$"
        outer = tag.replace("$etl_craft_", "$etl_craft_do_")
        if tag not in sql and outer not in sql:
            break
    return f"DO {outer} BEGIN EXECUTE {tag}{sql}{tag}; END {outer}"


def _project_sql_failure(sql: str, error: BaseException | None) -> str:
    """What the server said about the file, without its context (which quotes the whole file), and
    the line of the file where it points, when it does."""
    diag = getattr(error, "diag", None)
    if diag is None or not diag.message_primary:
        return str(error)
    parts = [
        diag.message_primary,
        diag.message_detail and f"DETAIL:  {diag.message_detail}",
        diag.message_hint and f"HINT:  {diag.message_hint}",
    ]
    position = int(diag.internal_position or 0)
    where = f" (line {sql[: position - 1].count(chr(10)) + 1})" if position and diag.internal_query == sql else ""
    return "; ".join(part for part in parts if part) + where


class PostgresDialect(EngineDialect):
    name = "postgresql"
    display_name = "PostgreSQL"
    sqlglot_dialect = "postgres"
    driver_modules: ClassVar[tuple[str, ...]] = (
        "psycopg",
        "sqlalchemy.dialects.postgresql.psycopg",
        "etl_craft.engine.dialects.postgresql",
    )
    shared_by_hosts = True
    sweep_seconds = 5.0  # notifications wake an overseer; the sweep is the floor
    queue_refusal = None  # FOR UPDATE SKIP LOCKED claims, LISTEN/NOTIFY wake-ups

    def open(
        self,
        config: ConnectorConfig,
        profile: ConnectionProfile,
        *,
        pooled: bool,
        check: bool,
        ping: bool,
        create: bool,
    ) -> EngineDb:
        # `create` has nothing to do here: etl-craft never creates a PostgreSQL database or schema.
        if not profile.schema:
            raise ConfigurationError(
                f"craft-connector.yml: {profile.where}.schema",
                found="nothing",
                expected="the existing schema that holds the Engine DB tables",
                remedy="add schema: <name> to the Engine profile",
            )
        url, args, display = connect.connection_arguments(config, profile)
        engine = sa.create_engine(
            url,
            connect_args=args,
            poolclass=NullPool if not pooled else None,
            pool_pre_ping=pooled and ping,
            # The Engine DB has no HSTORE column: skip the type lookup every new engine's first
            # connection would make (three round trips in each task process).
            use_native_hstore=False,
        )
        event.listen(engine, "begin", connect.on_begin)
        event.listen(engine, "rollback", connect.forget_marker)
        if check:
            connect.check_reachable_and_schema(engine, profile, display)
        return EngineDb(engine=engine, dialect=self, profile=profile, display_url=display, schema=profile.schema)

    def failure(self, db: EngineDb, error: sa.exc.DBAPIError) -> EngineDbError | None:
        state = getattr(error.orig, "sqlstate", None)
        if state == _READ_ONLY_TRANSACTION:
            return EngineDbError(
                f"the Engine DB at {db.display_url}",
                found="a read-only session (transaction_read_only is on: a standby, or a read-only default)",
                expected="a primary server that accepts writes",
                remedy="point the Engine section at the primary, or reset default_transaction_read_only for this login",
            )
        if state == _DISK_FULL:
            return EngineDbError(
                f"the Engine DB at {db.display_url}",
                found="a full disk on the database server",
                expected="room to write",
                remedy="free space on the PostgreSQL server",
            )
        return None

    def health_checks(self, db: EngineDb) -> list[CheckResult]:
        with db.read() as conn:
            read_only = conn.exec_driver_sql("SHOW transaction_read_only").scalar() == "on"
        if read_only:
            return [
                CheckResult(
                    "Engine DB writable",
                    FAIL,
                    f"{db.display_url} answers read-only (transaction_read_only is on: a standby, or a read-only "
                    "default); point the Engine section at the primary",
                )
            ]
        return [CheckResult("Engine DB writable", OK, "the session accepts writes")]

    def max_connections(self, db: EngineDb) -> int | None:
        with db.read() as conn:
            return int(conn.exec_driver_sql("SHOW max_connections").scalar_one())

    def read_connection(self, conn: sa.Connection) -> sa.Connection:
        # Each statement of a READ COMMITTED transaction sees its own snapshot, so BEGIN and COMMIT
        # would add two round trips and nothing else (snapshot_connection is for consistency).
        return conn.execution_options(isolation_level="AUTOCOMMIT")

    def snapshot_connection(self, conn: sa.Connection) -> sa.Connection:
        return conn.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)

    def insert(self, table: sa.Table) -> postgresql.Insert:
        return postgresql.insert(table)

    def announce(self, conn: sa.Connection, channel: str, payloads: Sequence[str]) -> None:
        # NOTIFY is delivered only at commit, so a rolled-back change wakes nobody. The driver's SQL
        # as is: SQLAlchemy would compile the SELECT afresh in every task process.
        if payloads:
            conn.exec_driver_sql("SELECT pg_notify(%s, %s)", [(channel, payload) for payload in payloads])

    def serialize_claims(self, conn: sa.Connection) -> None:
        # A transaction lock, released at commit: concurrent claims wait their turn for the lock,
        # then count the CLAIMED and RUNNING attempts afresh (their statement starts after it). Keyed
        # by the schema, like every lock, so two Engine DBs in one database never share it.
        conn.exec_driver_sql(
            "SELECT pg_advisory_xact_lock(hashtextextended('etl-craft:' || current_schema() || ':queue-claims', 0))"
        )

    def listener(self, db: EngineDb, channel: str) -> Listener | None:
        return PostgresListener(db, channel)

    def execute_script(self, conn: sa.Connection, sql: str) -> None:
        import psycopg

        # psycopg runs several statements in one call when no parameters are passed; its errors
        # are wrapped like SQLAlchemy's own so callers handle one exception family.
        try:
            conn.connection.driver_connection.cursor().execute(sql)  # type: ignore[union-attr]
        except psycopg.Error as exc:
            raise sa.exc.DBAPIError.instance(sql, None, exc, psycopg.Error) from exc

    def project_transaction(self, db: EngineDb) -> AbstractContextManager[sa.Connection]:
        return project_login.project_transaction(db)

    def execute_project_script(self, conn: sa.Connection, sql: str) -> None:
        # The guard triggers and the DDL guard read the purpose from the transaction's settings; a
        # statement that fails aborts the transaction, which undoes it with everything else. The file
        # runs as the body of a DO block, which PostgreSQL runs atomically inside the open transaction:
        # a COMMIT, ROLLBACK or a procedure's COMMIT in it is an error there, so no part of the file
        # can commit on its own (and the row counts below can't be read too late).
        with writing_for(PROJECT_SQL):
            conn.exec_driver_sql(_SET_PURPOSE, (PROJECT_SQL,))
            before = access.rows_written(conn)
            try:
                self.execute_script(conn, _atomic_block(sql))
            except sa.exc.DBAPIError as error:
                raise ScriptRefused(_project_sql_failure(sql, error.orig)) from error
        refused = access.project_sql_effects(conn, before, PROJECT_SQL)
        if refused:
            raise ScriptRefused(refused)  # the caller's transaction rolls back
        conn.exec_driver_sql(_SET_PURPOSE, ("",))

    def record_project_migration(self, conn: sa.Connection, version: str, checksum: str) -> None:
        # The project login has no INSERT on SCHEMA_MIGRATIONS (migration 0012): the function, run
        # with its owner's rights, records source PROJECT and nothing else.
        conn.exec_driver_sql("SELECT etl_craft_record_project_migration(%s, %s)", (version, checksum))

    def table_names(self, conn: sa.Connection) -> list[str]:
        query = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
        return [row[0].upper() for row in conn.exec_driver_sql(query)]

    def trigger_names(self, conn: sa.Connection) -> set[str]:
        query = (
            "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND NOT t.tgisinternal"
        )
        return {row[0].lower() for row in conn.exec_driver_sql(query)}

    def hold(self, db: EngineDb, name: str, timeout: float | None) -> AbstractContextManager[Callable[[], bool]]:
        return locks.hold_advisory(db, name, timeout)

    def access_checks(self, db: EngineDb) -> list[CheckResult]:
        return [*access.grants_check(db), *access.project_sql_check(db)]

    def access_setup(self, db: EngineDb) -> list[str]:
        return access.grant_statements(db.schema or "public")


POSTGRESQL = PostgresDialect()
