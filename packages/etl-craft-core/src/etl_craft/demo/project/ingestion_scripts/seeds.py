"""Reference data: each seed CSV replaces the rows of its table in the ref schema.

INPUT_PARAMS maps file names in seeds/ to tables, e.g. {"agents.csv": "ref.agents"}. All tables
are replaced in one warehouse transaction, so the SCD1 merges that follow never see half a load.
"""

from __future__ import annotations

import csv

from demo_landing import project_folder

from etl_craft.scripting import ScriptResult, ScriptTask


def run(task: ScriptTask) -> ScriptResult:
    folder = project_folder(task, task.input_params.get("folder", "seeds"))
    loaded: dict[str, int] = {}
    with task.warehouse() as engine, engine.begin() as conn:
        for file_name, table in task.input_params["tables"].items():
            with (folder / file_name).open(encoding="utf-8", newline="") as fh:
                reader = csv.DictReader(fh)
                columns = list(reader.fieldnames or [])
                rows = [tuple(record[c] or None for c in columns) for record in reader]
            target = task.table(table)
            conn.exec_driver_sql(f"DELETE FROM {target}")
            if rows:
                placeholders = ", ".join("?" for _ in columns)
                conn.exec_driver_sql(f"INSERT INTO {target} ({', '.join(columns)}) VALUES ({placeholders})", rows)
            loaded[table] = len(rows)
            task.logger.info("%s: %d row(s) from %s", table, len(rows), file_name)
    variables = {f"ROWS_{table.replace('.', '_').upper()}": count for table, count in loaded.items()}
    return ScriptResult(row_count=sum(loaded.values()), variables=variables)
