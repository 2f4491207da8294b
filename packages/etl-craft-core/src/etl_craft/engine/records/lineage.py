"""AUD_COLUMN_LINEAGE: the column lineage traced from each SQL task's SELECT, cached by the SELECT's key
so a task is traced again only when its SQL (or the warehouse) changes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from etl_craft.engine.schema.tables import aud_column_lineage as lineage


@dataclass(frozen=True)
class LineageRow:
    """One target column of a task and where it comes from (no source: a constant or untraced)."""

    target_column: str
    source_object: str | None
    source_column: str | None
    transformation: str


def cached_lineage(conn: sa.Connection, task_ids: Sequence[int]) -> dict[int, tuple[str, list[LineageRow]]]:
    """Each task's cache key and rows, for the tasks that have any."""
    found: dict[int, tuple[str, list[LineageRow]]] = {}
    if not task_ids:
        return found
    c = lineage.c
    for row in conn.execute(sa.select(lineage).where(c.task_id.in_(task_ids)).order_by(c.task_id, c.column_lineage_id)):
        entry = found.setdefault(row.task_id, (row.source_sql_hash, []))
        entry[1].append(LineageRow(row.target_column, row.source_object, row.source_column, row.transformation or ""))
    return found


def store_lineage(conn: sa.Connection, task_id: int, key: str, target: str, rows: Iterable[LineageRow]) -> None:
    """Replace a task's cached lineage with `rows`, traced from the SELECT whose key is `key`."""
    conn.execute(lineage.delete().where(lineage.c.task_id == task_id))
    values = [
        {
            "task_id": task_id,
            "source_sql_hash": key,
            "target_object": target,
            "target_column": r.target_column,
            "source_object": r.source_object,
            "source_column": r.source_column,
            "transformation": r.transformation,
        }
        for r in rows
    ]
    if values:
        conn.execute(lineage.insert(), values)
