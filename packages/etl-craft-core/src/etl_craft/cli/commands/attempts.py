"""`task-run`, `attempt` and `attempt-log`: one task run or attempt by id, an attempt's log from a byte offset."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from etl_craft.cli import arguments
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit, write
from etl_craft.cli.text import ABSENT, first_line, rows, run_line, seconds, when

if TYPE_CHECKING:
    from etl_craft.services.inspect.attempts import AttemptDetail, TaskRunDetail
    from etl_craft.services.views import AttemptView

_ATTEMPT_COLUMNS = ["ATTEMPT_ID", "NUMBER", "STATUS", "HOST", "PID", "STARTED_AT", "DURATION_SECONDS", "EXIT_CODE"]


def _attempt_cells(a: AttemptView) -> list[object]:
    return [
        *(a.attempt_id, a.attempt_number, a.status, a.host, a.pid, when(a.started_at)),
        *(seconds(a.started_at, a.ended_at), a.exit_code, first_line(a.error_message)),
    ]


def task_run_text(view: TaskRunDetail) -> list[str]:
    task = view.task
    lines = [
        run_line(view.run),
        f"{task.task_code}: task_run_id={task.task_run_id} {task.status} attempts={task.attempt_count} "
        f"rows_written={task.rows_written if task.rows_written is not None else ABSENT}",
    ]
    lines += rows([*_ATTEMPT_COLUMNS, "ERROR"], [_attempt_cells(a) for a in task.attempts])
    return lines


def attempt_text(view: AttemptDetail) -> list[str]:
    a = view.attempt
    return [
        f"{view.pipeline_code}.{view.task_code}: attempt_id={a.attempt_id} (attempt {a.attempt_number} of "
        f"task run {a.task_run_id}, run {view.pipeline_run_id}) {a.status}",
        *rows([*_ATTEMPT_COLUMNS, "ERROR"], [_attempt_cells(a)]),
        f"log: {a.log_path or ABSENT}",
    ]


def _configure_task_run(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--task-run-id", type=arguments.whole_number(1), required=True, metavar="N")


def _run_task_run(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.inspect.attempts import task_run_detail

    ctx = open_context(args.config)
    try:
        view = task_run_detail(ctx, args.task_run_id)
    finally:
        ctx.close()
    emit(args, "task-run", view, task_run_text(view))
    return 0


def _configure_attempt(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--attempt-id", type=arguments.whole_number(1), required=True, metavar="N")


def _run_attempt(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.inspect.attempts import attempt_detail

    ctx = open_context(args.config)
    try:
        view = attempt_detail(ctx, args.attempt_id)
    finally:
        ctx.close()
    emit(args, "attempt", view, attempt_text(view))
    return 0


def _configure_attempt_log(parser: argparse.ArgumentParser) -> None:
    from etl_craft.services.inspect.attempts import LOG_CHUNK_LIMIT

    parser.add_argument("--attempt-id", type=arguments.whole_number(1), required=True, metavar="N")
    parser.add_argument(
        "--offset", type=arguments.whole_number(0), default=0, metavar="BYTES", help="start at this byte (default 0)"
    )
    parser.add_argument(
        "--limit",
        type=arguments.whole_number(1, LOG_CHUNK_LIMIT),
        default=LOG_CHUNK_LIMIT,
        metavar="BYTES",
        help=f"at most this many bytes (default and most {LOG_CHUNK_LIMIT})",
    )


def _run_attempt_log(args: argparse.Namespace) -> int:
    import sys

    from etl_craft.services.context import open_context
    from etl_craft.services.inspect.attempts import attempt_log

    ctx = open_context(args.config)
    try:
        chunk = attempt_log(ctx, args.attempt_id, args.offset, args.limit)
    finally:
        ctx.close()
    emit(args, "attempt-log", chunk, chunk.text.splitlines())
    if chunk.next_offset < chunk.size:  # on stderr: stdout holds only the log
        write(sys.stderr, f"(more: read on with --offset {chunk.next_offset})\n")
    return 0


TASK_RUN = Command("task-run", "show one task run by id and every attempt it made", _run_task_run, _configure_task_run)
ATTEMPT = Command("attempt", "show one attempt by id", _run_attempt, _configure_attempt)
ATTEMPT_LOG = Command(
    "attempt-log", "print an attempt's log file from a byte offset", _run_attempt_log, _configure_attempt_log
)
