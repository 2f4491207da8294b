"""The five-field cron parser and next_after: syntax accepted and refused, leap days, DST gaps and overlaps."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from etl_craft.core import cron

pytestmark = pytest.mark.unit


def utc(*parts: int) -> datetime:
    return datetime(*parts, tzinfo=UTC)  # type: ignore[misc]


@pytest.mark.parametrize(
    ("expression", "after", "expected"),
    [
        ("*/15 * * * *", utc(2026, 5, 4, 10, 7), utc(2026, 5, 4, 10, 15)),
        ("0 9 * * MON-FRI", utc(2026, 5, 8, 9, 0), utc(2026, 5, 11, 9, 0)),  # Friday 09:00 -> Monday
        ("30 6 1,15 * *", utc(2026, 5, 2), utc(2026, 5, 15, 6, 30)),
        ("0 0 * JAN,jul *", utc(2026, 2, 1), utc(2026, 7, 1)),
        ("0 8-18/4 * * *", utc(2026, 5, 4, 12, 1), utc(2026, 5, 4, 16, 0)),
        ("0 0 * * 7", utc(2026, 5, 4), utc(2026, 5, 10)),  # 7 is Sunday too
        ("0 0 13 * FRI", utc(2026, 5, 4), utc(2026, 5, 8)),  # both day fields restricted: either matches
        ("@hourly", utc(2026, 5, 4, 10, 0), utc(2026, 5, 4, 11, 0)),
        ("@daily", utc(2026, 5, 4, 10, 0), utc(2026, 5, 5)),
        ("@weekly", utc(2026, 5, 4), utc(2026, 5, 10)),
        ("@monthly", utc(2026, 5, 4), utc(2026, 6, 1)),
        ("@yearly", utc(2026, 5, 4), utc(2027, 1, 1)),
        ("@annually", utc(2026, 5, 4), utc(2027, 1, 1)),
        ("0 0 29 2 *", utc(2026, 3, 1), utc(2028, 2, 29)),  # the next leap day
        ("0 0 29 2 *", utc(2096, 3, 1), utc(2104, 2, 29)),  # 2100 is not a leap year
    ],
)
def test_next_after(expression: str, after: datetime, expected: datetime) -> None:
    assert cron.next_after(expression, after) == expected


@pytest.mark.parametrize(
    ("expression", "problem"),
    [
        ("0 0 30 2 *", "never occurs"),
        ("0 0 31 4,6 *", "never occurs"),
        ("60 * * * *", "minute 60 is outside 0-59"),
        ("* 24 * * *", "hour 24 is outside 0-23"),
        ("* * 0 * *", "day of month 0 is outside 1-31"),
        ("* * * 13 *", "month 13 is outside 1-12"),
        ("* * * * 8", "day of week 8 is outside 0-7"),
        ("*/0 * * * *", "step '0' is not a positive whole number"),
        ("5/10 * * * *", "write a range such as 5-59/10"),
        ("10-5 * * * *", "runs backwards"),
        ("1,,2 * * * *", "empty list item"),
        ("0 0 * * MON#2", "expected a number or a name"),
        ("0 0 L * *", "expected a number"),
        ("0 0 ? * *", "expected a number"),
        ("0 0 0 * * *", "6 field(s)"),
        ("", "0 field(s)"),
        ("@reboot", "unknown macro"),
        ("@midnight", "unknown macro"),
    ],
)
def test_parse_refuses_what_is_not_the_documented_syntax(expression: str, problem: str) -> None:
    with pytest.raises(cron.CronError) as caught:
        cron.parse(expression)
    assert problem in caught.value.problem
    assert repr(expression) in str(caught.value)


def test_thirty_february_is_allowed_when_the_weekday_can_match() -> None:
    assert cron.next_after("0 0 30 2 MON", utc(2026, 1, 1)) == utc(2026, 2, 2)


def test_a_local_time_in_the_spring_gap_fires_at_the_next_valid_minute() -> None:
    # New York springs forward on 2026-03-08 at 02:00 EST to 03:00 EDT: 02:30 does not exist.
    assert cron.next_after("30 2 * * *", utc(2026, 3, 8, 6, 0), "America/New_York") == utc(2026, 3, 8, 7, 0)
    # Every minute of the gap fires once, at 03:00 EDT; the next tick is 03:15 EDT.
    assert cron.next_after("*/15 * * * *", utc(2026, 3, 8, 6, 50), "America/New_York") == utc(2026, 3, 8, 7, 0)
    assert cron.next_after("*/15 * * * *", utc(2026, 3, 8, 7, 0), "America/New_York") == utc(2026, 3, 8, 7, 15)
    # London: 2026-03-29 01:00 GMT -> 02:00 BST.
    assert cron.next_after("30 1 * * *", utc(2026, 3, 29, 0, 0), "Europe/London") == utc(2026, 3, 29, 1, 0)


def test_a_repeated_local_time_fires_once_at_its_first_occurrence() -> None:
    # New York falls back on 2026-11-01: 01:30 happens at 05:30 UTC (EDT) and again at 06:30 UTC (EST).
    assert cron.next_after("30 1 * * *", utc(2026, 11, 1, 4, 0), "America/New_York") == utc(2026, 11, 1, 5, 30)
    assert cron.next_after("30 1 * * *", utc(2026, 11, 1, 5, 30), "America/New_York") == utc(2026, 11, 2, 6, 30)
    # London falls back on 2026-10-25: 01:15 happens at 00:15 UTC (BST) and at 01:15 UTC (GMT).
    ticks, instant = [], utc(2026, 10, 24, 23, 0)
    for _ in range(3):
        instant = cron.next_after("15 * * * *", instant, "Europe/London")
        ticks.append(instant)
    assert ticks == [utc(2026, 10, 24, 23, 15), utc(2026, 10, 25, 0, 15), utc(2026, 10, 25, 2, 15)]


def test_next_after_needs_an_aware_instant() -> None:
    with pytest.raises(ValueError, match="aware"):
        cron.next_after("@daily", datetime(2026, 1, 1))
