"""`purge --archive-to URL`: the rows a purge removes, written to a `file://` folder or an `s3://`
prefix before their transaction commits, so a batch whose archive write fails removes nothing.

Layout: `<URL>/purge-<UTC start>/manifest.json` (written first: an address that refuses writes
stops the purge before any row goes), then `<TABLE>/<batch>.jsonl.gz`, one JSON object a line with
the table's columns in lower case; timestamps are ISO 8601 text.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from etl_craft.config.logs import store_problem
from etl_craft.core.errors import UsageError
from etl_craft.execution.processes.log_store import LogStore


def _plain(value: object) -> object:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal | bytes):
        return str(value)
    raise TypeError(f"{type(value).__name__} is not archived")


class PurgeArchive:
    def __init__(self, url: str, started_at: datetime) -> None:
        if (problem := store_problem(url)) is not None:
            raise UsageError(
                "etl-craft purge --archive-to",
                found=f"{url!r}: {problem}",
                expected="file:///absolute/folder or s3://bucket/prefix",
                remedy="give an address the purged rows can be written to; nothing was removed",
            )
        self.store = LogStore(url)
        self.folder = f"purge-{started_at:%Y%m%dT%H%M%SZ}"
        self.location = f"{url.rstrip('/')}/{self.folder}"
        self.batches: Counter[str] = Counter()

    def open(self, manifest: dict[str, Any]) -> None:
        self.store.write(f"{self.folder}/manifest.json", json.dumps(manifest, indent=2).encode())

    def write(self, table: str, rows: Sequence[sa.RowMapping]) -> None:
        if not rows:
            return
        self.batches[table] += 1
        lines = b"".join(json.dumps(dict(row), default=_plain).encode() + b"\n" for row in rows)
        self.store.write(f"{self.folder}/{table}/{self.batches[table]:05d}.jsonl.gz", gzip.compress(lines))
