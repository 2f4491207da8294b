"""Opening the Engine DB: one SQLAlchemy engine per process with the actor on every transaction.

`EngineDb.write()`, `read()` and `snapshot()` open the three kinds of transaction every caller uses;
the Engine DB's dialect decides how each begins on its database.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.config.urls import url_kind
from etl_craft.core.actor import current_actor
from etl_craft.core.errors import ConfigurationError

if TYPE_CHECKING:
    from etl_craft.engine.dialects import EngineDialect

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
    """A connected Engine DB; `dialect` holds everything that differs between the databases."""

    engine: sa.Engine
    dialect: EngineDialect
    profile: ConnectionProfile
    display_url: str  # never holds a password or credential
    schema: str | None  # the PostgreSQL schema (search path); None for a file
    file: Path | None = None  # the database file; None for a server

    @contextmanager
    def write(self) -> Iterator[sa.Connection]:
        with self.failures(), self.engine.connect() as raw:
            conn = self.dialect.write_connection(raw)
            with conn.begin():
                yield conn

    @contextmanager
    def read(self) -> Iterator[sa.Connection]:
        with self.failures(), self.engine.connect() as raw:
            # Only writes consult the acting identity (the audit triggers), so a read transaction
            # skips the round trip that sets it: reads are most of the overseer's work.
            conn = self.dialect.read_connection(raw.execution_options(etl_craft_reads_only=True))
            with conn.begin():
                yield conn

    @contextmanager
    def snapshot(self) -> Iterator[sa.Connection]:
        """A read-only transaction that sees one consistent state across all its queries (inspection:
        status, explain)."""
        with self.failures(), self.engine.connect() as raw:
            conn = self.dialect.snapshot_connection(raw)
            with conn.begin():
                yield conn

    @contextmanager
    def failures(self) -> Iterator[None]:
        """An Engine DB that can't be used at all (read-only, damaged, locked) is one clear error, not
        a driver's traceback; every other error reaches the caller as it was."""
        try:
            yield
        except sa.exc.DBAPIError as error:
            unusable = self.dialect.failure(self, error)
            if unusable is None:
                raise
            raise unusable from error

    def dispose(self) -> None:
        self.engine.dispose()

    def describe(self) -> dict[str, Any]:
        return {"dialect": self.dialect.name, "url": self.display_url, "schema": self.schema}


def open_engine_db(
    config: ConnectorConfig, *, pooled: bool = True, check: bool = True, ping: bool = True, create: bool = False
) -> EngineDb:
    """Connect to the configured Engine DB, checking what must hold before any command uses it.

    `pooled=False` gives a NullPool engine (one connection per transaction). `check=False` skips the
    server's reachability and schema check, for a task process whose supervisor made it already.
    `ping=False` skips the round trip that tests a pooled connection before each transaction, for a
    process that retries connection errors itself (the overseer, a task process): a connection the
    server dropped then fails once, SQLAlchemy discards the pool, and the retry connects afresh.
    `create=True` (init-db, setup, demo) lets a missing SQLite file be created; anything else refuses
    to work on an Engine DB that isn't there, instead of starting an empty one.
    """
    from etl_craft.engine.dialects import ENGINE_DIALECTS

    profile = config.engine
    dialect = ENGINE_DIALECTS.get(url_kind(profile.jdbc_url))
    if dialect is None:
        raise ConfigurationError(
            f"craft-connector.yml: {profile.where}.jdbc_url",
            found=repr(profile.jdbc_url),
            expected="jdbc:sqlite:<file> or jdbc:postgresql://host[:port]/database",
            remedy="point the Engine section at a SQLite file or a PostgreSQL database",
        )
    return dialect.open(config, profile, pooled=pooled, check=check, ping=ping, create=create)
