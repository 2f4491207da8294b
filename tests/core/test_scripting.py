"""`etl_craft.scripting`: Offset casts like SQL CAST, keeps microseconds and refuses what it can't store."""

from __future__ import annotations

import pickle
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from etl_craft.scripting import Offset, ScriptContractError, ScriptResult

pytestmark = pytest.mark.unit

NANOSECONDS = (
    "offset 2026-01-01 00:00:00.123456789 has nanoseconds, which the offset store can't keep; round it to microseconds"
)


class NanoTimestamp(datetime):
    """Stands in for pandas.Timestamp: a datetime with a `nanosecond` attribute."""

    nanosecond = 0

    def __str__(self) -> str:
        return f"{self:%Y-%m-%d %H:%M:%S}.{self.microsecond:06d}{self.nanosecond:03d}"


def nano_timestamp(nanosecond: int, **kwargs: object) -> NanoTimestamp:
    value = NanoTimestamp(2026, 1, 1, 0, 0, 0, 123456, **kwargs)  # type: ignore[arg-type]
    value.nanosecond = nanosecond  # type: ignore[misc]
    return value


@pytest.mark.parametrize(
    ("value", "cast"),
    [
        ("1042", 1042),
        (" -7 ", -7),
        ("10.50", Decimal("10.50")),
        ("1e3", 1000),
        (1042, 1042),
        (Decimal("0.0000001"), Decimal("0.0000001")),
        (2.5, Decimal("2.5")),
    ],
)
def test_numbers_cast_like_sql_cast(value, cast):
    offset = Offset(value, "NUMBER")
    assert offset.value == cast and type(offset.value) is type(cast)
    assert Offset(offset.stored_text, "NUMBER") == offset


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("abc", "found text that is not a number"),
        ("1_000", "found text that is not a number"),
        ("nan", "found text that is not a number"),
        (True, "found a bool"),
        (float("inf"), "found Infinity, which is not a finite number"),
        ([1], "found a list"),
        ("9" * 1001, "found a number with more than 1000 digits"),
    ],
)
def test_values_that_are_not_numbers_are_refused(value, found):
    with pytest.raises(ScriptContractError) as caught:
        Offset(value, "NUMBER")
    assert found in str(caught.value)
    assert str(caught.value).startswith("offset ")
    assert not caught.value.retryable


def test_text_offsets():
    assert Offset.text("0000012345_orders.json").value == "0000012345_orders.json"
    assert Offset.text(12).value == "12"
    assert Offset.text("").stored_text == ""
    with pytest.raises(ScriptContractError, match="found a float"):
        Offset.text(1.5)
    with pytest.raises(ScriptContractError, match="found a NUL character"):
        Offset.text("a\x00b")


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        (datetime(2026, 1, 31, 8, 15, 0, 123456), "2026-01-31T08:15:00.123456+00:00"),  # naive is UTC
        (datetime(2026, 1, 31, 3, 15, tzinfo=timezone(timedelta(hours=-5))), "2026-01-31T08:15:00.000000+00:00"),
        (date(2026, 1, 31), "2026-01-31T00:00:00.000000+00:00"),
        ("2026-01-31 08:15:00.123456", "2026-01-31T08:15:00.123456+00:00"),
        ("2026-01-31T10:15:00.5+02:00", "2026-01-31T08:15:00.500000+00:00"),
        ("2026-01-31T08:15:00Z", "2026-01-31T08:15:00.000000+00:00"),
        ("2026-01-31 08:15 UTC", "2026-01-31T08:15:00.000000+00:00"),
        ("2026-01-31", "2026-01-31T00:00:00.000000+00:00"),
        ("2026-01-31 08:15:00.123456000", "2026-01-31T08:15:00.123456+00:00"),  # zero nanoseconds lose nothing
        (nano_timestamp(0), "2026-01-01T00:00:00.123456+00:00"),
    ],
)
def test_timestamps_are_stored_as_utc_with_microseconds(value, stored):
    offset = Offset.timestamp(value)
    assert offset.stored_text == stored
    assert type(offset.value) is datetime and offset.value.tzinfo is UTC
    assert Offset(offset.stored_text, "TIMESTAMP") == offset


def test_nanoseconds_are_refused_from_objects_and_text():
    for value in (nano_timestamp(789), "2026-01-01 00:00:00.123456789"):
        with pytest.raises(ScriptContractError) as caught:
            Offset(value, "TIMESTAMP")
        assert str(caught.value).startswith(NANOSECONDS)
        assert "ts.floor('us')" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "found"),
    [
        ("yesterday", "found text that is not a timestamp"),
        ("2026-02-30", "found an impossible date or time"),
        ("2026-01-01T00:00:00+24:00", "found a zone offset of 24 hours or more"),
        ("0001-01-01T00:30:00+01:00", "found an instant outside the years 1 to 9999 in UTC"),
        (1767225600, "found a int"),
    ],
)
def test_values_that_are_not_timestamps_are_refused(value, found):
    with pytest.raises(ScriptContractError, match=found):
        Offset.timestamp(value)


@pytest.mark.parametrize("datatype", ["DATE", "", None, 1])
def test_the_datatype_is_always_declared(datatype):
    with pytest.raises(ScriptContractError) as caught:
        Offset("1", datatype)  # type: ignore[arg-type]
    assert str(caught.value).startswith("offset datatype: found")
    assert "NUMBER, TEXT or TIMESTAMP (always declared, never guessed)" in str(caught.value)


def test_datatypes_are_case_insensitive_and_shorthands_declare_them():
    assert Offset("5", "number") == Offset.number(5)
    assert Offset.number(5).datatype == "NUMBER"
    assert Offset.text("a").datatype == "TEXT"
    assert Offset.timestamp("2026-01-01").datatype == "TIMESTAMP"


def test_offsets_and_results_are_frozen_and_pickle():
    offset = Offset.timestamp("2026-01-01T00:00:00.000001")
    with pytest.raises(AttributeError):
        offset.value = 1  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(offset)) == offset
    result = ScriptResult(3, offset)
    assert pickle.loads(pickle.dumps(result)) == result


def test_importing_the_scripting_module_stays_light():
    code = "import sys, etl_craft.scripting; print(sorted(m for m in ('sqlalchemy', 'duckdb', 'psycopg') if m in sys.modules))"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert output.strip() == "[]"
