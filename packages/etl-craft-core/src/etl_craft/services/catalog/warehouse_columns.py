"""`generate-docs --with-warehouse`: the tables' column types and comments, read from the warehouse.

One catalog statement for every schema the catalog's tables live in (the dialect's describe_schemas
hook), never one per table, so the cost does not grow with the number of tables. A table name without
a schema is looked up in the Warehouse section's schema (else the dialect's default schema), as the
tasks that write it resolve it. A catalog table the warehouse does not hold gets no columns: its page
says so instead of failing the build (it may be written by a pipeline that has not run yet).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from etl_craft.services.context import OperationContext
from etl_craft.warehouse.dialect import load_dialect


def warehouse_columns(ctx: OperationContext, table_names: list[str]) -> dict[str, dict[str, Any]]:
    """{catalog table name: {"comment": ..., "columns": [{"name", "type", "comment"}...]}} for the
    catalog tables the warehouse holds."""
    dialect = load_dialect(ctx.config)
    default = dialect.profile.schema or dialect.default_schema or ""
    wanted: dict[tuple[str, str], str] = {}
    for name in table_names:
        parts = name.split(".")
        schema = parts[-2] if len(parts) >= 2 else default
        wanted[(schema.lower(), parts[-1].lower())] = name
    if not wanted:
        return {}
    with dialect.session(ctx.db) as session:
        rows = dialect.describe_schemas(session, sorted({schema for schema, _ in wanted}))
    found: dict[str, dict[str, Any]] = defaultdict(lambda: {"comment": None, "columns": []})
    for held_schema, table, column, type_text, column_comment, table_comment in rows:
        held = wanted.get((str(held_schema).lower(), str(table).lower()))
        if held is None:
            continue
        entry = found[held]
        entry["comment"] = table_comment
        entry["columns"].append({"name": str(column), "type": str(type_text), "comment": column_comment})
    return dict(found)
