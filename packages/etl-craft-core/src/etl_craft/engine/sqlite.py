"""The SQLite Engine DB: WAL, foreign keys, a busy timeout and real transactions.

pysqlite's own transaction handling sends no BEGIN before a SAVEPOINT, so releasing a savepoint
that was a transaction's first write would commit the outer transaction. SQLAlchemy's documented
recipe applies: the driver stops managing transactions and the engine emits BEGIN itself.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.pool import NullPool

from etl_craft.config.model import ConnectionProfile
from etl_craft.core.errors import ConfigurationError
from etl_craft.engine.database import EngineDb, current_marker

MIN_SQLITE = (3, 35, 0)
BUSY_TIMEOUT_MS = 30_000


def sqlite_file(profile: ConnectionProfile) -> Path:
    return Path(profile.jdbc_url.removeprefix("jdbc:sqlite:"))


def _register_functions(dbapi_conn: sqlite3.Connection) -> None:
    # The write-guard triggers call these; a connection from any other tool lacks them, so its
    # writes to AUD_ and CFG_ tables fail with "no such function: etl_craft_actor".
    dbapi_conn.create_function("etl_craft_actor", 0, lambda: current_marker()[0])
    dbapi_conn.create_function("etl_craft_actor_kind", 0, lambda: current_marker()[1])
    dbapi_conn.create_function("etl_craft_migration", 0, lambda: current_marker()[2])
    dbapi_conn.create_function("etl_craft_purpose", 0, lambda: current_marker()[3])


def _on_connect(dbapi_conn: sqlite3.Connection, _record: Any) -> None:
    dbapi_conn.isolation_level = None
    _register_functions(dbapi_conn)
    cursor = dbapi_conn.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA journal_mode = WAL")
    cursor.execute("PRAGMA foreign_keys = ON")
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def _on_begin(conn: sa.Connection) -> None:
    conn.exec_driver_sql(conn.get_execution_options().get("etl_craft_begin", "BEGIN"))


def open_sqlite(profile: ConnectionProfile, *, pooled: bool) -> EngineDb:
    if sqlite3.sqlite_version_info < MIN_SQLITE:
        raise ConfigurationError(
            "SQLite library",
            found=sqlite3.sqlite_version,
            expected="3.35 or newer (RETURNING, partial indexes and DROP COLUMN)",
            remedy="use a Python built against a newer SQLite, or a PostgreSQL Engine DB",
        )
    path = sqlite_file(profile)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            f"craft-connector.yml: {profile.where}.jdbc_url",
            found=f"{path}, whose folder can't be created ({exc.strerror})",
            expected="a writable location for the SQLite Engine DB",
            remedy="point jdbc_url at a folder you can write",
        ) from exc
    engine = sa.create_engine(
        f"sqlite+pysqlite:///{path}",
        connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
        poolclass=NullPool if not pooled else None,
    )
    event.listen(engine, "connect", _on_connect)
    event.listen(engine, "begin", _on_begin)
    return EngineDb(
        engine=engine,
        dialect="sqlite",
        profile=profile,
        display_url=f"jdbc:sqlite:{path}",
        schema=None,
        sqlite_path=str(path),
    )
