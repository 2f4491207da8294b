"""The Retention section: how long the Engine DB keeps run history, attempts, consumption and
interventions, and when the server purges what is older (S6.A)."""

from __future__ import annotations

import re
from datetime import time

from etl_craft.config.layout import BlockSpec, open_section
from etl_craft.config.model import RetentionSettings
from etl_craft.config.values import Context, Reader, show

RETENTION_SPEC = BlockSpec(
    "Retention",
    ("Run_history_days", "Attempt_log_days", "Consumption_days", "Interventions_days", "Daily_at"),
)
MAX_DAYS = 36_500  # a hundred years: beyond that "never" says what is meant
_CLOCK = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")


def _days_or_never(reader: Reader, key: str) -> int | None:
    setting = reader.get(key)
    if setting is None or str(setting.value).strip().lower() == "never":
        return None
    return reader.whole(key, 0, 1, MAX_DAYS)


def _daily_at(reader: Reader) -> time:
    text = reader.text("Daily_at", "03:00") or "03:00"
    match = _CLOCK.fullmatch(text)
    if match is None:
        raise reader.error(
            "Daily_at",
            found=show(text),
            expected="a time of day HH:MM on the 24-hour clock, e.g. 03:00 (Orchestration.Timezone)",
            remedy="write the quiet hour at which the server purges, such as 03:30",
        )
    return time(int(match.group(1)), int(match.group(2)))


def parse_retention(ctx: Context, body: object) -> RetentionSettings:
    """One retention for every profile: what history a project keeps must not depend on the environment."""
    reader = open_section(ctx, RETENTION_SPEC, body, None, profiles=False)
    return RetentionSettings(
        run_history_days=reader.whole("Run_history_days", 400, 1, MAX_DAYS),
        attempt_log_days=reader.whole("Attempt_log_days", 90, 1, MAX_DAYS),
        consumption_days=reader.whole("Consumption_days", 400, 1, MAX_DAYS),
        interventions_days=_days_or_never(reader, "Interventions_days"),
        daily_at=_daily_at(reader),
    )
