"""Text cells for the inspection commands: an absent value is `-`, times are UTC to the second, and a
cell never holds a tab or a line break (the output is tab-separated): control characters are escaped
(a reason's line break shows as \\n) and runs of spaces are one space."""

from __future__ import annotations

import json
from datetime import date, datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from etl_craft.cli.output import table
from etl_craft.core.clock import as_utc
from etl_craft.core.text import printable

if TYPE_CHECKING:
    from etl_craft.services.views import RunView

ABSENT = "-"


def when(value: datetime | date | None) -> str:
    if value is None:
        return ABSENT
    if isinstance(value, datetime):
        return as_utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")
    return value.isoformat()


def number(value: float | Decimal | int | None) -> str:
    """2 for 2.0, 1.5 for 1.5: whole numbers without a fraction."""
    if value is None:
        return ABSENT
    return f"{float(value):g}" if not isinstance(value, int) else str(value)


def seconds(start: datetime | None, end: datetime | None) -> str:
    """Elapsed seconds to a tenth; `-` until both ends are known."""
    if start is None or end is None:
        return ABSENT
    return f"{(end - start).total_seconds():.1f}"


def compact_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def cell(value: Any) -> str:
    if value is None or value == "":
        return ABSENT
    if isinstance(value, datetime | date):
        return when(value)
    if isinstance(value, float | Decimal):
        return number(value)
    if isinstance(value, dict | list):
        return compact_json(value)
    return " ".join(printable(str(value)).split())


def first_line(text: str | None) -> str:
    """The first non-blank line of a message (errors can carry a traceback after it)."""
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return cell(lines[0]) if lines else ABSENT


def rows(header: list[str], data: list[list[Any]]) -> list[str]:
    return table(header, [[cell(v) for v in row] for row in data])


def run_line(run: RunView) -> str:
    """`CODE: pipeline_run_id=<id> key=<k> kind=<kind> run_date=<d> status=<s>`"""
    return (
        f"{run.pipeline_code}: pipeline_run_id={run.pipeline_run_id} key={run.run_key} kind={run.trigger_kind} "
        f"run_date={when(run.run_date)} status={run.status}"
    )
