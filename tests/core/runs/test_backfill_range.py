"""`--backfill FROM:TO` is read before anything runs; each refusal says how to write the range."""

from __future__ import annotations

from datetime import date

import pytest

from etl_craft.core.errors import UsageError
from etl_craft.services.runs.backfills import parse_range

pytestmark = pytest.mark.unit


def test_a_range_gives_its_first_and_last_date() -> None:
    assert parse_range("2026-10-01:2026-10-07") == (date(2026, 10, 1), date(2026, 10, 7))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "2026-10-01",
            "--backfill: found '2026-10-01'; expected FROM:TO as YYYY-MM-DD:YYYY-MM-DD. "
            "Write both dates, e.g. --backfill 2026-10-01:2026-10-07",
        ),
        (
            "2026-10-07:2026-10-01",
            "--backfill: found '2026-10-07:2026-10-01'; expected a first date no later than the last. "
            "Give the earlier date first",
        ),
        (
            "2025-01-01:2026-01-02",
            "--backfill: found 367 dates; expected at most 366. Split the range into backfills of at most 366 dates",
        ),
    ],
)
def test_a_bad_range_is_a_usage_error_with_a_remedy(text: str, message: str) -> None:
    with pytest.raises(UsageError) as refused:
        parse_range(text)
    assert refused.value.message == message
