"""`etl-craft`: parse the command line, act as the resolved actor, map errors to exit statuses."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from importlib import metadata

from etl_craft import __version__
from etl_craft.cli.commands import CORE_COMMANDS
from etl_craft.cli.framework import Command, add_global_options
from etl_craft.core.errors import EtlCraftError, ExitCode, UsageError

ENTRY_POINT_GROUP = "etl_craft.commands"
log = logging.getLogger("etl_craft.cli")


def contributed_commands() -> list[Command]:
    """Commands other installed distributions add (server, worker, ...) through entry points."""
    found = []
    for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
        command = entry.load()
        if not isinstance(command, Command):
            raise TypeError(f"entry point {entry.name} of {ENTRY_POINT_GROUP} is not an etl_craft Command")
        found.append(command)
    return found


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="etl-craft",
        description="A metadata-driven ETL orchestrator: pipelines, tasks and dependencies live in the Engine DB.",
    )
    parser.add_argument("--version", action="version", version=f"etl-craft {__version__}")
    add_global_options(parser, suppress=False)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for command in commands:
        child = sub.add_parser(command.name, help=command.help, description=command.help)
        add_global_options(child, suppress=True)
        if command.configure:
            command.configure(child)
        child.set_defaults(handler=command.run)
    return parser


def _report(args: argparse.Namespace, error: EtlCraftError) -> None:
    sys.stderr.write(f"error: {error.message}\n")
    if getattr(args, "format", "text") == "json":
        from etl_craft.services.documents import document, dumps

        sys.stdout.write(dumps(document("error", error.to_json())) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    commands = [*CORE_COMMANDS, *contributed_commands()]
    parser = build_parser(commands)
    args = parser.parse_args(argv)
    if not getattr(args, "command", None):
        parser.print_usage(sys.stderr)
        sys.stderr.write("error: name a command; etl-craft --help lists them\n")
        return ExitCode.USAGE

    from etl_craft.cli.logs import configure_logging
    from etl_craft.core.actor import acting_as, resolve_actor

    configure_logging(args.log_level, args.log_format)
    try:
        with acting_as(resolve_actor()):
            return int(args.handler(args))
    except UsageError as error:
        parser.print_usage(sys.stderr)
        _report(args, error)
        return int(error.exit_code)
    except EtlCraftError as error:
        _report(args, error)
        return int(error.exit_code)
    except KeyboardInterrupt:
        sys.stderr.write("error: interrupted\n")
        return int(ExitCode.FAILURE)
    except Exception as error:  # an unclassified error is a bug: say so, keep the traceback
        log.exception("unexpected error in etl-craft %s", args.command)
        sys.stderr.write(
            f"error: unexpected {type(error).__name__}: {error}. This is a bug in etl-craft; "
            "the traceback above says where\n"
        )
        return int(ExitCode.UNEXPECTED)


if __name__ == "__main__":
    raise SystemExit(main())
