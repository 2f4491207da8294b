"""The `run` request and what its modes share: usage rules, run dates, results and summary lines."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import date, datetime
from zoneinfo import ZoneInfo

from etl_craft.core.enums import ENDED_WELL
from etl_craft.core.errors import ExitCode, UsageError
from etl_craft.core.text import operator_text
from etl_craft.engine import reads
from etl_craft.engine.reads import PipelineRow
from etl_craft.execution.graph import Graph
from etl_craft.execution.pools.choice import Pools
from etl_craft.execution.pools.local import local_pool
from etl_craft.execution.processes.identity import OwnerId
from etl_craft.execution.run_loop.scope import Ending, Scope, Supervised
from etl_craft.execution.run_loop.signals import StopSignals
from etl_craft.execution.run_loop.supervisor import RunSupervisor
from etl_craft.services.context import OperationContext
from etl_craft.services.views import OperationResult, RunView, TaskRunView

Progress = Callable[[str], None]


@dataclass(frozen=True)
class RunRequest:
    pipeline_code: str
    task_code: str | None = None
    run_id: int | None = None
    run_key: str | None = None
    run_date: date | None = None
    force: bool = False
    ignore_dependencies: bool = False
    rerun: bool = False
    with_downstream: bool = False
    skip: bool = False
    init_only: bool = False
    finalize_only: bool = False
    backfill: str | None = None  # FROM:TO
    reason: str | None = None
    log_level: str = "INFO"

    def arguments(self) -> dict[str, object]:
        return {k: (v.isoformat() if isinstance(v, date) else v) for k, v in asdict(self).items() if k != "log_level"}

    def check(self) -> None:
        """The usage rules of interface §3.1 (exit 2)."""
        if self.reason is not None:
            operator_text(self.reason, "etl-craft run --reason")
        rules = [
            (self.ignore_dependencies and self.rerun, "--ignore-dependencies and --rerun can't be combined"),
            (
                (self.ignore_dependencies or self.rerun) and not self.task_code,
                "--ignore-dependencies and --rerun need --task_code",
            ),
            (self.with_downstream and not self.rerun, "--with-downstream needs --rerun"),
            (self.skip and (self.task_code or self.force), "--skip can't be combined with --task_code or --force"),
            (
                self.reason is not None and not (self.ignore_dependencies or self.rerun or self.skip or self.backfill),
                "--reason goes with --ignore-dependencies, --rerun, --skip or --backfill",
            ),
            (
                (self.ignore_dependencies or self.rerun or self.skip or self.backfill)
                and not (self.reason or "").strip(),
                "that option needs --reason",
            ),
            (
                self.run_date is not None and (self.task_code or self.skip or self.finalize_only),
                "--run-date goes with a whole run or --init-only",
            ),
            (self.init_only and self.finalize_only, "--init-only and --finalize-only can't be combined"),
            (
                self.backfill is not None
                and (
                    self.task_code
                    or self.force
                    or self.skip
                    or self.init_only
                    or self.finalize_only
                    or self.run_date
                    or self.run_id
                    or self.run_key
                    or self.ignore_dependencies
                    or self.rerun
                ),
                "--backfill goes with --reason only",
            ),
            (
                (self.init_only or self.finalize_only) and (self.task_code or self.force or self.skip),
                "--init-only and --finalize-only run no task",
            ),
        ]
        for broken, message in rules:
            if broken:
                raise UsageError("etl-craft run", found=message, expected="a valid combination of options")


def supervise(
    ctx: OperationContext,
    graph: Graph,
    run_id: int,
    owner: OwnerId,
    scope: Scope,
    signals: StopSignals,
    progress: Progress,
    request: RunRequest,
) -> Supervised:
    """Supervise a run in the foreground, as this command's own overseer, until it settles or stops."""
    return RunSupervisor(
        db=ctx.db,
        config=ctx.config,
        graph=graph,
        run_id=run_id,
        owner=owner,
        actor=ctx.actor,
        scope=scope,
        signals=signals,
        pools=Pools(ctx.db, local_pool(ctx.config, ctx.db.dialect, (t.handler for t in graph.tasks.values()))),
        progress=progress,
        log_level=request.log_level,
    ).supervise()


def project_today(ctx: OperationContext) -> date:
    """Today in the project's time zone (Orchestration.Timezone): the default run date (W12)."""
    return datetime.now(ZoneInfo(ctx.config.orchestration.timezone)).date()


def config_fingerprint(ctx: OperationContext) -> str:
    return hashlib.sha256(ctx.config.path.read_bytes()).hexdigest()


def summary(pipeline: PipelineRow, run_id: int, status: str, message: str) -> str:
    line = f"{pipeline.pipeline_code}: pipeline_run_id={run_id} {status}"
    return f"{line} — {message}" if message else line


def result(
    ctx: OperationContext,
    pipeline: PipelineRow,
    status: str,
    message: str,
    exit_code: ExitCode,
    run_id: int | None = None,
    task_id: int | None = None,
    task_code: str | None = None,
) -> OperationResult:
    run_view = task_view = None
    if run_id is not None:
        with ctx.db.read() as conn:
            run = reads.run(conn, run_id)
            assert run is not None
            run_view = RunView.of(run, pipeline.pipeline_code)
            if task_id is not None:
                task_view = TaskRunView.of(task_id, task_code or "", reads.task_runs_of(conn, run_id).get(task_id))
    return OperationResult(status, message, int(exit_code), pipeline.pipeline_code, run_view, task_view)


def paused(ctx: OperationContext, pipeline: PipelineRow) -> OperationResult | None:
    with ctx.db.read() as conn:
        pause = reads.open_pause(conn, pipeline.pipeline_id)
    if pause is None:
        return None
    message = (
        f"{pipeline.pipeline_code} is paused by {pause.paused_by} since {pause.paused_at:%Y-%m-%d %H:%M:%S}Z "
        f"({pause.reason}); nothing was started. "
        f"Resume it with etl-craft resume --pipeline_code {pipeline.pipeline_code}"
    )
    return result(ctx, pipeline, "PAUSED", message, ExitCode.SUCCESS)


def ending_result(
    ctx: OperationContext,
    pipeline: PipelineRow,
    run_id: int,
    outcome: Supervised,
    task_id: int | None = None,
    task_code: str | None = None,
) -> OperationResult:
    if outcome.ending is Ending.FINISHED:
        ok = outcome.run_status in ENDED_WELL
        code = ExitCode.SUCCESS if ok else ExitCode.FAILURE
        status = outcome.run_status
    elif outcome.ending is Ending.CANCELLED:
        code, status = ExitCode.FAILURE, "CANCELLED"
    elif outcome.ending is Ending.WAITING:
        code, status = ExitCode.WAITING, "WAITING"
    elif outcome.ending is Ending.SETTLED:
        code, status = ExitCode.SUCCESS, outcome.run_status
    else:
        code, status = ExitCode.INCOMPLETE, "INCOMPLETE"
    return result(
        ctx, pipeline, status, summary(pipeline, run_id, status, outcome.message), code, run_id, task_id, task_code
    )
