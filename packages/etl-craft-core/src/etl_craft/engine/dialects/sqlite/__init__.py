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
from urllib.parse import quote

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects import sqlite
from sqlalchemy.pool import NullPool, QueuePool

from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.core.checks import FAIL, OK, WARN, CheckResult
from etl_craft.core.errors import ConfigurationError, EngineDbError, MissingEngineDbError
from etl_craft.engine.database import EngineDb, current_marker, writing_for
from etl_craft.engine.dialects.base import EngineDialect
from etl_craft.engine.dialects.sqlite import constraints
from etl_craft.engine.locks import POLL_SECONDS, timeout_error
from etl_craft.engine.retry import first_line
from etl_craft.engine.schema.scripts import Statement, StatementFailed
from etl_craft.engine.schema.tables import METADATA_TABLES, PROJECT_SQL

MIN_SQLITE = (3, 35, 0)
BUSY_TIMEOUT_MS = 30_000
PROBE_TIMEOUT_MS = 3_000
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


def _make_folder(path: Path, profile: ConnectionProfile) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigurationError(
            f"craft-connector.yml: {profile.where}.jdbc_url",
            found=f"{path}, whose folder can't be created ({exc.strerror})",
            expected="a writable location for the SQLite Engine DB",
            remedy="point jdbc_url at a folder you can write",
        ) from exc


class _Probed(Exception):
    """Ends doctor's write probe: its transaction rolls back."""


# What an error of SQLite's (its primary result code) says about the file, and what to do about it.
_UNUSABLE = {
    sqlite3.SQLITE_READONLY: (
        "a file (or folder) it can't write: read-only or immutable",
        "let the account that runs etl-craft write {file} and {folder} (chmod, chattr -i), or mount them writable",
    ),
    sqlite3.SQLITE_PERM: ("a file it is not allowed to write", "let the account that runs etl-craft write {file}"),
    sqlite3.SQLITE_CANTOPEN: (
        "a file it can't open (gone, or its folder not accessible)",
        "check that {file} exists and that {folder} is writable; etl-craft init-db creates a new Engine DB",
    ),
    sqlite3.SQLITE_CORRUPT: ("a damaged file", "restore {file} from a backup"),
    sqlite3.SQLITE_NOTADB: ("a file that is not a SQLite database", "restore {file} from a backup"),
    sqlite3.SQLITE_BUSY: (
        "a lock another process held for longer than etl-craft waits",
        "find the process that holds it (fuser {file}) and let it finish, then try again",
    ),
    sqlite3.SQLITE_IOERR: ("an I/O error", "check the disk that holds {file}"),
    sqlite3.SQLITE_FULL: ("a full disk", "free space on the disk that holds {file}"),
}


def lock_file(db: EngineDb, name: str) -> str:
    assert db.file is not None
    safe = _SAFE.sub("_", name)
    if safe != name:
        safe += "-" + hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    return os.path.join(f"{db.file}.locks", f"{safe}.lock")


def _explained(conn: sa.Connection, statement: Statement, error: sa.exc.DBAPIError) -> str:
    """What the database said, with the constraint and rows a CHECK or foreign key failure was about.
    That re-runs the statement in a savepoint with its constraints relaxed; the statement passed the
    project authorizer once already, and its transaction is rolled back either way, so it is lifted."""
    driver = conn.connection.driver_connection
    assert isinstance(driver, sqlite3.Connection)
    driver.set_authorizer(None)
    explained = constraints.explain(conn, statement.sql, error.orig) if error.orig else None
    return explained or str(error.orig or error).strip()


class _MetadataOnly:
    """An authorizer for project SQL: what the statements themselves may do (their triggers are
    etl-craft's own and may do what they do). Remembers the first refusal, to say what it was."""

    _READS = frozenset({sqlite3.SQLITE_READ, sqlite3.SQLITE_SELECT, sqlite3.SQLITE_RECURSIVE})
    _WRITES = frozenset({sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE})

    def __init__(self) -> None:
        self.refused: str | None = None

    def __call__(self, action: int, first: str | None, second: str | None, _db: str | None, trigger: str | None) -> int:
        if trigger is not None or action in self._READS:
            return sqlite3.SQLITE_OK
        if action in self._WRITES and (first or "").upper() in METADATA_TABLES:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION and _pure_function(second or ""):
            return sqlite3.SQLITE_OK
        if self.refused is None:
            self.refused = _described(action, first, second)
        return sqlite3.SQLITE_DENY


