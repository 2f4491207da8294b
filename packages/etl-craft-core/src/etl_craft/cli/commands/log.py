"""`log`: print an attempt's whole log."""

from __future__ import annotations

import argparse

from etl_craft.cli import arguments
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--attempt-id", type=arguments.whole_number(1), required=True, metavar="ID", help="the ATTEMPT_ID"
    )


def _run(args: argparse.Namespace) -> int:
    from etl_craft.services.attempt_log import read_attempt_log
    from etl_craft.services.context import open_context

    ctx = open_context(args.config)
    try:
        view = read_attempt_log(ctx, args.attempt_id)
    finally:
        ctx.close()
    emit(args, "attempt-log", view, view.text.splitlines())
    return 0


LOG = Command("log", "print an attempt's whole log (its file under Orchestration.Log_dir)", _run, _configure)

__all__ = ["LOG"]
