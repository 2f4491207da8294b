"""What a command is: a name, its arguments and one function that calls a service and renders."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass

from etl_craft.cli.arguments import path

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


@dataclass(frozen=True)
class Command:
    """A CLI command; other distributions contribute these through the `etl_craft.commands` group."""

    name: str
    help: str
    run: Callable[[argparse.Namespace], int]
    configure: Callable[[argparse.ArgumentParser], None] | None = None


def add_global_options(parser: argparse.ArgumentParser, *, suppress: bool) -> None:
    """The options every command accepts, before or after its name.

    The main parser gets real defaults; each command (and subcommand) parser gets SUPPRESS, so an
    option given after the command name overrides without a default clobbering one given before.
    """

    def default(value: object) -> object:
        return argparse.SUPPRESS if suppress else value

    group = parser.add_argument_group("global options")
    group.add_argument("--config", type=path, metavar="PATH", default=default(None), help="craft-connector.yml to use")
    group.add_argument(
        "--log-level",
        type=str.upper,
        choices=LOG_LEVELS,
        default=default("INFO"),
        help="log records at this level and above go to stderr (default INFO)",
    )
    group.add_argument("--log-format", choices=("text", "json"), default=default("text"))
    group.add_argument(
        "--format",
        choices=("text", "json"),
        default=default("text"),
        help="text for people, or one JSON document on stdout",
    )
