"""The warehouse side of a clone: the mirror tables, their upserts and the clone's state table.

Everything is plain SQL any warehouse dialect runs (CREATE TABLE, ALTER TABLE ADD COLUMN, DELETE,
INSERT), named through the dialect's quoting and types, so a new warehouse gets cloning without a
core change. The watermark of each table lives in ETL_CRAFT_CLONE_STATE beside the mirror and is
written in the same warehouse transaction as the rows it covers: a clone killed between batches
resumes from the last committed batch, with no row lost and none copied twice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from etl_craft.engine.schema.tables import TableSpec
from etl_craft.warehouse.dialect import WarehouseDialect
from etl_craft.warehouse.session import Session

STATE_TABLE = "ETL_CRAFT_CLONE_STATE"
# The state row holding the last clone as a whole (when it ended, its error); table rows hold watermarks.
CLONE_ROW = "*"
_INTEGER_TYPES = ("BIGINT", "BIGSERIAL", "INT", "INTEGER")


@dataclass(frozen=True)
class Watermark:
    """The last copied row of a table: its UPDATED_AT and primary key (the tie-breaker)."""

    at: datetime
    key: Any


def mirror_type(dialect: WarehouseDialect, engine_type: str) -> str:
    """The portable warehouse type of an Engine DB column (interface.md section 13)."""
    base = engine_type.split("(", maxsplit=1)[0]
    if base in _INTEGER_TYPES:
        return "BIGINT"
    if base == "NUMERIC":
        return "DECIMAL(38,10)"
    if base in ("TIMESTAMPTZ", "TIMESTAMP"):
        return dialect.timestamp_type()
    return dialect.text_type()


def is_integer(engine_type: str) -> bool:
    return engine_type.split("(", maxsplit=1)[0] in _INTEGER_TYPES


def mirror_value(value: Any, engine_type: str) -> Any:
    """A value as the mirror stores it: numbers and timestamps as they are, everything else as text."""
    base = engine_type.split("(", maxsplit=1)[0]
    if value is None or (base in _INTEGER_TYPES and isinstance(value, int)):
        return value
    if base == "NUMERIC" and isinstance(value, (int, float, Decimal)):
        return value
    if base in ("TIMESTAMPTZ", "TIMESTAMP") and isinstance(value, datetime):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


class Mirror:
    """The mirror tables of one warehouse schema, written through one session."""

    def __init__(self, dialect: WarehouseDialect, session: Session, schema: str | None) -> None:
        self.dialect = dialect
        self.session = session
        self.schema = schema

    def parts(self, name: str) -> tuple[str, ...]:
        return (name,) if self.schema is None else (self.schema, name)

    def table(self, name: str) -> str:
        return self.dialect.table_sql(self.parts(name))

    def _marks(self, count: int) -> str:
        return ", ".join([self.dialect.placeholder] * count)

    # -- tables ---------------------------------------------------------------------------------
    def prepare(self, spec: TableSpec) -> str | None:
        """Create the mirror of `spec` or add the Engine DB's new columns; never drops anything.
        Returns "created", "added cols ..." or None when it was already current."""
        existing = {c.key for c in self.dialect.columns(self.session, self.parts(spec.name))}
        if not existing:
            columns = ", ".join(
                f"{self.dialect.ident(c.name)} {mirror_type(self.dialect, c.type)}" for c in spec.columns
            )
            with self.session.transaction():
                self.session.execute(f"CREATE TABLE {self.table(spec.name)} ({columns})")
            return "created"
        added = [c for c in spec.columns if c.name.lower() not in existing]
        if not added:
            return None
        with self.session.transaction():
            for c in added:
                self.session.execute(
                    f"ALTER TABLE {self.table(spec.name)} ADD COLUMN {self.dialect.ident(c.name)} "
                    f"{mirror_type(self.dialect, c.type)}"
                )
        return "added cols " + ",".join(c.name for c in added)

    def prepare_state(self) -> None:
        if self.dialect.columns(self.session, self.parts(STATE_TABLE)):
            return
        ts, text = self.dialect.timestamp_type(), self.dialect.text_type()
        with self.session.transaction():
            self.session.execute(
                f"CREATE TABLE {self.table(STATE_TABLE)} (TABLE_NAME {text} NOT NULL, WATERMARK_AT {ts}, "
                f"WATERMARK_KEY {text}, CLONED_AT {ts}, ROWS_COPIED BIGINT, ERROR {text})"
            )

    # -- rows (inside the caller's transaction) -------------------------------------------------
    def delete_keys(self, spec: TableSpec, keys: Sequence[Any]) -> int:
        if not keys:
            return 0
        key = self.dialect.ident(spec.primary_key[0])
        return self.session.dml(f"DELETE FROM {self.table(spec.name)} WHERE {key} IN ({self._marks(len(keys))})", keys)

    def insert(self, spec: TableSpec, rows: Sequence[Sequence[Any]]) -> None:
        if not rows:
            return
        names = ", ".join(self.dialect.ident(c.name) for c in spec.columns)
        one = f"({self._marks(len(spec.columns))})"
        params = [mirror_value(v, c.type) for row in rows for v, c in zip(row, spec.columns, strict=True)]
        self.session.execute(
            f"INSERT INTO {self.table(spec.name)} ({names}) VALUES {', '.join([one] * len(rows))}", params
        )

    def replace_all(self, spec: TableSpec, rows: Sequence[Sequence[Any]]) -> None:
        self.session.execute(f"DELETE FROM {self.table(spec.name)}")
        for start in range(0, len(rows), 500):
            self.insert(spec, rows[start : start + 500])

    def chunk_counts(self, spec: TableSpec, chunk: int) -> dict[int, int]:
        key = self.dialect.ident(spec.primary_key[0])
        found = self.session.rows(
            f"SELECT FLOOR({key} / {chunk}.0), COUNT(*) FROM {self.table(spec.name)} GROUP BY FLOOR({key} / {chunk}.0)"
        )
        return {int(c): int(n) for c, n in found}

    def keys_between(self, spec: TableSpec, low: Any | None, high: Any | None) -> set[Any]:
        key = self.dialect.ident(spec.primary_key[0])
        where, params = [], []
        if low is not None:
            where.append(f"{key} >= {self.dialect.placeholder}")
            params.append(low)
        if high is not None:
            where.append(f"{key} < {self.dialect.placeholder}")
            params.append(high)
        condition = f" WHERE {' AND '.join(where)}" if where else ""
        return {r[0] for r in self.session.rows(f"SELECT {key} FROM {self.table(spec.name)}{condition}", params)}

    # -- state ----------------------------------------------------------------------------------
    def watermark(self, name: str) -> Watermark | None:
        state, p = self.table(STATE_TABLE), self.dialect.placeholder
        found = self.session.rows(f"SELECT WATERMARK_AT, WATERMARK_KEY FROM {state} WHERE TABLE_NAME = {p}", [name])
        if not found or found[0][0] is None:
            return None
        return Watermark(found[0][0], json.loads(found[0][1]))

    def write_state(self, name: str, *, mark: Watermark | None, at: datetime, rows: int, error: str | None) -> None:
        """Record a table's watermark (or the clone's end, for CLONE_ROW) in the caller's transaction."""
        p = self.dialect.placeholder
        self.session.execute(f"DELETE FROM {self.table(STATE_TABLE)} WHERE TABLE_NAME = {p}", [name])
        self.session.execute(
            f"INSERT INTO {self.table(STATE_TABLE)} (TABLE_NAME, WATERMARK_AT, WATERMARK_KEY, CLONED_AT, ROWS_COPIED,"
            f" ERROR) VALUES ({self._marks(6)})",
            [name, None if mark is None else mark.at, None if mark is None else json.dumps(mark.key), at, rows, error],
        )

    def state_rows(self) -> list[tuple[Any, ...]]:
        """(TABLE_NAME, WATERMARK_AT, CLONED_AT, ROWS_COPIED, ERROR) of every state row; [] before any clone."""
        if not self.dialect.columns(self.session, self.parts(STATE_TABLE)):
            return []
        return self.session.rows(
            f"SELECT TABLE_NAME, WATERMARK_AT, CLONED_AT, ROWS_COPIED, ERROR FROM {self.table(STATE_TABLE)}"
        )
