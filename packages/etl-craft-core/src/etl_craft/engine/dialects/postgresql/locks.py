"""Cross-process locks on PostgreSQL: a session advisory lock on a dedicated connection, keyed by the
schema and the lock's name, so two Engine DBs in one database never share a lock."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import sqlalchemy as sa

from etl_craft.core.errors import EngineDbError
from etl_craft.engine.database import EngineDb
from etl_craft.engine.locks import timeout_error

_LOCK_NOT_AVAILABLE = "55P03"


def advisory_key(schema: str | None, name: str) -> int:
    digest = hashlib.blake2b(f"etl-craft:{schema}:{name}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


@contextmanager
def hold_advisory(db: EngineDb, name: str, timeout: float | None) -> Iterator[Callable[[], bool]]:
    key = advisory_key(db.schema, name)
    with db.engine.connect() as raw:
        conn = raw.execution_options(isolation_level="AUTOCOMMIT")
        limit_ms = 0 if timeout is None else max(1, int(timeout * 1000))
        try:
            conn.exec_driver_sql(f"SET lock_timeout = {limit_ms}")
            conn.exec_driver_sql("SELECT pg_advisory_lock(%s)", (key,))
        except sa.exc.OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) == _LOCK_NOT_AVAILABLE:
                raise timeout_error(name, timeout or 0) from None
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
