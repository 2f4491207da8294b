"""`run`: a whole pipeline in the foreground, or one task under a run (rerun, force, skip)."""

from __future__ import annotations

import argparse
from datetime import date

from etl_craft.cli import arguments
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit, note


def add_run_selector(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--run-id", type=arguments.whole_number(1), metavar="N", help="the run to act on, by id")
    group.add_argument("--run-key", type=arguments.run_key, metavar="KEY", help="the run to act on, by run key")


def parse_date(text: str) -> date:
    """An argparse type: a bad date is a usage error (exit 2) naming the value."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"found {text!r}; expected a date as YYYY-MM-DD") from None


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pipeline_code", type=arguments.code, required=True, metavar="CODE")
    parser.add_argument("--task_code", type=arguments.code, metavar="CODE", help="run one task under the selected run")
    parser.add_argument("--force", action="store_true", help="run regardless of status and dependencies")
    parser.add_argument("--ignore-dependencies", action="store_true", help="run the task without a dependency check")
    parser.add_argument("--rerun", action="store_true", help="run a finished task again (reopens an ended run)")
    parser.add_argument("--with-downstream", action="store_true", help="with --rerun: every later task runs again too")
    parser.add_argument("--skip", action="store_true", help="record a SKIPPED run that does nothing")
    parser.add_argument(
        "--init-only", action="store_true", help="start (or resume) a run and print its id; run no task"
    )
    parser.add_argument("--finalize-only", action="store_true", help="end the run from its tasks' statuses")
    parser.add_argument("--run-date", type=parse_date, metavar="YYYY-MM-DD", help="the date a new run runs as of")
    parser.add_argument("--backfill", metavar="FROM:TO", help="one BACKFILL run per date, oldest first (with --reason)")
    parser.add_argument(
        "--reason",
        type=arguments.reason,
        help="why, at most 2,000 characters (required with --ignore-dependencies, --rerun, --skip and --backfill)",
    )
    add_run_selector(parser)


def _run(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.runs.execute import RunRequest, execute_run

    request = RunRequest(
        pipeline_code=args.pipeline_code,
        task_code=args.task_code,
        run_id=args.run_id,
        run_key=args.run_key,
        run_date=args.run_date,
        force=args.force,
        ignore_dependencies=args.ignore_dependencies,
        rerun=args.rerun,
        with_downstream=args.with_downstream,
        skip=args.skip,
        init_only=args.init_only,
        finalize_only=args.finalize_only,
        backfill=args.backfill,
        reason=args.reason,
        log_level=args.log_level,
    )
    request.check()
    ctx = open_context(args.config)
    try:
        if request.backfill is not None:
            from etl_craft.services.runs.backfills import execute_backfill

            backfill = execute_backfill(ctx, request, lambda line: note(args, line))
            emit(args, "backfill", backfill, backfill.message)
            return backfill.exit_code
        result = execute_run(ctx, request, lambda line: note(args, line))
    finally:
        ctx.close()
    emit(args, "operation", result, result.message)
    return result.exit_code


RUN = Command("run", "run a pipeline, or one task of a run", _run, _configure)
