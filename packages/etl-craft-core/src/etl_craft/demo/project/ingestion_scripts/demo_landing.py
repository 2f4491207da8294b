"""What the demo's ingestion scripts share: the project's folders, source times, and one idempotent write.

A helper beside the scripts: they import it by its own name (`from demo_landing import ...`), since
the script's folder is on sys.path while it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from etl_craft.scripting import ScriptTask

STAMPS = ("PIPELINE_ID", "PIPELINE_RUN_ID", "TASK_RUN_ID", "LOADED_AT")


def project_folder(task: ScriptTask, name: str) -> Path:
    """A folder of the project (sources/alpha, seeds), wherever the project was written."""
    folder = task.config.project_dir / name
    if not folder.is_dir():
        raise FileNotFoundError(
            f"{folder} is not a folder; INPUT_PARAMS names it relative to {task.config.project_dir}"
        )
    return folder


def source_time(text: str | None) -> datetime | None:
    """An ISO 8601 time from a source file as an aware UTC datetime; empty text is None."""
    if not text:
        return None
    value = datetime.fromisoformat(text)
    if value.tzinfo is None:
        raise ValueError(f"source time {text!r} has no time zone")
    return value.astimezone(UTC)


def replace_task_run_rows(
    task: ScriptTask, table: str, columns: Sequence[str], rows: Sequence[Sequence[object]]
) -> int:
    """Write this task run's rows into a landing table, in one warehouse transaction.

    The rows an earlier attempt of the same task run wrote are deleted first (TASK_RUN_ID is shared
    by retries), so a retry after a failure, or after a crash that came between the warehouse
    commit and the offset being stored, never lands a record twice.
    """
    target = task.table(table)
    names = [*columns, *STAMPS]
    insert = f"INSERT INTO {target} ({', '.join(names)}) VALUES ({', '.join('?' for _ in names)})"
    loaded_at = datetime.now(UTC)
    stamped = [(*row, task.pipeline_id, task.pipeline_run_id, task.task_run_id, loaded_at) for row in rows]
    with task.warehouse() as engine, engine.begin() as conn:
        conn.exec_driver_sql(f"DELETE FROM {target} WHERE TASK_RUN_ID = ?", (task.task_run_id,))
        if stamped:
            conn.exec_driver_sql(insert, stamped)
    return len(stamped)
