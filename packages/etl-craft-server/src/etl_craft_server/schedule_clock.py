"""The time schedules are judged by: the real time, or one the tests control.

`ETL_CRAFT_SCHEDULE_CLOCK=<file>` makes the overseer read "now" for schedules from the file (an ISO
8601 instant) at every loop, so a test can move a real `etl-craft server` through a week of ticks
without sleeping through it (see CONTRIBUTING.md). Leases, attempts and audit times always use the
real clock: only which ticks are due follows this one.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

from etl_craft.core.clock import utc_now
from etl_craft.core.errors import ConfigurationError

VARIABLE = "ETL_CRAFT_SCHEDULE_CLOCK"


class ScheduleClock:
    def __init__(self, path: str | None = None) -> None:
        self.path = Path(path) if path else None

    @classmethod
    def from_environment(cls) -> ScheduleClock:
        return cls(os.environ.get(VARIABLE) or None)

    @property
    def real(self) -> bool:
        return self.path is None

    def now(self) -> datetime:
        if self.path is None:
            return utc_now()
        text = self.path.read_text(encoding="utf-8").strip()
        try:
            instant = datetime.fromisoformat(text)
        except ValueError:
            raise ConfigurationError(
                f"{VARIABLE} file {self.path}",
                found=repr(text),
                expected="an ISO 8601 instant such as 2026-03-08T06:59:00+00:00",
                remedy=f"write an instant to the file, or unset {VARIABLE} to use the real time",
            ) from None
        return instant if instant.tzinfo else instant.replace(tzinfo=UTC)
