"""Cross-process locks: one helper for the migrate lock, target locks and leadership.

SQLite: an flock on a file in the folder `<engine db file>.locks/` beside the database (flock is
per open file, so two holders in one process also exclude each other). PostgreSQL: a session
advisory lock on a dedicated connection, keyed by the schema and the lock's name.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from etl_craft.core.errors import EngineDbError, LockTimeoutError
from etl_craft.engine.database import EngineDb

MIGRATE_LOCK = "migrate"
_POLL_SECONDS = 0.05
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


def advisory_key(schema: str | None, name: str) -> int:
    digest = hashlib.blake2b(f"etl-craft:{schema}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


def lock_file(db: EngineDb, name: str) -> str:
    assert db.sqlite_path is not None
    safe = _SAFE.sub("_", name)
    if safe != name:
        safe += "-" + hashlib.blake2b(name.encode(), digest_size=4).hexdigest()
    return os.path.join(f"{db.sqlite_path}.locks", f"{safe}.lock")


def _timeout_error(name: str, timeout: float) -> LockTimeoutError:
    return LockTimeoutError(
        f"lock {name!r}",
        found=f"held by another etl-craft process (waited {timeout:g}s)",
        expected="it to be free",
        remedy="wait for the other command to finish, or find it with etl-craft status",
    )


@contextmanager
def _hold_file(db: EngineDb, name: str, timeout: float | None) -> Iterator[Callable[[], bool]]:
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
                    raise _timeout_error(name, timeout or 0) from None
                time.sleep(_POLL_SECONDS)
        try:
            yield lambda: True  # this process holds the lock until it unlocks or exits
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def _hold_advisory(db: EngineDb, name: str, timeout: float | None) -> Iterator[Callable[[], bool]]:
    key = advisory_key(db.schema, name)
    with db.engine.connect() as raw:
        conn = raw.execution_options(isolation_level="AUTOCOMMIT")
        limit_ms = 0 if timeout is None else max(1, int(timeout * 1000))
        try:
            conn.exec_driver_sql(f"SET lock_timeout = {limit_ms}")
            conn.exec_driver_sql("SELECT pg_advisory_lock(%s)", (key,))
        except sa.exc.OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) == "55P03":
                raise _timeout_error(name, timeout or 0) from None
            raise EngineDbError(
                f"lock {name!r}", found=f"an Engine DB error ({exc.orig})", expected="the lock to be taken"
            ) from exc
        finally:
            conn.exec_driver_sql("SET lock_timeout = 0")

        def still_held() -> bool:
            """The lock lives as long as its session: False once the session ended (a server restart,
            an administrator's pg_terminate_backend, an idle-session timeout)."""
            try:
                conn.exec_driver_sql("SELECT 1")
            except sa.exc.SQLAlchemyError:
                return False
            return True

        try:
            yield still_held
        finally:
            # A session that ended (SQLAlchemy invalidated its connection) released the lock with it.
            if not raw.invalidated:
                try:
                    conn.exec_driver_sql("SELECT pg_advisory_unlock(%s)", (key,))
                except sa.exc.SQLAlchemyError:
                    raw.invalidate()  # closes the session rather than pool it: that releases the lock


@contextmanager
def hold(db: EngineDb, name: str, *, timeout: float | None = 60.0) -> Iterator[Callable[[], bool]]:
    """Hold the cross-process lock `name` for the block; LockTimeoutError after `timeout` seconds.
    Yields a check of whether the lock is still held (a PostgreSQL session can end under it)."""
    holder = _hold_file if db.dialect == "sqlite" else _hold_advisory
    with holder(db, name, timeout) as still_held:
        yield still_held
