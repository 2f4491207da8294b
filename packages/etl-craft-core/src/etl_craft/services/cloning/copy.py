"""The Engine DB side of a clone: which tables, the rows changed since a watermark, and deletions.

AUD_ tables are copied incrementally: rows whose UPDATED_AT (written by every etl-craft INSERT and
UPDATE, ENGINE migration 0009) is past the table's watermark, ordered by (UPDATED_AT, primary key)
so equal timestamps never skip or repeat a row. Rows deleted from the Engine DB (purge, a reset
task run, the lineage cache's delete and reinsert) are found by comparing per-chunk row counts of
the primary key on both sides, one grouped statement each; only chunks that differ have their keys
read. CFG_ tables are small and rewritten whole each clone (their history is AUD_METADATA_CHANGES), as is
AUD_GATE_WAITS (only the waits under way).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa

from etl_craft.core.sensitive import SensitiveNames
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t
from etl_craft.engine.schema.tables import TableSpec
from etl_craft.services.cloning.mirror import Mirror, Watermark, is_integer

BATCH_ROWS = 500  # rows per warehouse transaction (one DELETE and one multi-row INSERT)
KEY_CHUNK = 4096  # primary-key range whose row counts are compared to find deletions
# Rows younger than this are left to the next clone: an Engine DB transaction stamps UPDATED_AT when
# it writes and is visible only once it commits, and etl-craft's write transactions last far less.
SETTLE = timedelta(seconds=2)
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Credentials and sessions never leave the Engine DB; SCHEMA_MIGRATIONS is neither CFG_ nor AUD_.
NEVER_CLONED = frozenset({"CFG_API_TOKENS", "CFG_USERS", "AUD_UI_SESSIONS"})


def scope_tables(scope: str) -> list[TableSpec]:
    """The tables a scope copies, parents before children, as the Engine DB lists them."""
    prefixes = {"cfg": ("CFG_",), "aud": ("AUD_",), "all": ("CFG_", "AUD_"), "none": ()}[scope]
    return [s for s in t.TABLE_SPECS if s.name.startswith(prefixes) and s.name not in NEVER_CLONED] if prefixes else []


def incremental(spec: TableSpec) -> bool:
    """AUD_ tables with a one-column key are copied by watermark; CFG_ tables and AUD_GATE_WAITS (the
    waits under way, keyed by an expression) are small and rewritten whole."""
    return spec.name.startswith("AUD_") and len(spec.primary_key) == 1


def _table(spec: TableSpec) -> sa.Table:
    return t.T[spec.name.lower()]


def masked(spec: TableSpec, rows: Sequence[Sequence[Any]], names: SensitiveNames) -> list[Sequence[Any]]:
    """Sensitive task parameters' values replaced by *** (S7.C: never in the clones)."""
    if spec.name != "CFG_TASK_PARAMETERS":
        return list(rows)
    order = [c.name for c in spec.columns]
    name_at, value_at = order.index("PARAMETER_NAME"), order.index("PARAMETER_VALUE")
    out: list[Sequence[Any]] = []
    for row in rows:
        sensitive = names.matches(row[name_at]) and row[value_at] is not None
        out.append([*row[:value_at], "***", *row[value_at + 1 :]] if sensitive else row)
    return out


def all_rows(db: EngineDb, spec: TableSpec, names: SensitiveNames) -> list[Sequence[Any]]:
    table = _table(spec)
    with db.read() as conn:
        order = [table.c[k.lower()] for k in spec.primary_key] or list(table.c)
        rows = conn.execute(sa.select(*table.c).order_by(*order)).all()
    return masked(spec, [tuple(r) for r in rows], names)


def changed_batches(db: EngineDb, spec: TableSpec, since: Watermark | None, horizon: datetime) -> Iterator[list[Any]]:
    """Batches of rows written after `since` and before `horizon`, in watermark order."""
    table = _table(spec)
    key = table.c[spec.primary_key[0].lower()]
    stamp = sa.func.coalesce(table.c.updated_at, sa.literal(EPOCH, type_=table.c.updated_at.type))
    mark = since
    while True:
        query = sa.select(stamp.label("watermark_at"), *table.c).where(stamp < horizon)
        if mark is not None:
            query = query.where(sa.or_(stamp > mark.at, sa.and_(stamp == mark.at, key > mark.key)))
        with db.read() as conn:
            rows = conn.execute(query.order_by(stamp, key).limit(BATCH_ROWS)).all()
        if not rows:
            return
        yield list(rows)
        last = rows[-1]
        mark = Watermark(last[0], last[1 + list(table.c.keys()).index(key.name)])


def source_chunk_counts(db: EngineDb, spec: TableSpec) -> dict[int, int]:
    key = _table(spec).c[spec.primary_key[0].lower()]
    chunk = (key // KEY_CHUNK).label("chunk")
    with db.read() as conn:
        return {int(c): int(n) for c, n in conn.execute(sa.select(chunk, sa.func.count()).group_by(chunk))}


def source_keys(db: EngineDb, spec: TableSpec, low: Any | None, high: Any | None) -> set[Any]:
    key = _table(spec).c[spec.primary_key[0].lower()]
    query = sa.select(key)
    if low is not None:
        query = query.where(key >= low)
    if high is not None:
        query = query.where(key < high)
    with db.read() as conn:
        return set(conn.execute(query).scalars())


def mirror_deletions(db: EngineDb, spec: TableSpec, mirror: Mirror) -> int:
    """Delete the mirror rows whose Engine DB rows are gone; returns how many."""
    if not is_integer(spec.column(spec.primary_key[0]).type):
        ranges: list[tuple[Any, Any]] = [(None, None)]  # text keys (AUD_TARGET_HASH_VERSION): one small set
    else:
        theirs, ours = source_chunk_counts(db, spec), mirror.chunk_counts(spec, KEY_CHUNK)
        ranges = [(c * KEY_CHUNK, (c + 1) * KEY_CHUNK) for c in sorted(ours) if ours[c] != theirs.get(c, 0)]
    removed = 0
    for low, high in ranges:
        gone = sorted(mirror.keys_between(spec, low, high) - source_keys(db, spec, low, high))
        for start in range(0, len(gone), BATCH_ROWS):
            with mirror.session.transaction():
                removed += mirror.delete_keys(spec, gone[start : start + BATCH_ROWS])
    return removed
