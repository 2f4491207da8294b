"""The daily purge (S6.A): at Retention.Daily_at in the project's time zone the server runs the same
purge as `etl-craft purge`, on a thread of its own so the loop keeps admitting and supervising runs
while batches are removed."""

from __future__ import annotations

import logging
import threading
import zoneinfo
from datetime import datetime, timedelta

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.actor import Actor, acting_as
from etl_craft.engine.database import EngineDb
from etl_craft.services.context import OperationContext
from etl_craft.services.purge import purge_history

log = logging.getLogger("etl_craft.server")


def next_purge_after(now: datetime, config: ConnectorConfig) -> datetime:
    """The first Daily_at strictly after `now`, in Orchestration.Timezone (an aware instant)."""
    zone = zoneinfo.ZoneInfo(config.orchestration.timezone)
    local = now.astimezone(zone)
    candidate = datetime.combine(local.date(), config.retention.daily_at, tzinfo=zone)
    if candidate <= local:
        candidate = datetime.combine(local.date() + timedelta(days=1), config.retention.daily_at, tzinfo=zone)
    return candidate


class DailyPurge:
    def __init__(self, db: EngineDb, config: ConnectorConfig, actor: Actor, now: datetime) -> None:
        self.context = OperationContext(config, db, actor)
        self.next_at = next_purge_after(now, config)
        self.thread: threading.Thread | None = None
        log.info("etl-craft server: the daily purge (Retention.Daily_at) runs next at %s", self.next_at.isoformat())

    def start_if_due(self, now: datetime) -> None:
        if now < self.next_at:
            return
        self.next_at = next_purge_after(now, self.context.config)
        if self.thread is not None and self.thread.is_alive():
            log.warning("the daily purge is still running from last time; the next one is at %s", self.next_at)
            return
        self.thread = threading.Thread(target=self._purge, name="etl-craft daily purge", daemon=True)
        self.thread.start()

    def _purge(self) -> None:
        try:
            with acting_as(self.context.actor):
                view = purge_history(self.context)
        except Exception:  # the server outlives a failed purge; the next day tries again
            log.exception("the daily purge failed; the next one is at %s", self.next_at)
            return
        log.info("%s", view.message)
