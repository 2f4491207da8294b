"""`explain`: why a task is in its state and what would make it run."""

from __future__ import annotations

import argparse

from etl_craft.cli import arguments
from etl_craft.cli.commands.run import add_run_selector
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pipeline_code", type=arguments.code, required=True, metavar="CODE")
    parser.add_argument("--task_code", type=arguments.code, required=True, metavar="CODE")
    add_run_selector(parser)


def _run(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.inspect.explain import explain_task, explanation_lines
    from etl_craft.services.runs.selection import RunSelector

    ctx = open_context(args.config)
    try:
        explanation = explain_task(ctx, args.pipeline_code, args.task_code, RunSelector(args.run_id, args.run_key))
    finally:
        ctx.close()
    emit(args, "explain", explanation, explanation_lines(explanation))
    return 0


EXPLAIN = Command("explain", "why a task is in its state, and what would make it run", _run, _configure)
