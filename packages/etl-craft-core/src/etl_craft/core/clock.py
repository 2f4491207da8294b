"""UTC time helpers: every audit timestamp etl-craft writes is an aware UTC datetime."""

from __future__ import annotations

from datetime import UTC, date, datetime


def utc_now() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime) -> datetime:
    """An aware UTC datetime; a naive one is taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def iso(value: datetime | date | None) -> str | None:
    """ISO 8601 text for JSON documents (UTC with offset for datetimes)."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return as_utc(value).isoformat()
    return value.isoformat()
