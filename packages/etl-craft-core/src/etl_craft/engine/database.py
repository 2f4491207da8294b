"""Opening the Engine DB: one SQLAlchemy engine per process with the actor on every transaction.

`EngineDb.write()` opens a write transaction (BEGIN IMMEDIATE on SQLite, so two writers queue on
the busy timeout instead of failing on a lock upgrade); `EngineDb.read()` opens a plain one on
SQLite and runs each statement on its own (autocommit) on PostgreSQL.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.core.actor import current_actor
from etl_craft.core.errors import ConfigurationError

# The project migration whose statements are running; CFG_ triggers record it in AUD_METADATA_CHANGES.
_migration: contextvars.ContextVar[str | None] = contextvars.ContextVar("etl_craft_migration", default=None)
# Why the engine writes, where a trigger needs to know (only "retention" is recognised).
_purpose: contextvars.ContextVar[str | None] = contextvars.ContextVar("etl_craft_purpose", default=None)


@contextmanager
def recording_migration(name: str) -> Iterator[None]:
    token = _migration.set(name)
    try:
        yield
    finally:
        _migration.reset(token)


@contextmanager
def writing_for(purpose: str) -> Iterator[None]:
    """Mark the engine's transactions with a purpose; "retention" may remove append-only rows."""
    token = _purpose.set(purpose)
    try:
        yield
    finally:
        _purpose.reset(token)


def current_marker() -> tuple[str, str, str | None, str | None]:
    """The values every engine transaction carries: actor, actor kind, migration, purpose."""
    actor = current_actor()
    return actor.name, actor.kind.value, _migration.get(), _purpose.get()


@dataclass
class EngineDb:
    """A connected Engine DB. `dialect` is "sqlite" or "postgresql"."""

    engine: sa.Engine
    dialect: str
    profile: ConnectionProfile
    display_url: str  # never holds a password or credential
    schema: str | None  # the PostgreSQL schema (search path); None on SQLite
    sqlite_path: str | None = None

    @contextmanager
    def write(self) -> Iterator[sa.Connection]:
        with self.engine.connect() as raw:
            # On SQLite a writer takes the write lock at BEGIN, so it waits on the busy timeout
            # rather than failing when a read transaction tries to become a write.
            conn = raw.execution_options(etl_craft_begin="BEGIN IMMEDIATE") if self.dialect == "sqlite" else raw
            with conn.begin():
                yield conn

    @contextmanager
    def read(self) -> Iterator[sa.Connection]:
        with self.engine.connect() as raw:
            # Only writes consult the acting identity (the audit triggers), so a read transaction
            # skips the round trip that sets it on PostgreSQL: reads are most of the overseer's work.
            conn = raw.execution_options(etl_craft_reads_only=True)
            if self.dialect == "postgresql":
                # Each statement of a READ COMMITTED transaction sees its own snapshot, so BEGIN and
                # COMMIT would add two round trips and nothing else (snapshot() is for consistency).
                conn = conn.execution_options(isolation_level="AUTOCOMMIT")
            with conn.begin():
                yield conn

    @contextmanager
    def snapshot(self) -> Iterator[sa.Connection]:
        """A read-only transaction that sees one consistent state across all its queries (inspection:
        status, explain). SQLite's WAL gives a read transaction that snapshot already."""
        with self.engine.connect() as raw:
            conn = (
                raw.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
                if self.dialect == "postgresql"
                else raw
            )
            with conn.begin():
                yield conn

    def dispose(self) -> None:
        self.engine.dispose()

    def describe(self) -> dict[str, Any]:
        return {"dialect": self.dialect, "url": self.display_url, "schema": self.schema}


def open_engine_db(config: ConnectorConfig, *, pooled: bool = True, check: bool = True, ping: bool = True) -> EngineDb:
    """Connect to the configured Engine DB, checking what must hold before any command uses it.

    `pooled=False` gives a NullPool engine (one connection per transaction). `check=False` skips the
    PostgreSQL reachability and schema check, for a task process whose supervisor made it already.
    `ping=False` skips the round trip that tests a pooled PostgreSQL connection before each
    transaction, for a process that retries connection errors itself (the overseer, a task process):
    a connection the server dropped then fails once, SQLAlchemy discards the pool, and the retry
    connects afresh.
    """
    profile = config.engine
    url = profile.jdbc_url
    if url.startswith("jdbc:sqlite:"):
        from etl_craft.engine import sqlite

        db = sqlite.open_sqlite(profile, pooled=pooled)
    elif url.startswith("jdbc:postgresql:"):
        from etl_craft.engine import postgres

        db = postgres.open_postgres(config, profile, pooled=pooled, check=check, ping=ping)
    else:
        raise ConfigurationError(
            f"craft-connector.yml: {profile.where}.jdbc_url",
            found=repr(url),
            expected="jdbc:sqlite:<file> or jdbc:postgresql://host[:port]/database",
            remedy="point the Engine section at a SQLite file or a PostgreSQL database",
        )
    return db
