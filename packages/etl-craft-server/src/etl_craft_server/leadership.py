"""One overseer per Engine DB: a lock held for the life of the process, and its AUD_OVERSEERS row.

The lock is the source of leadership (a session advisory lock on a dedicated PostgreSQL connection,
the lock file beside a SQLite Engine DB): the operating system or PostgreSQL releases it when the
process dies, however it dies. The row says who holds it, for the second server's refusal, and keeps
the history; a heartbeat shows when a hard-killed overseer stopped.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta

from etl_craft.core.actor import Actor, host_name
from etl_craft.core.clock import utc_now
from etl_craft.core.errors import LockTimeoutError
from etl_craft.engine import locks, transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.records import overseers
from etl_craft.execution.processes.identity import process_start
from etl_craft.execution.run_loop.leases import RENEW_SECONDS, lease_until
from etl_craft.execution.run_loop.signals import StopSignals

LEADERSHIP_LOCK = "overseer"
HOLDER_ROW_WAIT_SECONDS = 5.0
log = logging.getLogger("etl_craft.server")


@contextmanager
def leadership(db: EngineDb, version: str, actor: Actor) -> Iterator[tuple[int, Callable[[], bool]]]:
    """Hold the overseer lock and its row for the block; yields the OVERSEER_ID and a check of whether
    the lock is still held.

    A second server is refused (exit 14) naming the active one.
    """
    with contextlib.ExitStack() as stack:
        try:
            still_held = stack.enter_context(locks.hold(db, LEADERSHIP_LOCK, timeout=0))
        except LockTimeoutError:
            active = _active_overseer(db)
            raise LockTimeoutError(
                "etl-craft server",
                found=(active.describe() if active else "another overseer") + " is active",
                expected="no other overseer on this Engine DB",
                remedy="stop that server first (SIGTERM), or keep it: one overseer per Engine DB is enough",
            ) from None
        with db.write() as conn:
            overseer_id = overseers.record_start(
                conn, host=host_name(), pid=os.getpid(), version=version, actor=actor, now=utc_now()
            )
        try:
            yield overseer_id, still_held
        finally:
            with contextlib.suppress(Exception), db.write() as conn:
                overseers.record_stop(conn, overseer_id, actor=actor, now=utc_now())


def _active_overseer(db: EngineDb) -> overseers.OverseerRow | None:
    """The row of the overseer that holds the lock.

    The holder writes its row just after it takes the lock, so a server that lost a race for it may
    look before the row exists, and a hard-killed overseer's row stays open with an old heartbeat:
    look again for a few seconds until an open row with a recent heartbeat (and, on this host, a live
    process) appears.
    """
    deadline = time.monotonic() + HOLDER_ROW_WAIT_SECONDS
    while True:
        with db.read() as conn:
            active = overseers.latest_running(conn)
        holder = (
            active is not None
            and utc_now() - active.heartbeat_at < timedelta(seconds=2 * RENEW_SECONDS)
            and (active.host != host_name() or process_start(active.pid) is not None)
        )
        if holder or time.monotonic() >= deadline:
            return active
        time.sleep(0.1)


class OverseerHeartbeat(threading.Thread):
    """Every RENEW_SECONDS, in one transaction: the overseer's heartbeat, and the lease of every run
    and attempt it holds (one statement each, however many runs it supervises). First it checks that
    the overseer lock is still held: a PostgreSQL session that ended took the lock with it, so another
    server may lead now, and this one stops (`lost` says why)."""

    def __init__(
        self, db: EngineDb, overseer_id: int, owner_id: str, still_held: Callable[[], bool], signals: StopSignals
    ) -> None:
        super().__init__(name="etl-craft-overseer-heartbeat", daemon=True)
        self._db, self._overseer_id, self._owner_id = db, overseer_id, owner_id
        self._still_held, self._signals = still_held, signals
        self._stopped = threading.Event()
        self.lost: str | None = None

    def beat(self) -> None:
        now = utc_now()
        with self._db.write() as conn:
            overseers.heartbeat(conn, self._overseer_id, now)
            transitions.renew_all_leases(conn, owner_id=self._owner_id, lease_until=lease_until(now), now=now)

    def run(self) -> None:
        while not self._stopped.wait(RENEW_SECONDS):
            if not self._still_held():
                self.lost = (
                    f"etl-craft server: overseer {self._overseer_id} lost its leadership: the Engine DB session "
                    "holding the overseer lock ended (a PostgreSQL restart, pg_terminate_backend or an idle "
                    "timeout), so another server may lead now; this one stops"
                )
                log.error("%s", self.lost)
                self._signals.stop(f"stopped: {self.lost}")
                return
            try:
                self.beat()
            except Exception:  # a passing Engine DB error: leases last LEASE_SECONDS, try again next beat
                log.warning("could not renew the overseer's leases; retrying in %s s", RENEW_SECONDS, exc_info=True)

    def stop(self) -> None:
        self._stopped.set()
        if self.is_alive():
            # The lock's connection is the heartbeat's until it ends; the caller unlocks with it next.
            self.join(RENEW_SECONDS)
