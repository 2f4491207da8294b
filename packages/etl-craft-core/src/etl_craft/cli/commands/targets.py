"""`rehash`, `upgrade-targets` and `lineage`: the warehouse targets of SQL tasks."""

from __future__ import annotations

import argparse

from etl_craft.cli import arguments
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit, table
from etl_craft.core.errors import ExitCode


def _configure_rehash(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", required=True, metavar="S.T", help="the merge target (schema.table)")
    parser.add_argument("--dry-run", action="store_true", help="count the rows that would change; change nothing")


def _run_rehash(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.targets.rehash import rehash

    ctx = open_context(args.config)
    try:
        view = rehash(ctx, args.target, dry_run=args.dry_run)
    finally:
        ctx.close()
    emit(args, "rehash", view, f"rehash: {view.message}")
    return ExitCode.SUCCESS


def _configure_upgrade(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--action", metavar="SQL_ACTION", help="only targets of SQL tasks with this action")
    parser.add_argument("--target", metavar="S.T", help="only this target")
    parser.add_argument("--dry-run", action="store_true", help="list the columns that would be added; change nothing")


def _run_upgrade(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.targets.upgrade import upgrade_targets

    ctx = open_context(args.config)
    try:
        view = upgrade_targets(ctx, action=args.action, target=args.target, dry_run=args.dry_run)
    finally:
        ctx.close()
    rows = [[t.target, t.status, ", ".join(t.added) or "-", ", ".join(t.tasks)] for t in view.targets]
    emit(args, "upgrade-targets", view, [*table(["TARGET", "STATUS", "ADDED", "TASKS"], rows), view.message])
    return ExitCode.SUCCESS


def _configure_lineage(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--table", metavar="S.T", help="show the tables (or, with --column, columns) around this one")
    parser.add_argument("--column", metavar="NAME", help="trace one column of --table")
    direction = parser.add_mutually_exclusive_group()
    direction.add_argument("--upstream", action="store_true", help="only where it comes from")
    direction.add_argument("--downstream", action="store_true", help="only where it goes")
    parser.add_argument(
        "--depth", type=arguments.whole_number(1), default=3, metavar="N", help="levels to follow (default 3)"
    )
    parser.add_argument("--refresh", action="store_true", help="trace every task again, ignoring the cache")
    parser.add_argument("--strict", action="store_true", help="exit 1 when any SQL task can't be traced")


def _run_lineage(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.targets.lineage import lineage

    ctx = open_context(args.config)
    try:
        view = lineage(
            ctx,
            table=args.table,
            column=args.column,
            upstream=args.upstream,
            downstream=args.downstream,
            depth=args.depth,
            refresh=args.refresh,
        )
    finally:
        ctx.close()
    if view.table is None:
        rows = [[t.label, t.target, ", ".join(t.columns), ", ".join(t.source_tables)] for t in view.tasks if t.traced]
        lines = table(["TASK", "TARGET", "COLUMNS", "SOURCE_TABLES"], rows)
    else:
        lines = [view.table + (f".{view.column}" if view.column else "")]
        for line in view.tree:
            arrow = "<-" if line.direction == "upstream" else "->"
            name = line.table + (f".{line.column}" if line.column else "")
            how = f"  [{line.transformation}]" if line.transformation else ""
            lines.append(f"{'  ' * line.level}{arrow} {name}{how}  ({line.task})")
    lines += [f"not traced: {entry}" for entry in view.untraced]
    emit(args, "lineage", view, lines)
    return ExitCode.FAILURE if args.strict and view.untraced else ExitCode.SUCCESS


REHASH = Command(
    "rehash", "recompute a merge target's HASH_KEY with the version-2 hash", _run_rehash, _configure_rehash
)
UPGRADE_TARGETS = Command(
    "upgrade-targets",
    "add missing PIPELINE_ID, PIPELINE_RUN_ID and TASK_RUN_ID columns to SQL and ingestion targets",
    _run_upgrade,
    _configure_upgrade,
)
LINEAGE = Command("lineage", "show the column lineage of SQL tasks", _run_lineage, _configure_lineage)

__all__ = ["LINEAGE", "REHASH", "UPGRADE_TARGETS"]
