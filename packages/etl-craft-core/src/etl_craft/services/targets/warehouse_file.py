"""A warehouse file (a DuckDB file) that vanished is refused before a run touches anything.

A file warehouse creates a missing file when it connects (its dialect's `storage_file`). For a
project whose tasks already wrote to the warehouse that would be silent damage: the stored offsets
say the landed records are there, merges would start from empty targets, and the tasks would fail
one by one with "table does not exist". So a run, a task run and a backfill check the file first and
stop naming it and the remedy, with nothing recorded. A new project, whose Engine DB holds no
successful SQL or BUSINESS_RULES task run yet, may still let the warehouse create its file.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.core.enums import Handler
from etl_craft.core.errors import ConnectionTestError
from etl_craft.engine.schema import tables as t
from etl_craft.execution.graph import Graph
from etl_craft.services.context import OperationContext
from etl_craft.warehouse.dialect import load_dialect

# Tasks that can only succeed by having connected to the warehouse.
_WAREHOUSE_WRITERS = (Handler.SQL.value, Handler.BUSINESS_RULES.value)
_USES_WAREHOUSE = frozenset({Handler.SQL, Handler.BUSINESS_RULES, Handler.PYTHON})


@dataclass(frozen=True)
class WarehouseUse:
    """The Engine DB's record of tasks that used the warehouse: how many, and the latest."""

    task_runs: int
    pipeline_code: str
    task_code: str
    pipeline_run_id: int
    ended_at: datetime | None


def recorded_use(conn: sa.Connection) -> WarehouseUse | None:
    runs, tasks, pipelines = t.aud_task_run_log, t.cfg_tasks, t.cfg_pipelines
    used = (
        sa.select(runs.c.task_run_id)
        .join(tasks, tasks.c.task_id == runs.c.task_id)
        .where(runs.c.status == "SUCCESS", tasks.c.handler.in_(_WAREHOUSE_WRITERS))
    )
    count = conn.execute(sa.select(sa.func.count()).select_from(used.subquery())).scalar_one()
    if not count:
        return None
    latest = conn.execute(
        sa.select(pipelines.c.pipeline_code, tasks.c.task_code, runs.c.pipeline_run_id, runs.c.end_date)
        .join(tasks, tasks.c.task_id == runs.c.task_id)
        .join(pipelines, pipelines.c.pipeline_id == tasks.c.pipeline_id)
        .where(runs.c.status == "SUCCESS", tasks.c.handler.in_(_WAREHOUSE_WRITERS))
        .order_by(runs.c.task_run_id.desc())
        .limit(1)
    ).one()
    return WarehouseUse(int(count), latest.pipeline_code, latest.task_code, latest.pipeline_run_id, latest.end_date)


def require_warehouse_file(ctx: OperationContext, graph: Graph) -> None:
    """Refuse (exit 11) to run a pipeline that uses a file warehouse whose file vanished after use."""
    if ctx.config.warehouse is None:
        return
    dialect = load_dialect(ctx.config)
    path = dialect.storage_file()
    if path is None or path.exists() or not any(task.handler in _USES_WAREHOUSE for task in graph.tasks.values()):
        return
    with ctx.db.read() as conn:
        use = recorded_use(conn)
    if use is None:
        return  # a new project: the warehouse creates its file on first use
    when = f" at {use.ended_at:%Y-%m-%d %H:%M:%S}Z" if use.ended_at else ""
    raise ConnectionTestError(
        f"the {dialect.display_name} warehouse {path} (Warehouse.jdbc_url in {ctx.config.path})",
        found=(
            f"no such file, although {use.task_runs} successful task run(s) of this project wrote to it, "
            f"the latest {use.pipeline_code}.{use.task_code} in run {use.pipeline_run_id}{when}"
        ),
        expected="the warehouse file the Engine DB's history describes; nothing was run or recorded",
        remedy=(
            f"put {path.name} back (restore it from a backup, or move it back to {path.parent}), or point "
            "Warehouse.jdbc_url at where it is now. etl-craft won't start on a new empty file: the stored "
            "offsets and merge history describe the old one. To start over, use a new project folder with a "
            "new Engine DB (for the demo: etl-craft demo writes a fresh one)"
        ),
    )
