"""`mark`, `cancel`, `reopen` and `reconcile`: operators changing runs by hand, and fencing lost work."""

from __future__ import annotations

import argparse

from etl_craft.cli import arguments
from etl_craft.cli.commands.run import add_run_selector
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit
from etl_craft.core.enums import OWN_TASK_END


def _configure_mark(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pipeline_code", type=arguments.code, required=True, metavar="CODE")
    parser.add_argument(
        "--task_code", type=arguments.code, metavar="CODE", help="the task to mark; without it the run itself is marked"
    )
    parser.add_argument("--status", required=True, choices=OWN_TASK_END)
    parser.add_argument(
        "--reason",
        type=arguments.reason,
        required=True,
        help="why, at most 2,000 characters (recorded with the change)",
    )
    parser.add_argument(
        "--rows",
        type=arguments.whole_number(0),
        metavar="N",
        help="rows the task wrote (HAS_DATA dependents need it to see data)",
    )
    parser.add_argument(
        "--stale",
        action="store_true",
        help="the task's process is known to be gone: reconcile its expired attempts first (needs --task_code)",
    )
    parser.add_argument(
        "--new-run",
        action="store_true",
        help="record a stand-in run for work done elsewhere (no run selector), so downstreams can proceed",
    )
    add_run_selector(parser)


def _run_mark(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.interventions.marks import MarkRequest, mark

    request = MarkRequest(
        pipeline_code=args.pipeline_code,
        status=args.status,
        reason=args.reason,
        task_code=args.task_code,
        rows=args.rows,
        stale=args.stale,
        run_id=args.run_id,
        run_key=args.run_key,
        new_run=args.new_run,
    )
    request.check()
    ctx = open_context(args.config)
    try:
        result = mark(ctx, request)
    finally:
        ctx.close()
    emit(args, "operation", result, result.message)
    return result.exit_code


def _configure_run_control(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pipeline_code", type=arguments.code, required=True, metavar="CODE")
    parser.add_argument(
        "--reason",
        type=arguments.reason,
        required=True,
        help="why, at most 2,000 characters (recorded with the change)",
    )
    add_run_selector(parser)


def _run_cancel(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.interventions.cancel_reopen import RunControlRequest, cancel

    ctx = open_context(args.config)
    try:
        result = cancel(ctx, RunControlRequest(args.pipeline_code, args.reason, args.run_id, args.run_key))
    finally:
        ctx.close()
    emit(args, "operation", result, result.message)
    return result.exit_code


def _run_reopen(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.interventions.cancel_reopen import RunControlRequest, reopen

    ctx = open_context(args.config)
    try:
        result = reopen(ctx, RunControlRequest(args.pipeline_code, args.reason, args.run_id, args.run_key))
    finally:
        ctx.close()
    emit(args, "operation", result, result.message)
    return result.exit_code


def _configure_reconcile(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pipeline_code", type=arguments.code, metavar="CODE", help="only this pipeline's runs and attempts"
    )
    parser.add_argument(
        "--task_code", type=arguments.code, metavar="CODE", help="only this task's attempts (needs --pipeline_code)"
    )


def _run_reconcile(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.interventions.reconcile import reconcile_runs

    ctx = open_context(args.config)
    try:
        view = reconcile_runs(ctx, args.pipeline_code, args.task_code)
    finally:
        ctx.close()
    emit(args, "reconciliation", view, view.lines())
    return 0


MARK = Command("mark", "set a task's status under a run, or end a run with a status", _run_mark, _configure_mark)
CANCEL = Command("cancel", "cancel an unfinished run and stop its task processes", _run_cancel, _configure_run_control)
REOPEN = Command("reopen", "reopen an ended run for a repair", _run_reopen, _configure_run_control)
RECONCILE = Command(
    "reconcile",
    "fence attempt leases nobody renews as LOST and release runs whose owner is gone",
    _run_reconcile,
    _configure_reconcile,
)

__all__ = ["CANCEL", "MARK", "RECONCILE", "REOPEN"]