# Pure functions project SQL may call (and etl-craft's own, which column defaults call).
_PURE_FUNCTIONS = frozenset({
    "abs", "avg", "char", "coalesce", "concat", "concat_ws", "count", "date", "datetime", "format", "group_concat",
    "hex", "ifnull", "iif", "instr", "json", "json_array", "json_object", "julianday", "length", "lower", "ltrim",
    "max", "min", "nullif", "printf", "quote", "random", "randomblob", "replace", "round", "row_number", "rtrim",
    "strftime", "substr", "substring", "sum", "time", "total", "trim", "typeof", "unicode", "unixepoch", "upper",
    # Operators SQLite runs as functions, and JSON readers.
    "like", "glob", "likely", "unlikely", "likelihood", "->", "->>", "json_extract", "json_valid", "json_type",
    "json_group_array", "json_group_object", "ceil", "ceiling", "floor", "sign", "trunc", "mod",
})  # fmt: skip


def _pure_function(name: str) -> bool:
    name = name.lower()
    return name in _PURE_FUNCTIONS or name.startswith("etl_craft_")


def _described(action: int, first: str | None, second: str | None) -> str:
    if action in (sqlite3.SQLITE_INSERT, sqlite3.SQLITE_UPDATE, sqlite3.SQLITE_DELETE):
        verb = {sqlite3.SQLITE_INSERT: "INSERT", sqlite3.SQLITE_UPDATE: "UPDATE", sqlite3.SQLITE_DELETE: "DELETE"}
        return f"{verb[action]} of {first}, which is not a metadata table"
    if action == sqlite3.SQLITE_FUNCTION:
        return f"a call of {second}(), which a project migration may not call"
    return (
        f"{_ACTION_NAMES.get(action, f'action {action}')} {first or ''}".strip()
        + ", which a project migration may not do"
    )


_ACTION_NAMES = {
    getattr(sqlite3, f"SQLITE_{name}"): name.replace("_", " ")
    for name in (
        "CREATE_INDEX", "CREATE_TABLE", "CREATE_TEMP_INDEX", "CREATE_TEMP_TABLE", "CREATE_TEMP_TRIGGER",
        "CREATE_TEMP_VIEW", "CREATE_TRIGGER", "CREATE_VIEW", "DROP_INDEX", "DROP_TABLE", "DROP_TEMP_INDEX",
        "DROP_TEMP_TABLE", "DROP_TEMP_TRIGGER", "DROP_TEMP_VIEW", "DROP_TRIGGER", "DROP_VIEW", "PRAGMA",
        "TRANSACTION", "ATTACH", "DETACH", "ALTER_TABLE", "REINDEX", "ANALYZE", "CREATE_VTABLE", "DROP_VTABLE",
        "SAVEPOINT",
    )
}  # fmt: skip


_LEADING = re.compile(r"(?:\s+|--[^\n]*|/\*.*?\*/)*", re.S)  # blanks and comments before a statement


def split_script(sql: str) -> Iterator[Statement]:
    """Statements of a SQLite script, numbered, with the line each starts on (after the blanks and
    comments before it); triggers and quoted semicolons are kept whole."""
    buffer, start, number = "", 0, 0
    pieces = sql.split(";")
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        buffer += piece if last else piece + ";"
        if not (last or sqlite3.complete_statement(buffer)):
            continue
        lead = _LEADING.match(buffer)
        offset = lead.end() if lead else 0
        if buffer[offset:].strip(";").strip():
            number += 1
            yield Statement(number, sql.count("\n", 0, start + offset) + 1, buffer[offset:].strip())
        start += len(buffer)
        buffer = ""


