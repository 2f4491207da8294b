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

    # -- statements -----------------------------------------------------------------------------
    def _run(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        started = time.monotonic()
        with driver_errors(self.error_class, sql):
            result = self._statement(sql, params, fetch)
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
