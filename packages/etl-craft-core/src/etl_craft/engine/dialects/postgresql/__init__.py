"""The PostgreSQL Engine DB: psycopg 3, the configured schema as search path, advisory locks and
LISTEN/NOTIFY wake-ups. One module per concern: connecting, locks, listening and access."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import ClassVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import postgresql
from sqlalchemy.pool import NullPool

from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.core.checks import CheckResult
from etl_craft.core.errors import ConfigurationError
from etl_craft.engine.database import EngineDb
from etl_craft.engine.dialects.base import EngineDialect, Listener
from etl_craft.engine.dialects.postgresql import access, connect, locks
from etl_craft.engine.dialects.postgresql.listen import PostgresListener


class PostgresDialect(EngineDialect):
    name = "postgresql"
    display_name = "PostgreSQL"
    driver_modules: ClassVar[tuple[str, ...]] = (
        "psycopg",
        "sqlalchemy.dialects.postgresql.psycopg",
        "etl_craft.engine.dialects.postgresql",
    )
    shared_by_hosts = True
    sweep_seconds = 5.0  # notifications wake an overseer; the sweep is the floor

    def open(
        self, config: ConnectorConfig, profile: ConnectionProfile, *, pooled: bool, check: bool, ping: bool
    ) -> EngineDb:
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

    def table_names(self, conn: sa.Connection) -> list[str]:
        query = "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY 1"
        return [row[0].upper() for row in conn.exec_driver_sql(query)]

    def hold(self, db: EngineDb, name: str, timeout: float | None) -> AbstractContextManager[Callable[[], bool]]:
        return locks.hold_advisory(db, name, timeout)

    def access_checks(self, db: EngineDb) -> list[CheckResult]:
        return access.grants_check(db)

    def access_setup(self, db: EngineDb) -> list[str]:
        return access.grant_statements(db.schema or "public")


POSTGRESQL = PostgresDialect()
