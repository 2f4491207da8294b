"""Riding out a passing Engine DB outage: retry an idempotent unit of work on connection errors."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

import sqlalchemy as sa

T = TypeVar("T")
log = logging.getLogger("etl_craft.engine")

TRANSIENT = (sa.exc.OperationalError, sa.exc.InterfaceError)
DELAYS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0)


def retrying(work: Callable[[], T], what: str, delays: Sequence[float] = DELAYS) -> T:
    """Run `work`; on a connection error wait and run it again (it must be safe to repeat: each try
    is its own transaction, and guarded writes refuse a second application)."""
    for delay in delays:
        try:
            return work()
        except TRANSIENT as error:
            log.warning("%s: the Engine DB did not answer (%s); trying again in %.1f s", what, first_line(error), delay)
            time.sleep(delay)
    return work()


def first_line(error: BaseException) -> str:
    """The first line of a connection error: the driver's message, without SQLAlchemy's statement and link."""
    text = str(getattr(error, "orig", None) or error).strip()
    return text.splitlines()[0] if text else type(error).__name__
