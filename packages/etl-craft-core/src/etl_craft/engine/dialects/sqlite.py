"""The SQLite Engine DB: a file beside craft-connector.yml, WAL, foreign keys, a busy timeout and real transactions.

pysqlite's own transaction handling sends no BEGIN before a SAVEPOINT, so releasing a savepoint
that was a transaction's first write would commit the outer transaction. SQLAlchemy's documented
recipe applies: the driver stops managing transactions and the engine emits BEGIN itself.
Cross-process locks are flocks on files in the folder `<engine db file>.locks/`; the file's
permissions are what keeps other writers out.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import sqlite
from sqlalchemy.pool import NullPool

from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.core.checks import OK, WARN, CheckResult
from etl_craft.core.errors import ConfigurationError
from etl_craft.engine.database import EngineDb, current_marker
from etl_craft.engine.dialects.base import EngineDialect
from etl_craft.engine.locks import POLL_SECONDS, timeout_error

MIN_SQLITE = (3, 35, 0)
BUSY_TIMEOUT_MS = 30_000
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


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


def sqlite_file(profile: ConnectionProfile) -> Path:
    return Path(profile.jdbc_url.removeprefix("jdbc:sqlite:"))


def lock_file(db: EngineDb, name: str) -> str:
    assert db.file is not None
    safe = _SAFE.sub("_", name)
    if safe != name:
        safe += "-" + hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    return os.path.join(f"{db.file}.locks", f"{safe}.lock")


def split_script(sql: str) -> Iterator[str]:
    """Statements of a SQLite script; triggers and quoted semicolons are kept whole."""
    buffer = ""
    for piece in sql.split(";"):
        buffer += piece + ";"
        if sqlite3.complete_statement(buffer):
            statement = buffer.strip()
            buffer = ""
            if statement.strip(";").strip() and not _only_comments(statement):
                yield statement
    if buffer.strip(";").strip() and not _only_comments(buffer):
        yield buffer.strip()


def _only_comments(statement: str) -> bool:
    lines = [ln.strip() for ln in statement.splitlines()]
    return all(not ln or ln.startswith("--") or ln == ";" for ln in lines)


class SqliteDialect(EngineDialect):
    name = "sqlite"
    display_name = "SQLite"
    driver_modules: ClassVar[tuple[str, ...]] = (
        "sqlite3",
        "sqlalchemy.dialects.sqlite.pysqlite",
        "etl_craft.engine.dialects.sqlite",
    )
    shared_by_hosts = False
    sweep_seconds = 1.0  # nothing wakes an overseer on SQLite

    def open(
        self, config: ConnectorConfig, profile: ConnectionProfile, *, pooled: bool, check: bool, ping: bool
    ) -> EngineDb:
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
            engine=engine, dialect=self, profile=profile, display_url=f"jdbc:sqlite:{path}", schema=None, file=path
        )

    def write_connection(self, conn: sa.Connection) -> sa.Connection:
        # A writer takes the write lock at BEGIN, so it waits on the busy timeout rather than failing
        # when a read transaction tries to become a write.
        return conn.execution_options(etl_craft_begin="BEGIN IMMEDIATE")

    # The WAL gives a read transaction one consistent snapshot already: the base hooks apply.

    def insert(self, table: sa.Table) -> sqlite.Insert:
        return sqlite.insert(table)

    def execute_script(self, conn: sa.Connection, sql: str) -> None:
        for statement in split_script(sql):
            conn.exec_driver_sql(statement)

    def table_names(self, conn: sa.Connection) -> list[str]:
        query = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        return [row[0].upper() for row in conn.exec_driver_sql(query)]

    @contextmanager
    def hold(self, db: EngineDb, name: str, timeout: float | None) -> Iterator[Callable[[], bool]]:
        # flock is per open file, so two holders in one process also exclude each other.
        path = lock_file(db, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = None if timeout is None else time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if deadline is not None and time.monotonic() >= deadline:
                        raise timeout_error(name, timeout or 0) from None
                    time.sleep(POLL_SECONDS)
            try:
                yield lambda: True  # this process holds the lock until it unlocks or exits
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def access_checks(self, db: EngineDb) -> list[CheckResult]:
        name = "Engine DB file permissions"
        if db.file is None or not db.file.exists():
            return []
        mode = db.file.stat().st_mode
        writers = [who for bit, who in ((stat.S_IWGRP, "group"), (stat.S_IWOTH, "others")) if mode & bit]
        if writers:
            who = " and ".join(writers)
            detail = f"{db.file} is writable by {who} (mode {stat.filemode(mode)}); run chmod 600 {db.file}"
            return [CheckResult(name, WARN, detail)]
        return [CheckResult(name, OK, f"{db.file} is writable by its owner only")]

    def access_setup(self, db: EngineDb) -> list[str]:
        return [
            "-- SQLite has no roles: the file's permissions are the boundary.",
            "-- Let only the account that runs etl-craft write the Engine DB and its -wal and -shm files:",
            f"chmod 600 {db.file} {db.file}-wal {db.file}-shm",
        ]


SQLITE = SqliteDialect()
