"""Five-field cron schedules: parsing, and the next tick after an instant in a time zone.

Written here rather than taken from a library: the accepted syntax is exactly the documented one
(minute, hour, day of month, month, day of week; lists, ranges, positive steps, JAN..DEC and
SUN..SAT names, Sunday as 0 or 7, and the macros @hourly, @daily, @weekly, @monthly, @yearly and
@annually), and libraries accept more (seconds, years, L, W, #, ?, H) that a schedule here must
refuse. Daylight-saving rules are ours too: a local minute that doesn't exist fires at the next
minute that does, and a local minute that happens twice fires once, at its first occurrence.
"""

from __future__ import annotations

import calendar
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from zoneinfo import ZoneInfo

MACROS = {
    "@hourly": "0 * * * *",
    "@daily": "0 0 * * *",
    "@weekly": "0 0 * * 0",
    "@monthly": "0 0 1 * *",
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
}
_MONTHS = {name.upper(): number for number, name in enumerate(calendar.month_abbr) if name}
_DAYS = {"SUN": 0, "MON": 1, "TUE": 2, "WED": 3, "THU": 4, "FRI": 5, "SAT": 6}
# The longest wait a satisfiable schedule can have: 29 February after a skipped leap year (2096 -> 2104).
_SEARCH_DAYS = 366 * 9
_MINUTE = timedelta(minutes=1)
EXPECTED = (
    "five fields (minute hour day-of-month month day-of-week) of numbers, names, *, lists (1,15), "
    "ranges (MON-FRI) and steps (*/15, 8-18/2), or one of " + ", ".join(MACROS)
)


class CronError(ValueError):
    """A schedule that is not a valid expression; the message says what is wrong and what is accepted."""

    def __init__(self, expression: str, problem: str) -> None:
        self.expression = expression
        self.problem = problem
        super().__init__(f"{expression!r}: {problem}")


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: dict[str, int] | None = None


_FIELDS = (
    _Field("minute", 0, 59),
    _Field("hour", 0, 23),
    _Field("day of month", 1, 31),
    _Field("month", 1, 12, _MONTHS),
    _Field("day of week", 0, 7, _DAYS),
)


@dataclass(frozen=True)
class Schedule:
    """A parsed expression: the allowed values of each field, and which day fields are restricted."""

    expression: str
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_restricted: bool
    weekdays_restricted: bool

    def runs_on(self, day: date) -> bool:
        """Whether the schedule has ticks on this date (day of month and day of week rules)."""
        if day.month not in self.months:
            return False
        by_day = day.day in self.days
        by_weekday = (day.isoweekday() % 7) in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return by_day or by_weekday  # both restricted: either one matches, as cron does
        if self.days_restricted:
            return by_day
        if self.weekdays_restricted:
            return by_weekday
        return True

    def local_ticks(self, start: datetime) -> Iterator[datetime]:
        """Naive wall-clock ticks at or after the naive `start`, in order."""
        day = start.date()
        for _ in range(_SEARCH_DAYS):
            if self.runs_on(day):
                for hour in self.hours:
                    for minute in self.minutes:
                        tick = datetime.combine(day, time(hour, minute))
                        if tick >= start:
                            yield tick
            day += timedelta(days=1)


def _number(text: str, spec: _Field, expression: str) -> int:
    upper = text.upper()
    if spec.names is not None and upper in spec.names:
        return spec.names[upper]
    if not (text.isascii() and text.isdigit()):
        named = f" or a name ({', '.join(spec.names)})" if spec.names else ""
        raise CronError(expression, f"{spec.name} has {text!r}; expected a number{named}")
    value = int(text)
    if not spec.low <= value <= spec.high:
        raise CronError(expression, f"{spec.name} {value} is outside {spec.low}-{spec.high}")
    return value


def _parse_field(text: str, spec: _Field, expression: str) -> set[int]:
    values: set[int] = set()
    for item in text.split(","):
        if not item:
            raise CronError(expression, f"{spec.name} {text!r} has an empty list item")
        body, slash, step_text = item.partition("/")
        step = 1
        if slash:
            if not (step_text.isascii() and step_text.isdigit()) or int(step_text) < 1:
                raise CronError(expression, f"{spec.name} step {step_text!r} is not a positive whole number")
            step = int(step_text)
        if body == "*":
            low, high = spec.low, spec.high
        elif "-" in body:
            first, _, last = body.partition("-")
            low, high = _number(first, spec, expression), _number(last, spec, expression)
            if low > high:
                raise CronError(expression, f"{spec.name} range {body!r} runs backwards; write it low-high")
        else:
            low = high = _number(body, spec, expression)
            if slash:
                raise CronError(
                    expression,
                    f"{spec.name} {item!r} steps from a single value; write a range such as {body}-{spec.high}/{step}",
                )
        values.update(range(low, high + 1, step))
    return values


def parse(expression: str) -> Schedule:
    """The schedule of an expression, or CronError saying what is wrong with it."""
    text = " ".join(expression.split())
    if text.startswith("@"):
        if text.lower() not in MACROS:
            raise CronError(expression, f"unknown macro {text!r}; expected one of {', '.join(MACROS)}")
        text = MACROS[text.lower()]
    parts = text.split(" ")
    if len(parts) != 5 or not text:
        raise CronError(expression, f"{len(parts) if text else 0} field(s); expected {EXPECTED}")
    minutes, hours, days, months, weekdays = (
        _parse_field(part, spec, expression) for part, spec in zip(parts, _FIELDS, strict=True)
    )
    if 7 in weekdays:
        weekdays = (weekdays - {7}) | {0}
    schedule = Schedule(
        expression=expression,
        minutes=tuple(sorted(minutes)),
        hours=tuple(sorted(hours)),
        days=frozenset(days),
        months=frozenset(months),
        weekdays=frozenset(weekdays),
        days_restricted=not parts[2].startswith("*"),
        weekdays_restricted=not parts[4].startswith("*"),
    )
    if not schedule.weekdays_restricted and not any(
        day <= calendar.monthrange(2024, month)[1] for month in months for day in days
    ):
        raise CronError(
            expression,
            "the day of month never occurs in the months given (e.g. 30 February), so it would never run",
        )
    return schedule


def _exists(local: datetime, zone: tzinfo) -> bool:
    aware = local.replace(tzinfo=zone)
    return aware.astimezone(UTC).astimezone(zone).replace(tzinfo=None) == local


def fire_instant(local: datetime, zone: tzinfo) -> datetime:
    """The UTC instant a naive local tick fires: its first occurrence, or the next valid minute in a gap."""
    probe = local
    while not _exists(probe, zone):
        probe += _MINUTE
    return probe.replace(tzinfo=zone, fold=0).astimezone(UTC)


def next_after(expression: str | Schedule, instant: datetime, tz: str | tzinfo = "UTC") -> datetime:
    """The first tick strictly after the aware `instant`, as an aware UTC datetime.

    Ticks are wall-clock times in `tz` (an IANA name or a tzinfo).
    """
    if instant.tzinfo is None:
        raise ValueError("next_after needs an aware instant (with a time zone)")
    schedule = expression if isinstance(expression, Schedule) else parse(expression)
    zone = ZoneInfo(tz) if isinstance(tz, str) else tz
    local = instant.astimezone(zone).replace(tzinfo=None, second=0, microsecond=0) + _MINUTE
    # In a repeated hour the wall clock runs past ticks that already fired: those are passed over.
    for tick in schedule.local_ticks(local):
        fired = fire_instant(tick, zone)
        if fired > instant:
            return fired
    raise CronError(schedule.expression, "no tick in the next nine years")  # pragma: no cover - parse refuses these
