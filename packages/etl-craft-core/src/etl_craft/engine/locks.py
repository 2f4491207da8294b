"""Cross-process locks: one helper for the migrate lock, target locks and leadership.

Each Engine DB dialect holds its own kind (a file lock beside a SQLite file, a PostgreSQL advisory
lock); every caller goes through `hold`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from etl_craft.core.errors import LockTimeoutError
from etl_craft.engine.database import EngineDb

MIGRATE_LOCK = "migrate"
POLL_SECONDS = 0.05


def timeout_error(name: str, timeout: float) -> LockTimeoutError:
    return LockTimeoutError(
        f"lock {name!r}",
        found=f"held by another etl-craft process (waited {timeout:g}s)",
        expected="it to be free",
        remedy="wait for the other command to finish, or find it with etl-craft status",
    )


@contextmanager
def hold(db: EngineDb, name: str, *, timeout: float | None = 60.0) -> Iterator[Callable[[], bool]]:
    """Hold the cross-process lock `name` for the block; LockTimeoutError after `timeout` seconds.
    Yields a check of whether the lock is still held (a PostgreSQL session can end under it)."""
    with db.dialect.hold(db, name, timeout) as still_held:
        yield still_held
