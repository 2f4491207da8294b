"""Leases: how long an owner's claim on a run or attempt lasts, and the heartbeat that renews it."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta

from etl_craft.core.clock import utc_now
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine import transitions
from etl_craft.engine.database import EngineDb

LEASE_SECONDS = 60
RENEW_SECONDS = 15

log = logging.getLogger("etl_craft.leases")


def lease_until(now: datetime) -> datetime:
    return now + timedelta(seconds=LEASE_SECONDS)


class Heartbeat(threading.Thread):
    """Renews the owner's run lease (if it holds one) and all its attempt leases every RENEW_SECONDS.

    When the run lease can't be renewed (cancelled, marked, taken over), `lost` is set and
    `on_lost` is called so the supervisor stops at once.
    """

    def __init__(self, db: EngineDb, owner_id: str, run_id: int | None, on_lost: Callable[[], None]) -> None:
        super().__init__(name="etl-craft-heartbeat", daemon=True)
        self._db = db
        self._owner_id = owner_id
        self._run_id = run_id
        self._on_lost = on_lost
        self._stopped = threading.Event()
        self.lost: str | None = None

    def beat(self) -> None:
        now = utc_now()
        with self._db.write() as conn:
            transitions.renew_lease(
                conn, owner_id=self._owner_id, lease_until=lease_until(now), now=now, run_id=self._run_id
            )

    def run(self) -> None:
        while not self._stopped.wait(RENEW_SECONDS):
            try:
                self.beat()
            except StaleTransitionError as stale:
                self.lost = stale.message
                self._on_lost()
                return
            except Exception:  # a passing Engine DB error: the lease has 60 s, try again next beat
                log.warning("could not renew leases; retrying in %s s", RENEW_SECONDS, exc_info=True)

    def stop(self) -> None:
        self._stopped.set()
