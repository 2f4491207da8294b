"""Cloning on its own schedule (S6.E): every Cloning.Every_minutes the server runs the same clone as
`etl-craft clone`, on a thread of its own and never inside a run's finalize, so a slow warehouse
never holds up runs. A cycle that comes while the previous clone still runs is skipped (the running
one copies what it would have): at most one clone runs, and requests coalesce."""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.actor import Actor, acting_as
from etl_craft.engine.database import EngineDb
from etl_craft.services.cloning import clone_now
from etl_craft.services.context import OperationContext

log = logging.getLogger("etl_craft.server")


class ScheduledClone:
    def __init__(self, db: EngineDb, config: ConnectorConfig, actor: Actor, now: datetime) -> None:
        self.context = OperationContext(config, db, actor)
        self.every = timedelta(minutes=config.cloning.every_minutes)
        self.next_at = now  # the first clone right after start: the mirror catches up at once
        self.thread: threading.Thread | None = None
        if config.cloning.enabled:
            log.info("etl-craft server: cloning (Cloning.Every_minutes) every %s", self.every)

    def start_if_due(self, now: datetime) -> None:
        if not self.context.config.cloning.enabled or now < self.next_at:
            return
        self.next_at = now + self.every
        if self.thread is not None and self.thread.is_alive():
            log.warning("the last clone is still running; this cycle is skipped, the next is at %s", self.next_at)
            return
        self.thread = threading.Thread(target=self._clone, name="etl-craft clone", daemon=True)
        self.thread.start()

    def _clone(self) -> None:
        try:
            with acting_as(self.context.actor):
                view = clone_now(self.context)
        except Exception:  # the server outlives a failed clone (recorded in the mirror's state); the next cycle retries
            log.exception("the scheduled clone failed; the next one is at %s", self.next_at)
            return
        log.info("%s", view.message)
