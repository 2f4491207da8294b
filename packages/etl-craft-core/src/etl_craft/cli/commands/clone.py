"""`clone`: mirror the Engine DB's tables into the Warehouse schema now (S6.E)."""

from __future__ import annotations

import argparse

from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit


def _run(args: argparse.Namespace) -> int:
    from etl_craft.services.cloning import clone_now
    from etl_craft.services.context import open_context

    ctx = open_context(args.config)
    try:
        view = clone_now(ctx)
    finally:
        ctx.close()
    emit(args, "clone", view, view.lines())
    return 0


CLONE = Command(
    "clone",
    "copy the Engine DB rows changed since the last clone into the Warehouse schema (Cloning section)",
    _run,
)

__all__ = ["CLONE"]
