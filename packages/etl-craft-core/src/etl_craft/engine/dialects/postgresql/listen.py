"""Wake-ups from PostgreSQL: LISTEN on a dedicated autocommit connection.

Transitions NOTIFY what changed when their transaction commits, so an overseer reacts to a CLI
cancel or an attempt's end at once instead of at its next sweep. A lost connection is reopened at
the next drain; the sweeps keep everything moving meanwhile.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, cast

import sqlalchemy as sa

from etl_craft.engine.database import EngineDb
from etl_craft.engine.retry import first_line

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("etl_craft.engine.listen")


class PostgresListener:
    def __init__(self, db: EngineDb, channel: str) -> None:
        self._db = db
        self._channel = channel
        self._conn: sa.Connection | None = None
        self._failing = False  # connecting failed since the last success: warned once already

    def fileno(self) -> int | None:
        """The socket to wait on, or None when not connected."""
        if self._conn is None:
            self._connect()
        return None if self._conn is None else self._driver().fileno()

    def _driver(self) -> psycopg.Connection[Any]:
        assert self._conn is not None
        driver = self._conn.connection.driver_connection
        assert driver is not None
        return cast("psycopg.Connection[Any]", driver)

    def _connect(self) -> None:
        try:
            self._conn = self._db.engine.connect()
            driver = self._driver()
            driver.autocommit = True
            driver.execute(f"LISTEN {self._channel}")
        except Exception as error:  # the sweep carries on; try again at the next drain
            # Once per outage: the loop tries again on every pass.
            (log.debug if self._failing else log.warning)(
                "could not LISTEN for Engine DB events (%s); looking every few seconds instead", first_line(error)
            )
            self._failing = True
            self.close()
            return
        if self._failing:
            log.info("listening for Engine DB events again")
            self._failing = False

    def drain(self) -> list[str]:
        """Every payload received so far, without waiting."""
        if self._conn is None:
            self._connect()
            return []
        try:
            return [n.payload for n in self._driver().notifies(timeout=0)]
        except Exception as error:
            log.warning("lost the Engine DB events connection (%s); reconnecting", error)
            self.close()
            return []

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # closing a broken connection
                log.debug("closing the events connection failed", exc_info=True)
            self._conn = None
