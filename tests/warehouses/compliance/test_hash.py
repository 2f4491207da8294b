"""The canonical change hash, version 2: one digest for the same values on every warehouse (B22, B35)."""

from __future__ import annotations

import hashlib
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from tests.fixtures.warehouse import SqlProject, params

pytestmark = pytest.mark.sqlite

COLUMNS = "t|n|ts|nt|d|b|i"
# Every row: (id, text, DECIMAL(12,3), timestamp with time zone, timestamp, date, boolean, bigint)
ROWS = [
    (1, None, None, None, None, None, None, None),
    (2, "", Decimal("0.000"), None, None, None, False, 0),
    (
        3,
        "V1:a",
        Decimal("1.500"),
        "2026-01-02 03:04:05.123456+00",
        "2026-01-02 03:04:05.123456",
        "2026-01-02",
        True,
        -7,
    ),
    (
        4,
        "a|b;c:d",
        Decimal("-12.100"),
        "2026-01-02 05:04:05.123456+02",
        "1999-12-31 23:59:59",
        "1999-12-31",
        True,
        2**40,
    ),
    (5, "日本 é", Decimal("100.000"), "2026-01-01 22:04:05.5-05", "2026-06-30 00:00:00.000001", "2026-06-30", False, 1),
    (6, "NV0:", Decimal("0.010"), "2026-01-02 03:04:05.123456+00", None, None, None, None),
]
# The digest of row 3, written out so the encoding itself can never drift.
GOLDEN_ROW_3 = "d3db531cc3458c766d6adc3c69421f08"
# = md5("V4:V1:aV5:1.500V27:2026-01-02T03:04:05.123456ZV27:2026-01-02T03:04:05.123456ZV10:2026-01-02V4:trueV2:-7")


def _sql_literal(value: object, sql_type: str) -> str:
    if value is None:
        return f"CAST(NULL AS {sql_type})"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int | Decimal):
        return f"CAST({value} AS {sql_type})"
    text = str(value).replace("'", "''")
    return f"CAST('{text}' AS {sql_type})"


TYPES = (
    "INTEGER",
    "VARCHAR(40)",
    "DECIMAL(12,3)",
    "TIMESTAMP WITH TIME ZONE",
    "TIMESTAMP",
    "DATE",
    "BOOLEAN",
    "BIGINT",
)
NAMES = ("id", "t", "n", "ts", "nt", "d", "b", "i")


def select_rows() -> str:
    return " UNION ALL ".join(
        "SELECT " + ", ".join(f"{_sql_literal(v, ty)} AS {name}" for v, ty, name in zip(row, TYPES, NAMES, strict=True))
        for row in ROWS
    )


def _parse_ts(text: str) -> datetime:
    base, _, offset = text.partition("+") if "+" in text else (text[:-3], "", text[-3:])
    if "+" in text:
        sign, hours = 1, int(offset)
    else:
        sign, hours = -1, int(offset.lstrip("-"))
    moment = datetime.fromisoformat(base)
    return moment.replace(tzinfo=timezone(timedelta(hours=sign * hours)))


def canonical(value: object, kind: str) -> str | None:
    """The reference encoding, independent of any warehouse."""
    if value is None:
        return None
    if kind == "ts":
        return _parse_ts(str(value)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if kind == "nt":
        return datetime.fromisoformat(str(value)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if kind == "d":
        return date.fromisoformat(str(value)).isoformat()
    if kind == "b":
        return "true" if value else "false"
    return str(value)


def reference_digest(row: tuple[object, ...]) -> str:
    parts = []
    for value, name in zip(row[1:], NAMES[1:], strict=True):
        text = canonical(value, name)
        parts.append("N" if text is None else f"V{len(text)}:{text}")
    return hashlib.md5("".join(parts).encode()).hexdigest()


def load(p: SqlProject) -> str:
    target = p.warehouse.table("golden")
    p.run_sql(
        "setup",
        params(SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=target, SETUP_FOR="SCD1_MERGE", SOURCE_SQL=select_rows()),
    )
    p.run_sql(
        "load",
        params(
            SQL_ACTION="SCD1_MERGE",
            TARGET_OBJECT=target,
            MERGE_KEY="id",
            MERGE_COMPARE_COLUMNS=COLUMNS,
            SOURCE_SQL=select_rows(),
        ),
    )
    return target


@pytest.mark.smoke
def test_b22_the_hash_tells_null_from_empty_text_and_separators(sqlp: SqlProject) -> None:
    load(sqlp)
    digests = dict(sqlp.warehouse.contents("golden", "id, hash_key"))
    assert digests == {row[0]: reference_digest(row) for row in ROWS}
    assert digests[3] == reference_digest(ROWS[2]) == GOLDEN_ROW_3
    assert len(set(digests.values())) == len(ROWS)


def test_b35_the_hash_does_not_depend_on_the_session_time_zone(
    sqlp: SqlProject, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = load(sqlp)
    before = sqlp.warehouse.contents("golden", "id, hash_key, pipeline_run_id")
    # Other default zones for new sessions: libpq reads PGTZ, DuckDB the process's TZ.
    monkeypatch.setenv("PGTZ", "America/New_York")
    monkeypatch.setenv("TZ", "Asia/Tokyo")
    sqlp.new_run()
    again = sqlp.run_sql("load")
    assert again.counts.rows_written == 0
    assert sqlp.warehouse.contents("golden", "id, hash_key, pipeline_run_id") == before
    assert target
