"""The text cells of the inspection commands: absent values, UTC times, numbers and one-line messages."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from etl_craft.cli.text import cell, first_line, number, seconds, when

pytestmark = pytest.mark.unit


def test_absent_values_and_times() -> None:
    assert cell(None) == cell("") == when(None) == "-"
    paris = timezone(timedelta(hours=1))
    assert when(datetime(2026, 1, 31, 7, 30, 15, 999999, tzinfo=paris)) == "2026-01-31T06:30:15Z"
    assert when(date(2026, 1, 31)) == "2026-01-31"
    start = datetime(2026, 1, 31, tzinfo=UTC)
    assert seconds(start, start + timedelta(seconds=61, milliseconds=260)) == "61.3"
    assert seconds(start, None) == "-"


def test_numbers_drop_a_zero_fraction() -> None:
    assert [number(Decimal("2")), number(2.5), number(24), cell(Decimal("0.25"))] == ["2", "2.5", "24", "0.25"]


def test_a_cell_never_breaks_the_tab_separated_line() -> None:
    # Line breaks and tabs are shown as escapes (what was stored stays visible); runs of spaces are one.
    assert cell("a\tb\nc  d") == "a\\tb\\nc d"
    assert cell({"b": 1, "a": None}) == '{"a":null,"b":1}'
    assert first_line("\n  boom: the feed  is down\nTraceback (most recent call last):\n") == "boom: the feed is down"
    assert first_line(None) == "-"


def test_a_cell_escapes_what_a_terminal_would_act_on() -> None:
    assert cell("\x1b[2J\x1b[31mred\x9b\u202eevil\x00") == "\\x1b[2J\\x1b[31mred\\x9b\\u202eevil\\x00"
    assert cell({"reason": "\x1b]0;title\x07"}) == '{"reason":"\\u001b]0;title\\u0007"}'
    assert cell("caf\u00e9 \u4e2d\u6587") == "caf\u00e9 \u4e2d\u6587"
