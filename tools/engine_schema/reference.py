"""The Engine DB schema reference page (docs/reference/engine-db-schema.md), rendered from TABLE_SPECS."""

from __future__ import annotations

from tools.engine_schema.ddl import sqlite_type

from etl_craft.engine.schema.tables import GUARD_APPEND_ONLY, GUARD_ATTEMPTS, TABLE_SPECS, TableSpec

_INTRO = """\
# Engine DB schema

Every table and column of the Engine DB, rendered from `etl_craft.engine.tables` (the same
description that produces each dialect's `schema.sql`). Teams write pipeline metadata in the `CFG_`
tables through project migrations; etl-craft writes everything else. See [the Engine DB guide](../engine-db.md).

On SQLite the tables and columns are the same, in the same order, with SQLite's types: whole numbers
and booleans are `INTEGER` (booleans hold 0 or 1), `NUMERIC` stays `NUMERIC`, and text, JSON, dates and
timestamps are `TEXT`. Timestamps are stored in UTC as `YYYY-MM-DD HH:MM:SS.ffffff`. Defaults that read
the acting identity call the connection functions `etl_craft_actor()` and `etl_craft_actor_kind()`
instead of `current_setting(...)`.
"""


def _default(spec: TableSpec, name: str) -> str:
    col = spec.column(name)
    return col.default.postgres.replace("|", "\\|") if col.default else ""


def _table(spec: TableSpec) -> str:
    lines = [
        f"## {spec.name}",
        "",
        "| Column | Type | SQLite | Null | Default | Allowed values |",
        "|---|---|---|---|---|---|",
    ]
    for col in spec.columns:
        lines.append(
            f"| {col.name} | {col.type} | {sqlite_type(col)} | {'yes' if col.nullable else 'no'} "
            f"| {_default(spec, col.name)} | {', '.join(col.allowed or ())} |"
        )
    lines.append("")
    if spec.primary_key:
        lines.append(f"Primary key: {', '.join(spec.primary_key)}.")
    for uq in spec.unique:
        where = f" where {uq.where}" if uq.where else ""
        lines.append(f"Unique: {', '.join(uq.columns)}{where}.")
    if spec.extra.get("unique_expression"):
        lines.append(f"Unique: {spec.extra['unique_expression'][1]}.")
    for chk in spec.checks:
        lines.append(f"Check `{chk.name}`: `{chk.postgres}`.")
    refs = [f"{c.name} → {c.references}" for c in spec.columns if c.references]
    if refs:
        lines.append(f"References: {'; '.join(refs)}.")
    guard = {
        GUARD_APPEND_ONLY: "Append-only: rows are never updated or deleted, not even by etl-craft.",
        GUARD_ATTEMPTS: "An attempt's row is final once the attempt has ended.",
    }.get(spec.guard)
    if guard:
        lines.append(guard)
    if spec.tracks_metadata:
        lines.append("Rows are stamped with the acting identity and every change is recorded in AUD_METADATA_CHANGES.")
    lines.append(f"Written only by etl-craft: {spec.remedy}.")
    return "\n".join(lines) + "\n"


def render_reference() -> str:
    return _INTRO + "".join("\n" + _table(spec) for spec in TABLE_SPECS)