class SqliteDialect(EngineDialect):
    name = "sqlite"
    display_name = "SQLite"
    sqlglot_dialect = "sqlite"
    driver_modules: ClassVar[tuple[str, ...]] = (
        "sqlite3",
        "sqlalchemy.dialects.sqlite.pysqlite",
        "etl_craft.engine.dialects.sqlite",
    )
    shared_by_hosts = False
    sweep_seconds = 1.0  # nothing wakes an overseer on SQLite
    queue_refusal = (
        "a SQLite Engine DB is one file on one machine, with no row locks that skip what others hold and "
        "no notifications; the queue and its workers need a PostgreSQL Engine DB"
    )

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
        if sqlite3.sqlite_version_info < MIN_SQLITE:
            raise ConfigurationError(
                "SQLite library",
                found=sqlite3.sqlite_version,
                expected="3.35 or newer (RETURNING, partial indexes and DROP COLUMN)",
                remedy="use a Python built against a newer SQLite, or a PostgreSQL Engine DB",
            )
        path = sqlite_file(profile)
        if create:
            _make_folder(path, profile)
        elif not path.is_file():
            raise MissingEngineDbError(
                f"the Engine DB {path} (Engine.jdbc_url in {config.path})",
                found="no such file" if not path.exists() else "something that is not a file",
                expected="an Engine DB that etl-craft init-db, setup or demo created",
                remedy="create it with etl-craft init-db (or etl-craft setup), or point jdbc_url at the existing file",
            )
        # mode=rw: a file that vanishes later (deleted under a running command) is an error, never a
        # new empty Engine DB; rwc only where the caller may create it.
        uri = f"file:{quote(str(path))}?mode={'rwc' if create else 'rw'}"
        engine = sa.create_engine(
            "sqlite+pysqlite://",
            creator=lambda: sqlite3.connect(uri, uri=True, check_same_thread=False, timeout=BUSY_TIMEOUT_MS / 1000),
            poolclass=QueuePool if pooled else NullPool,
        )
        event.listen(engine, "connect", _on_connect)
        event.listen(engine, "begin", _on_begin)
        return EngineDb(
            engine=engine, dialect=self, profile=profile, display_url=f"jdbc:sqlite:{path}", schema=None, file=path
        )

    def failure(self, db: EngineDb, error: sa.exc.DBAPIError) -> EngineDbError | None:
        code = getattr(error.orig, "sqlite_errorcode", None)
        found = _UNUSABLE.get(code & 0xFF) if isinstance(code, int) else None
        if found is None:
            return None
        what, remedy = found
        return EngineDbError(
            f"the Engine DB {db.file}",
            found=f"{what} ({first_line(error)})",
            expected="a file etl-craft can read and write, with its folder (for the -wal and -shm files)",
            remedy=remedy.format(file=db.file, folder=db.file.parent if db.file else "its folder"),
        )

    def health_checks(self, db: EngineDb) -> list[CheckResult]:
        """A quick check of every page, then a write in a transaction that is rolled back."""
        name = "Engine DB file"
        try:
            with db.read() as conn:
                verdict = [str(row[0]) for row in conn.exec_driver_sql("PRAGMA quick_check")]
        except EngineDbError as error:
            return [CheckResult(name, FAIL, error.message)]
        if verdict != ["ok"]:
            shown = "; ".join(verdict[:3]) + (f" (and {len(verdict) - 3} more)" if len(verdict) > 3 else "")
            return [CheckResult(name, FAIL, f"{db.file} is damaged: {shown}; restore it from a backup")]
        try:
            self._probe_write(db)
        except EngineDbError as error:
            return [CheckResult(name, FAIL, error.message)]
        return [CheckResult(name, OK, f"{db.file} reads whole and accepts writes")]

    def _probe_write(self, db: EngineDb) -> None:
        """Write the header's user version as it is, in a transaction that rolls back. doctor waits a few
        seconds for another writer, not the busy timeout commands wait."""
        with db.failures(), db.engine.connect() as raw:
            driver = raw.connection.driver_connection
            assert isinstance(driver, sqlite3.Connection)
            driver.execute(f"PRAGMA busy_timeout = {PROBE_TIMEOUT_MS}")  # outside SQLAlchemy's transaction
            try:
                with self.write_connection(raw).begin():
                    version = raw.exec_driver_sql("PRAGMA user_version").scalar()
                    raw.exec_driver_sql(f"PRAGMA user_version = {int(version or 0)}")
                    raise _Probed
            except _Probed:
                pass
            finally:
                driver.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def write_connection(self, conn: sa.Connection) -> sa.Connection:
        # A writer takes the write lock at BEGIN, so it waits on the busy timeout rather than failing
        # when a read transaction tries to become a write.
        return conn.execution_options(etl_craft_begin="BEGIN IMMEDIATE")

    # The WAL gives a read transaction one consistent snapshot already: the base hooks apply.

    def insert(self, table: sa.Table) -> sqlite.Insert:
        return sqlite.insert(table)

    def execute_script(self, conn: sa.Connection, sql: str) -> None:
        """Statement by statement: a failure raises StatementFailed naming the statement, its line
        and, for a CHECK or foreign key, the constraint and the values of the rows that break it."""
        for statement in split_script(sql):
            try:
                conn.exec_driver_sql(statement.sql)
            except sa.exc.DBAPIError as exc:
                raise StatementFailed(statement, _explained(conn, statement, exc)) from exc

    def execute_project_script(self, conn: sa.Connection, sql: str) -> None:
        # SQLite's triggers can't tell a metadata trigger's write to AUD_METADATA_CHANGES from a
        # direct one, so the authorizer judges each statement as it is prepared: outside a trigger,
        # project SQL may write metadata tables, read anything and call pure functions, nothing more.
        driver = conn.connection.driver_connection
        assert isinstance(driver, sqlite3.Connection)
        authorizer = _MetadataOnly()
        driver.set_authorizer(authorizer)
        try:
            with writing_for(PROJECT_SQL):
                self.execute_script(conn, sql)
        except StatementFailed as failed:
            if authorizer.refused is None:
                raise
            raise StatementFailed(failed.statement, f"not authorized: {authorizer.refused}") from failed
        finally:
            driver.set_authorizer(None)

    def table_names(self, conn: sa.Connection) -> list[str]:
        query = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
        return [row[0].upper() for row in conn.exec_driver_sql(query)]

    def trigger_names(self, conn: sa.Connection) -> set[str]:
        return {row[0].lower() for row in conn.exec_driver_sql("SELECT name FROM sqlite_master WHERE type = 'trigger'")}

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
