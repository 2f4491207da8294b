"""`purge`: remove Engine DB history past the Retention section's days."""

from __future__ import annotations

import argparse

from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="count what would be removed; remove nothing")
    parser.add_argument(
        "--archive-to",
        metavar="URL",
        help="write the removed rows (gzipped JSON lines per table) to file:///folder or s3://bucket/prefix"
        " before each batch commits",
    )


def _run(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.purge import purge_history

    ctx = open_context(args.config)
    try:
        view = purge_history(ctx, dry_run=args.dry_run, archive_to=args.archive_to)
    finally:
        ctx.close()
    emit(args, "purge", view, view.lines())
    return 0


PURGE = Command(
    "purge",
    "remove run history, attempts and consumption older than the Retention section keeps",
    _run,
    _configure,
)

__all__ = ["PURGE"]
