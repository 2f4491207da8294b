"""One warehouse connection, and the one form every driver error takes (WarehouseError).

Dialects import their driver only when they connect, so a session is given the driver's error class
then; the base class turns those errors into WarehouseError for every statement.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from etl_craft.warehouse.dialect import WarehouseDialect

log = logging.getLogger("etl_craft.warehouse")


@dataclass(frozen=True)
class Column:
    """A column as the warehouse stores it: its name (as returned) and its full type text."""

    name: str
    type: str

    @property
    def key(self) -> str:
        return self.name.lower()


class WarehouseError(Exception):
    """A statement the warehouse refused; `kind` is the driver's error class name."""

    def __init__(self, kind: str, message: str, sql: str, sqlstate: str | None = None) -> None:
        self.kind = kind
        self.message = message
        self.sql = sql
        self.sqlstate = sqlstate
        super().__init__(f"{kind}: {message}")


class ReadOnlyViolation(WarehouseError):
    """An author's SELECT tried to change the warehouse while etl-craft ran it read-only."""


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@contextmanager
def driver_errors(error_class: type[Exception], sql: str) -> Iterator[None]:
    """Turn the driver's errors raised inside the block into WarehouseError naming `sql`."""
    try:
        yield
    except error_class as exc:
        raise WarehouseError(type(exc).__name__, first_line(exc), sql, getattr(exc, "sqlstate", None)) from exc


class Session:
    """One warehouse connection with one open transaction at a time.

    Subclasses run statements through their driver (`_statement`); the base class
    times them, logs them and turns the driver's errors into WarehouseError. `token` is random per
    session: scratch table names carry it, so no two attempts collide.
    """

    def __init__(self, dialect: WarehouseDialect, error_class: type[Exception]) -> None:
        self.dialect = dialect
        self.error_class = error_class
        self.token = os.urandom(3).hex()

    # -- driver hooks ---------------------------------------------------------------------------
    def _statement(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        """Run one statement: (rows if `fetch`, else [], and the number of rows it changed or -1)."""
        raise NotImplementedError

    def begin(self) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def rollback(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    def cancel_statement(self) -> str | None:
        """Ask the warehouse to stop the statement this session is running, from a signal handler of
        the thread waiting on it (S5.D); returns how, or None when the driver offers no way."""
        return None

    # -- statements -----------------------------------------------------------------------------
    def _run(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        started = time.monotonic()
        _running.append(self)
        try:
            with driver_errors(self.error_class, sql):
                result = self._statement(sql, params, fetch)
        finally:
            _running.remove(self)
        log.debug("warehouse statement (%.3f s):\n%s", time.monotonic() - started, sql)
        return result

    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        self._run(sql, params, fetch=False)

    def rows(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        return self._run(sql, params, fetch=True)[0]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        found = self.rows(sql, params)
        return found[0][0] if found else None

    def dml(self, sql: str, params: Sequence[Any] | None = None) -> int:
        """Run an INSERT, UPDATE or DELETE and return how many rows it changed."""
        return self._run(sql, params, fetch=False)[1]

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        self.begin()
        try:
            yield self
        except BaseException:
            self.rollback()
            raise
        self.commit()


# The sessions whose statement is running in this process: a task process stopped with SIGTERM cancels
# them in the warehouse (cancel_running_statements), since ending the process does not end a query
# the server is still executing (PostgreSQL runs it until it next writes to the socket).
_running: list[Session] = []


def cancel_running_statements() -> list[str]:
    """Cancel every running statement of this process where its dialect can; one note per statement
    saying what was done (for the attempt log)."""
    notes = []
    for session in list(_running):
        name = type(session.dialect).__name__
        try:
            how = session.cancel_statement()
        except Exception as error:  # a cancel that fails must not stop the process from ending
            notes.append(f"{name}: the running warehouse statement could not be cancelled: {first_line(error)}")
            continue
        notes.append(
            f"{name}: the running warehouse statement was cancelled ({how})"
            if how is not None
            else f"{name}: the running warehouse statement could not be cancelled (the driver offers no way); "
            "it may still run in the warehouse"
        )
    return notes
