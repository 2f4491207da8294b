"""`config export|plan|apply`: the CSV files of config/ as a second way to write metadata."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from etl_craft.cli.arguments import path
from etl_craft.cli.framework import Command, add_global_options
from etl_craft.cli.output import emit
from etl_craft.core.errors import ExitCode

if TYPE_CHECKING:
    from etl_craft.services.config_files import ConfigSyncView


def _config_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--config-dir",
        type=path,
        metavar="PATH",
        help="the folder of the six CSV files (default config/ beside the config)",
    )


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="config_command", metavar="SUBCOMMAND", required=True)
    export = sub.add_parser("export", help="write the six CSV files from the Engine DB")
    _config_dir(export)
    export.add_argument("--force", action="store_true", help="overwrite files that are already there")
    plan = sub.add_parser("plan", help="show every change the files make and validate the result; change nothing")
    _config_dir(plan)
    apply = sub.add_parser("apply", help="make the changes in one transaction, unless validate fails the result")
    _config_dir(apply)
    for child in (export, plan, apply):
        add_global_options(child, suppress=True)


def sync_text(view: ConfigSyncView) -> list[str]:
    lines = [view.header, *(c.line for c in view.changes)]
    lines += view.validation.lines
    lines.append(f"config {view.command}: {view.message}")
    return lines


def _run(args: argparse.Namespace) -> int:
    from etl_craft.services import config_files
    from etl_craft.services.context import open_context

    ctx = open_context(args.config)
    try:
        if args.config_command == "export":
            exported = config_files.export(ctx, args.config_dir, force=args.force)
            emit(args, "config-export", exported, f"config export: {exported.message}")
            return ExitCode.SUCCESS
        action = config_files.plan if args.config_command == "plan" else config_files.apply
        view = action(ctx, args.config_dir)
    finally:
        ctx.close()
    emit(args, "config-sync", view, sync_text(view))
    return ExitCode.SUCCESS if view.validation.valid else ExitCode.FAILURE


CONFIG = Command(
    "config",
    "export the metadata to config/*.csv, or plan and apply the changes those files make",
    _run,
    _configure,
)
