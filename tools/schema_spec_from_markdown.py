"""Turn the published Engine DB schema reference into tests/core/engine/engine_db_schema.json.

The JSON is the machine-readable copy the catalog tests compare each dialect's real catalog with.
Run it when the reference changes:
    python tools/schema_spec_from_markdown.py SPEC.md > tests/core/engine/engine_db_schema.json
"""

from __future__ import annotations

import json
import re
import sys


def parse(text: str) -> list[dict[str, object]]:
    lines = text.splitlines()
    tables: list[dict[str, object]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if re.fullmatch(r"(CFG|AUD|SCHEMA)_[A-Z_]+|SCHEMA_MIGRATIONS", line.strip()) and i + 1 < len(lines):
            name = line.strip()
            columns = []
            unique: list[dict[str, object]] = []
            j = i + 1
            while j < len(lines) and not lines[j].startswith("Column\t"):
                j += 1
            j += 1
            while j < len(lines) and "\t" in lines[j]:
                cells = lines[j].split("\t") + [""] * 5
                allowed = [v.strip() for v in cells[4].split(",") if v.strip()]
                columns.append(
                    {
                        "name": cells[0],
                        "type": cells[1],
                        "nullable": cells[2] == "yes",
                        "default": cells[3].replace("\\|", "|") or None,
                        "allowed": allowed or None,
                    }
                )
                j += 1
            while j < len(lines) and not re.fullmatch(r"(CFG|AUD)_[A-Z_]+|SCHEMA_MIGRATIONS", lines[j].strip()):
                if lines[j].startswith("Unique: "):
                    for rule in lines[j][len("Unique: ") :].rstrip(".").split("; "):
                        cols, _, where = rule.partition(" where ")
                        unique.append({"columns": [c.strip() for c in cols.split(",")], "where": where or None})
                j += 1
            tables.append({"name": name, "columns": columns, "unique": unique})
            i = j
        else:
            i += 1
    return tables


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        print(json.dumps(parse(fh.read()), indent=1))
