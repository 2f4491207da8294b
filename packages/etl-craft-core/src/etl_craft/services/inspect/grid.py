"""The runs x tasks grid of a pipeline (the web UI's pipeline page) and the pipelines overview.

Both are read with a fixed number of set queries whatever the number of runs, tasks or pipelines:
the grid reads the newest runs, then every task row of those runs at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from etl_craft.core import cron
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import RunStatus, TriggerKind
from etl_craft.core.errors import UsageError
from etl_craft.engine import reads
from etl_craft.execution.graph import load_graph
from etl_craft.services.context import OperationContext
from etl_craft.services.inspect.pipelines import PauseView, ordered
from etl_craft.services.views import PipelineView, RunView

MAX_GRID_RUNS = 100
RUN_KINDS = tuple(kind.value for kind in TriggerKind)
RUN_STATUSES = tuple(status.value for status in RunStatus)


@dataclass(frozen=True)
class GridCell:
    task_code: str
    status: str  # NOT RUN when the task has no row under the run
    task_run_id: int | None
    start_date: datetime | None
    end_date: datetime | None
    attempt_count: int
    error: str | None  # the first line of the error


@dataclass(frozen=True)
class GridRun:
    run: RunView
    cells: tuple[GridCell, ...]  # one per task, in the order of RunGridView.task_codes


@dataclass(frozen=True)
class RunGridView:
    pipeline: PipelineView
    task_codes: tuple[str, ...]  # wave order
    limit: int
    trigger_kind: str | None
    status: str | None
    runs: tuple[GridRun, ...]  # newest first


def _check_choice(name: str, value: str | None, allowed: tuple[str, ...]) -> None:
    if value is not None and value not in allowed:
        raise UsageError(name, found=repr(value), expected=f"one of {', '.join(allowed)}", remedy="pick one of those")


def run_grid(
    ctx: OperationContext,
    pipeline_code: str,
    *,
    limit: int = 25,
    trigger_kind: str | None = None,
    status: str | None = None,
) -> RunGridView:
    """The newest `limit` runs (of one kind and status when given), each with every task's state."""
    if not 1 <= limit <= MAX_GRID_RUNS:
        raise UsageError(
            "runs", found=str(limit), expected=f"1 to {MAX_GRID_RUNS}", remedy=f"ask for at most {MAX_GRID_RUNS} runs"
        )
    _check_choice("kind", trigger_kind, RUN_KINDS)
    _check_choice("status", status, RUN_STATUSES)
    with ctx.db.snapshot() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        graph = load_graph(conn, pipeline)
        runs = reads.recent_runs(conn, pipeline.pipeline_id, limit, trigger_kind=trigger_kind, status=status)
        task_rows = reads.task_runs_of_runs(conn, [r.pipeline_run_id for r in runs])
    nodes = ordered(graph)
    grid = []
    for run in runs:
        rows = task_rows[run.pipeline_run_id]
        cells = []
        for node in nodes:
            row = rows.get(node.task_id)
            cells.append(
                GridCell(
                    node.code,
                    row.status if row else "NOT RUN",
                    row.task_run_id if row else None,
                    row.start_date if row else None,
                    row.end_date if row else None,
                    row.attempt_count if row else 0,
                    row.error_message.splitlines()[0] if row and row.error_message else None,
                )
            )
        grid.append(GridRun(RunView.of(run, pipeline.pipeline_code), tuple(cells)))
    return RunGridView(
        PipelineView.of(pipeline), tuple(n.code for n in nodes), limit, trigger_kind, status, tuple(grid)
    )


@dataclass(frozen=True)
class PipelineOverview:
    pipeline: PipelineView
    schedule_timezone: str | None
    next_tick: datetime | None  # None: no schedule
    pause: PauseView | None
    last_run: RunView | None


@dataclass(frozen=True)
class PipelinesOverview:
    text: str | None
    status: str | None
    pipelines: tuple[PipelineOverview, ...]


def pipelines_overview(ctx: OperationContext, text: str | None = None, status: str | None = None) -> PipelinesOverview:
    """Every active pipeline with its next tick, open pause and newest run; filtered by a text in its
    code or name and by its newest run's status (NONE: never ran)."""
    _check_choice("status", status, (*RUN_STATUSES, "NONE"))
    now = utc_now()
    with ctx.db.snapshot() as conn:
        rows = reads.pipelines(conn)
        pauses = reads.open_pauses(conn)
        latest = reads.latest_runs(conn, [r.pipeline_id for r in rows])
    needle = (text or "").strip().lower()
    found = []
    for row in rows:
        if needle and needle not in row.pipeline_code.lower() and needle not in (row.pipeline_name or "").lower():
            continue
        run = latest.get(row.pipeline_id)
        if status is not None and (run.status if run else "NONE") != status:
            continue
        zone = row.schedule_timezone or ctx.config.orchestration.timezone
        tick = cron.next_after(row.run_schedule, now, zone) if row.run_schedule else None
        found.append(
            PipelineOverview(
                PipelineView.of(row),
                row.schedule_timezone,
                tick,
                PauseView.of(pauses.get(row.pipeline_id)),
                RunView.of(run, row.pipeline_code) if run else None,
            )
        )
    return PipelinesOverview(text, status, tuple(found))
