"""The set-based update of warehouses without UPDATE ... FROM: one MERGE ... WHEN MATCHED THEN UPDATE.

Trino and Databricks both update a table from another only through MERGE; the statement is the same
ANSI form on both, so it lives here once.
"""

from __future__ import annotations

from collections.abc import Sequence


def merge_update_sql(
    target: str, stage: str, keys: Sequence[str], assignments: Sequence[tuple[str, str]], condition: str | None
) -> str:
    """MERGE INTO `target` (alias t) USING `stage` (alias s) ON `keys`, updating matched rows that meet `condition`.

    The stage is deduplicated on the keys before a merge, so each target row matches at most one
    stage row (both warehouses refuse a MERGE where one target row matches several).
    """
    sets = ",\n    ".join(f"{column} = {value}" for column, value in assignments)
    on = " AND ".join(f"t.{k} = s.{k}" for k in keys)
    when = f" AND ({condition})" if condition else ""
    return f"MERGE INTO {target} AS t\nUSING {stage} AS s\nON {on}\nWHEN MATCHED{when} THEN UPDATE SET\n    {sets}"
