"""`status`: one run's header, each task's state under it, and the tasks its failures block (read-only)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from etl_craft.cli import arguments
from etl_craft.cli.commands.run import add_run_selector
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit
from etl_craft.cli.text import ABSENT, first_line, number, rows, run_line, seconds, when
from etl_craft.core.errors import ExitCode

if TYPE_CHECKING:
    from etl_craft.services.inspect.status import StatusView


def status_text(view: StatusView) -> list[str]:
    """The run line, the time line, an optional pause line, the task table and the blocked tasks.

    A task that never had an attempt (skipped, or marked) shows no duration.
    """
    run = view.run
    duration = ABSENT if view.duration_seconds is None else f"{view.duration_seconds:.1f}"
    lines = [
        run_line(run),
        f"start={when(run.start_date)} duration_seconds={duration} SLA={run.sla_status or ABSENT} "
        f"sla_hours={number(view.pipeline.sla_in_hours)}",
    ]
    if view.pause is not None:
        lines.append(f"paused by {view.pause.paused_by} since {when(view.pause.paused_at)}: {view.pause.reason}")
    lines += rows(
        ["TASK", "STATUS", "ATTEMPTS", "ROWS_WRITTEN", "DURATION_SECONDS", "ERROR"],
        [
            [
                t.task_code,
                t.status,
                t.attempt_count,
                t.rows_written,
                seconds(t.start_date, t.end_date) if t.attempt_count else ABSENT,
                first_line(t.error_message),
            ]
            for t in view.tasks
        ],
    )
    lines.append(f"blocked by failures: {', '.join(view.blocked_by_failures) or '(none)'}")
    return lines


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pipeline_code", type=arguments.code, required=True, metavar="CODE")
    add_run_selector(parser)


def _run(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.inspect import run_status
    from etl_craft.services.runs.selection import RunSelector

    ctx = open_context(args.config)
    try:
        view = run_status(ctx, args.pipeline_code, RunSelector(args.run_id, args.run_key))
    finally:
        ctx.close()
    emit(args, "status", view, status_text(view))
    return ExitCode.SUCCESS


STATUS = Command("status", "show a run: its header, each task's state and what its failures block", _run, _configure)
