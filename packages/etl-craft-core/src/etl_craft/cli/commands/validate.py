"""`validate`: check the metadata and the project files before anything runs."""

from __future__ import annotations

import argparse

from etl_craft.cli import arguments
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit
from etl_craft.core.errors import ExitCode


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pipeline_code",
        type=arguments.code,
        metavar="CODE",
        help="check this pipeline only (default: every active one)",
    )


def _run(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.validate import validate

    ctx = open_context(args.config)
    try:
        report = validate(ctx, args.pipeline_code)
    finally:
        ctx.close()
    emit(args, "validate", report, report.lines)
    return ExitCode.SUCCESS if report.valid else ExitCode.FAILURE


VALIDATE = Command(
    "validate",
    "check pipelines, tasks, SQL, scripts and alerts without running anything; exit 1 on any FAIL",
    _run,
    _configure,
)
