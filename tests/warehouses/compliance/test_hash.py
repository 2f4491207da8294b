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


def select_rows(rows: list[tuple[object, ...]] | None = None) -> str:
    return " UNION ALL ".join(
        "SELECT " + ", ".join(f"{_sql_literal(v, ty)} AS {name}" for v, ty, name in zip(row, TYPES, NAMES, strict=True))
        for row in rows or ROWS
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


# The golden digests (issue 22, item 3): inputs and the HASH_KEY every warehouse must give them, written
# out so that neither the encoding nor a dialect's canonical text can drift. Each row sets the named
# columns (the others are NULL: `N`); the comment is the string whose MD5 (of its UTF-8 bytes) it is.
# Text is hashed as stored, without Unicode normalization, its length in code points: a composed and
# a decomposed é differ.
GOLDEN: list[tuple[int, dict[str, object], str]] = [
    (1, {}, "22f5a758e5cf829804292fa88aede5aa"),  # NNNNNNN
    (2, {"t": ""}, "04ca42cf7cdb765cf0fbb4702448deed"),  # V0:NNNNNN
    (3, {"t": "a|b;c:d"}, "9a6ffa1b7f00e30aa07d4cad245b0aba"),  # V7:a|b;c:dNNNNNN
    (4, {"t": "V1:a"}, "211663f9356f3a6a2727bdc2fa9de2fd"),  # V4:V1:aNNNNNN
    (5, {"t": "N"}, "7cf0b9dfbff6ba525e371f337924a04d"),  # V1:NNNNNNN
    (6, {"t": "\u00e9"}, "4d89feb32a592340e012e2406589f356"),  # V1:é (composed) NNNNNN
    (7, {"t": "e\u0301"}, "1d76cba05bd1ec91628d097175cb1418"),  # V2:é (e + combining acute) NNNNNN
    (8, {"t": "日本"}, "3f9d9c3200d54b34637c100d16f69439"),  # V2:日本NNNNNN
    (9, {"t": "\U0001f600"}, "4ec2a7463164fdd31270c8d1429d017b"),  # V1:😀NNNNNN
    (10, {"t": "a "}, "6085b21e6d0411ec50d6b35e73af6f3a"),  # V2:a NNNNNN
    (11, {"n": Decimal("0.000")}, "f0b7e8aa87649550c5df78c16a67033c"),  # NV5:0.000NNNNN
    (12, {"n": Decimal("-12.100")}, "9aa3b17dbc00d147be13b257fbb2b8e9"),  # NV7:-12.100NNNNN
    (13, {"n": Decimal("0.010")}, "bab87f4766b95b3a2a30f53848ea7425"),  # NV5:0.010NNNNN
    (14, {"n": Decimal("123456789.123")}, "7ad8cd3782d31d915a0471e6d228360a"),  # NV13:123456789.123NNNNN
    (15, {"ts": "2026-01-02 05:04:05.123456+02"}, "7b74b69c4ad4903f74f0a2c07f933d08"),  # NNV27:2026-01-02T03:04:05.123456ZNNNN
    (16, {"ts": "2026-01-01 22:04:05.5-05"}, "e44bb713236a1b87c91a4d105f341480"),  # NNV27:2026-01-02T03:04:05.500000ZNNNN
    (17, {"ts": "2026-01-02 03:04:05+00"}, "c03179cf17e6e92476d6c47b4f2112a2"),  # NNV27:2026-01-02T03:04:05.000000ZNNNN
    (18, {"nt": "1999-12-31 23:59:59"}, "9e3587fdd2c6dcdea218cf7d8cd28aa0"),  # NNNV27:1999-12-31T23:59:59.000000ZNNN
    (19, {"nt": "2026-06-30 00:00:00.000001"}, "02eef3f759f1b72c8ab3724a7ceaf67e"),  # NNNV27:2026-06-30T00:00:00.000001ZNNN
    (20, {"d": "2026-06-30"}, "b3b41aebff20de0a0e388256cbc605bc"),  # NNNNV10:2026-06-30NN
    (21, {"b": True}, "0142137cfbd94942a549a592475d2ac7"),  # NNNNNV4:trueN
    (22, {"b": False}, "3c4a4c248505e2c9d1d4e5b0169a755d"),  # NNNNNV5:falseN
    (23, {"i": 9223372036854775807}, "6fbb040fb9313e748cdf4a46b8400c23"),  # NNNNNNV19:9223372036854775807
    (24, {"i": -9223372036854775807}, "da8ceb8004430ee7606cab03d850ab77"),  # NNNNNNV20:-9223372036854775807
    (25, {"i": 0}, "385e0bca0f29f194d43b4585fb3f2174"),  # NNNNNNV1:0
    (26, dict(zip(NAMES[1:], ROWS[2][1:], strict=True)), GOLDEN_ROW_3),  # every type in one row, in order
]  # fmt: skip


def golden_rows() -> list[tuple[object, ...]]:
    return [(id_, *(values.get(name) for name in NAMES[1:])) for id_, values, _digest in GOLDEN]


def load(p: SqlProject, rows: list[tuple[object, ...]] | None = None, table: str = "golden") -> str:
    target = p.warehouse.table(table)
    p.run_sql(
        "setup",
        params(SQL_ACTION="SETUP_TABLE", TARGET_OBJECT=target, SETUP_FOR="SCD1_MERGE", SOURCE_SQL=select_rows(rows)),
    )
    p.run_sql(
        "load",
        params(
            SQL_ACTION="SCD1_MERGE",
            TARGET_OBJECT=target,
            MERGE_KEY="id",
            MERGE_COMPARE_COLUMNS=COLUMNS,
            SOURCE_SQL=select_rows(rows),
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


@pytest.mark.smoke
def test_golden_digests(sqlp: SqlProject) -> None:
    """The same values give the same HASH_KEY on every warehouse: the one written in GOLDEN."""
    load(sqlp, golden_rows(), table="digests")
    assert sqlp.warehouse.contents("digests", "id, hash_key") == [(id_, digest) for id_, _values, digest in GOLDEN]
    # The reference encoding agrees with the table, so the table is the documented encoding.
    assert [(row[0], reference_digest(row)) for row in golden_rows()] == [(id_, d) for id_, _v, d in GOLDEN]


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
