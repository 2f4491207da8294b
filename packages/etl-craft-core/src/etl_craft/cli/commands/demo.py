"""`demo`: write the demo project into a new folder, set it up and run it, showing what happens."""

from __future__ import annotations

import argparse

from etl_craft.cli.arguments import path
from etl_craft.cli.banner import add_banner_flag, show_banner
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit, wants_json


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "dir",
        nargs="?",
        type=path,
        metavar="DIR",
        help="a new or empty folder for the project (default: a new etl-craft-demo folder in the working folder)",
    )
    add_banner_flag(parser)


def _run(args: argparse.Namespace) -> int:
    from etl_craft.cli.demo_display import display_for
    from etl_craft.services.demo.walkthrough import run_demo

    show_banner(args, "demo: a project run end to end")
    json_output = wants_json(args)
    display = display_for(json_output)
    with display:
        view = run_demo(args.dir, display.event, log_level=args.log_level)
    if json_output:
        emit(args, "demo", view, view.message)
    else:
        display.summary(view)
    return view.exit_code


DEMO = Command(
    "demo",
    "write a demo project into a new folder and run it end to end: three clients, two batches of source files",
    _run,
    _configure,
)
