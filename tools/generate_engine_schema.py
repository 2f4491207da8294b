"""Write each dialect's packaged schema.sql and the schema reference page from etl_craft.engine.tables.

Run after changing the table description, from the repository root: uv run python -m tools.generate_engine_schema
The first ENGINE migration (0001_initial.sql) is the schema as first released and is never
rewritten once released; later changes ship as new numbered migrations.
"""

from __future__ import annotations

from pathlib import Path

from tools.engine_schema.ddl import render_schema
from tools.engine_schema.reference import render_reference

ROOT = Path(__file__).resolve().parent.parent
SQL_ROOT = ROOT / "packages/etl-craft-core/src/etl_craft/engine/schema/sql"
REFERENCE = ROOT / "docs/reference/engine-db-schema.md"

if __name__ == "__main__":
    for dialect in ("postgresql", "sqlite"):
        target = SQL_ROOT / dialect / "schema.sql"
        target.write_text(render_schema(dialect), encoding="utf-8")
        print(f"wrote {target}")
    REFERENCE.write_text(render_reference(), encoding="utf-8")
    print(f"wrote {REFERENCE}")
