"""The one JSON serializer of service results: every document names its schema and version."""

from __future__ import annotations

import dataclasses
import functools
import json
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Any

from etl_craft.core.clock import iso
from etl_craft.core.text import json_printable

_AS_IS = frozenset({str, int, float, bool})


@functools.cache
def _shown_fields(cls: type) -> tuple[str, ...]:
    """A view class's fields that documents show (every API listing serializes thousands of them)."""
    return tuple(f.name for f in dataclasses.fields(cls) if f.repr)


def plain(value: Any) -> Any:
    """JSON-ready form of a view: dataclasses as objects, enums as values, times as ISO 8601."""
    if value is None or type(value) in _AS_IS:  # most leaves: answered before the slower checks
        return value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {name: plain(getattr(value, name)) for name in _shown_fields(type(value))}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, datetime | date):
        return iso(value)
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [plain(v) for v in value]
    return value


def document(kind: str, view: Any, version: int = 1) -> dict[str, Any]:
    body = plain(view)
    if not isinstance(body, dict):
        body = {"value": body}
    return {"schema": f"etl-craft/{kind}/{version}", **body}


def dumps(doc: dict[str, Any]) -> str:
    """The document's JSON text; characters a terminal would act on are \\u escapes (same values)."""
    return json_printable(json.dumps(doc, indent=2, sort_keys=False, ensure_ascii=False))
