"""Wake-ups from PostgreSQL: LISTEN etl_craft_events on a dedicated autocommit connection.

Transitions NOTIFY the id of what changed (`run:<id>`, `pipeline:<id>`, and `ended:<run id>:<attempt
id>` for an attempt's end) when their transaction commits, so the overseer reacts to a CLI cancel or a
task run at once instead of at its next sweep.
A lost connection is reopened at the next drain; the sweeps keep everything moving meanwhile.
SQLite has no notifications: the overseer sweeps every second there.
"""

from __future__ import annotations

import logging
from collections.abc import Container
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import sqlalchemy as sa

from etl_craft.engine.database import EngineDb
from etl_craft.engine.retry import first_line
from etl_craft.engine.transitions import EVENTS_CHANNEL

if TYPE_CHECKING:
    import psycopg

log = logging.getLogger("etl_craft.server.events")


@dataclass(frozen=True)
class Events:
    runs: frozenset[int] = field(default_factory=frozenset)
    pipelines: frozenset[int] = field(default_factory=frozenset)
    ended: frozenset[tuple[int, int]] = field(default_factory=frozenset)  # (run id, attempt id)

    @staticmethod
    def parse(payloads: list[str]) -> Events:
        runs, pipelines, ended = set(), set(), set()
        for payload in payloads:
            kind, _, rest = payload.partition(":")
            ids = rest.split(":")
            if not all(i.isdigit() for i in ids):
                continue
            if kind == "run" and len(ids) == 1:
                runs.add(int(ids[0]))
            elif kind == "pipeline" and len(ids) == 1:
                pipelines.add(int(ids[0]))
            elif kind == "ended" and len(ids) == 2:
                ended.add((int(ids[0]), int(ids[1])))
        return Events(frozenset(runs), frozenset(pipelines), frozenset(ended))

    def wake(self, run_id: int, pipeline_id: int, own_processes: Container[int]) -> bool:
        """Whether a supervised run has news: a change to it or its pipeline, or the end of an attempt
        that none of the overseer's own task processes (`own_processes`, by attempt id) ran. The end
        of one of those wakes the run when the process exits, just after it recorded the end: one
        step for it, not two."""
        if run_id in self.runs or pipeline_id in self.pipelines:
            return True
        return any(run == run_id and attempt not in own_processes for run, attempt in self.ended)


class Listener:
    def __init__(self, db: EngineDb) -> None:
        self._db = db
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
            driver.execute(f"LISTEN {EVENTS_CHANNEL}")
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

    def drain(self) -> Events:
        """Every notification received so far, without waiting."""
        if self._conn is None:
            self._connect()
            return Events()
        try:
            return Events.parse([n.payload for n in self._driver().notifies(timeout=0)])
        except Exception as error:
            log.warning("lost the Engine DB events connection (%s); reconnecting", error)
            self.close()
            return Events()

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # closing a broken connection
                log.debug("closing the events connection failed", exc_info=True)
            self._conn = None
