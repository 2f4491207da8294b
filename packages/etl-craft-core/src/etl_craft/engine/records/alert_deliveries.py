"""AUD_ALERT_DELIVERIES: one append-only row per delivery to an alert channel, delivered or not."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.engine.schema.tables import aud_alert_deliveries as deliveries


@dataclass(frozen=True)
class Delivery:
    pipeline_run_id: int
    attempt_id: int | None
    channel: str
    event: str
    status: str  # DELIVERED | FAILED
    tries: int
    http_status: int | None
    error_message: str | None


def record_delivery(conn: sa.Connection, delivery: Delivery, now: datetime) -> None:
    conn.execute(
        deliveries.insert().values(
            pipeline_run_id=delivery.pipeline_run_id,
            attempt_id=delivery.attempt_id,
            channel=delivery.channel,
            event=delivery.event,
            status=delivery.status,
            tries=delivery.tries,
            http_status=delivery.http_status,
            error_message=delivery.error_message,
            delivered_at=now,
        )
    )


def channels_told(conn: sa.Connection, run_id: int, event: str) -> set[str]:
    """The channels that already have a delivery row for this run and event."""
    rows = conn.execute(
        sa.select(deliveries.c.channel).where(deliveries.c.pipeline_run_id == run_id, deliveries.c.event == event)
    )
    return {row.channel for row in rows}
