"""What every Engine DB dialect provides: each difference between SQLite and PostgreSQL, in one place.

Code outside the dialect modules asks a dialect what its database can do (a capability attribute) or
lets it do the part that differs (a hook); it never tests a database's name. One instance per
database kind, without state: where a hook needs the database's location it takes the EngineDb.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, ClassVar, Protocol

import sqlalchemy as sa

from etl_craft.core.checks import CheckResult
from etl_craft.core.errors import EngineDbError

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql, sqlite

    from etl_craft.config.model import ConnectionProfile, ConnectorConfig
    from etl_craft.engine.database import EngineDb

    # An INSERT with ON CONFLICT clauses: each database's SQLAlchemy dialect has its own class.
    UpsertInsert = postgresql.Insert | sqlite.Insert


class Listener(Protocol):
    """Wake-ups for an overseer: the payloads announced since the last drain, without waiting."""

    def fileno(self) -> int | None: ...

    def drain(self) -> list[str]: ...

    def close(self) -> None: ...


class EngineDialect:
    # The JDBC subprotocol of the Engine jdbc_url, and SQLAlchemy's name for the database.
    name: ClassVar[str]
    display_name: ClassVar[str]
    # sqlglot's name for the database's SQL (project migrations are read with it).
    sqlglot_dialect: ClassVar[str]
    # Modules a task process needs to reach the Engine DB; the fork server imports them once.
    driver_modules: ClassVar[tuple[str, ...]]
    # Several hosts can share this Engine DB (remote mode, workers); a SQLite file serves one machine.
    shared_by_hosts: ClassVar[bool]
    # How often an overseer looks for changes on its own (seconds): often where nothing wakes it.
    sweep_seconds: ClassVar[float]
    # Whether workers can claim attempts from this Engine DB (the queue needs row locks that skip
    # what others hold, and notifications): None when they can, else why not.
    queue_refusal: ClassVar[str | None]

    # -- connections ----------------------------------------------------------------------------
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
        """Connect; `create` lets a file database be created (init-db, setup and demo only)."""
        raise NotImplementedError

    def failure(self, db: EngineDb, error: sa.exc.DBAPIError) -> EngineDbError | None:
        """The Engine DB itself is unusable (read-only, damaged, locked, full): the error that says so
        in one line, with the remedy; None for any other error, which its caller handles."""
        return None

    def health_checks(self, db: EngineDb) -> list[CheckResult]:
        """doctor: whether the Engine DB can be read whole and written."""
        return []

    def write_connection(self, conn: sa.Connection) -> sa.Connection:
        """The connection a write transaction begins on (its options set)."""
        return conn

    def read_connection(self, conn: sa.Connection) -> sa.Connection:
        """The connection plain reads run on; each statement may see its own committed state."""
        return conn

    def snapshot_connection(self, conn: sa.Connection) -> sa.Connection:
        """The connection of a read-only transaction whose statements all see one state."""
        return conn

    # -- statements -----------------------------------------------------------------------------
    def insert(self, table: sa.Table) -> UpsertInsert:
        """An INSERT that offers on_conflict_do_nothing and on_conflict_do_update (upserts)."""
        raise NotImplementedError

    def announce(self, conn: sa.Connection, channel: str, payloads: Sequence[str]) -> None:
        """Tell listeners of `channel` once this transaction commits; nothing where none can listen."""

    def serialize_claims(self, conn: sa.Connection) -> None:
        """Make this transaction's queue claims the only ones until it ends, so the limits a claim
        counts cannot be passed by a concurrent claim; nothing where writes are serialized already."""

    def listener(self, db: EngineDb, channel: str) -> Listener | None:
        """A listener for `channel`, or None where the database cannot notify (sweeps do the work)."""
        return None

    def execute_script(self, conn: sa.Connection, sql: str) -> None:
        """Run a whole SQL script inside the connection's open transaction."""
        raise NotImplementedError

    def project_transaction(self, db: EngineDb) -> AbstractContextManager[sa.Connection]:
        """The write transaction a project migration runs and is recorded in (PostgreSQL: on a login
        of its own, whose privileges confine it)."""
        return db.write()

    def execute_project_script(self, conn: sa.Connection, sql: str) -> None:
        """Run a project migration's file in the transaction of `conn`: the database refuses any
        write of its statements but to metadata tables, DDL and transaction control."""
        raise NotImplementedError

    def record_project_migration(self, conn: sa.Connection, version: str, checksum: str) -> None:
        """Record an applied project file in SCHEMA_MIGRATIONS, in the transaction it ran in
        (PostgreSQL: through a function, since the project login may not write the table)."""
        from etl_craft.engine.schema.tables import schema_migrations

        conn.execute(schema_migrations.insert().values(source="PROJECT", version=version, checksum=checksum))

    def table_names(self, conn: sa.Connection) -> list[str]:
        """The tables of the Engine DB's schema (or file), in upper case and in order."""
        raise NotImplementedError

    def trigger_names(self, conn: sa.Connection) -> set[str]:
        """The triggers on the Engine DB's tables, in lower case (doctor checks every guard is there)."""
        raise NotImplementedError

    # -- locks ----------------------------------------------------------------------------------
    def hold(self, db: EngineDb, name: str, timeout: float | None) -> AbstractContextManager[Callable[[], bool]]:
        """Hold the cross-process lock `name`; yields a check that it is still held."""
        raise NotImplementedError

    # -- capacity -------------------------------------------------------------------------------
    def max_connections(self, db: EngineDb) -> int | None:
        """How many connections the database server accepts (None: no such limit, as in a file)."""
        return None

    # -- who may write --------------------------------------------------------------------------
    def access_checks(self, db: EngineDb) -> list[CheckResult]:
        """doctor: whether anyone but etl-craft can write the Engine DB."""
        return []

    def access_setup(self, db: EngineDb) -> list[str]:
        """`setup --print-grants`: what makes etl-craft the only writer (statements or advice)."""
        return []
