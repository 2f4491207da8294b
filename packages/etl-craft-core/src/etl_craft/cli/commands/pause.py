"""`pause` and `resume`: stop a pipeline from starting runs and tasks, and let it start them again."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from etl_craft.cli import arguments
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pipeline_code", type=arguments.code, required=True, metavar="CODE")
    parser.add_argument(
        "--reason", type=arguments.reason, required=True, help="why, at most 2,000 characters (recorded with the pause)"
    )


def _runner(verb: str) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        from etl_craft.services.context import open_context
        from etl_craft.services.interventions.pause import set_pause

        ctx = open_context(args.config)
        try:
            result = set_pause(ctx, "pause" if verb == "pause" else "resume", args.pipeline_code, args.reason)
        finally:
            ctx.close()
        emit(args, "operation", result, result.message)
        return result.exit_code

    return run


PAUSE = Command(
    "pause", "pause a pipeline: no new run or task starts; running tasks finish", _runner("pause"), _configure
)
RESUME = Command("resume", "resume a paused pipeline", _runner("resume"), _configure)

__all__ = ["PAUSE", "RESUME"]
