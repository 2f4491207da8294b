"""`etl-craft`: parse the command line, act as the resolved actor, map errors to exit statuses.

No traceback reaches the user: every refusal is one `error:` line on stderr (and, with `--format
json`, an `etl-craft/error/1` document on stdout) and a documented exit status; a bug (exit 16)
writes its traceback to a file the line names.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import re
import sys
import tempfile
import traceback
from collections.abc import Sequence
from importlib import metadata
from typing import NoReturn

from etl_craft import __version__
from etl_craft.cli.commands import CORE_COMMANDS
from etl_craft.cli.framework import Command, add_global_options
from etl_craft.cli.output import finish, write
from etl_craft.core.errors import EtlCraftError, ExitCode, UsageError
from etl_craft.core.text import printable

ENTRY_POINT_GROUP = "etl_craft.commands"
log = logging.getLogger("etl_craft.cli")
_NOT_UTF8 = re.compile("[\ud800-\udfff]")  # what Python makes of argument bytes that are not UTF-8


class BadArguments(Exception):
    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(message)
        self.parser = parser
        self.message = message


class _Parser(argparse.ArgumentParser):
    """Reports an argument error to main (which writes it like any other error) instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise BadArguments(self, message)


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
    parser = _Parser(
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


def _json_requested(argv: Sequence[str]) -> bool:
    """Whether the arguments ask for JSON, read without the parser (which may be what failed)."""
    return "--format=json" in argv or any(a == "--format" and b == "json" for a, b in itertools.pairwise(argv))


def _report(error: EtlCraftError, as_json: bool) -> None:
    write(sys.stderr, f"error: {printable(error.message)}\n")
    if as_json:
        from etl_craft.services.documents import document, dumps

        write(sys.stdout, dumps(document("error", error.to_json())) + "\n")


def _not_utf8(argv: Sequence[str]) -> UsageError | None:
    for position, value in enumerate(argv):
        if _NOT_UTF8.search(value):
            before = argv[position - 1] if position else ""
            flag = value.split("=", 1)[0] if value.startswith("--") else before if before.startswith("-") else None
            return UsageError(
                f"the value of {flag}" if flag else f"argument {position + 1}",
                found=f"bytes that are not UTF-8 in {value!r}",
                expected="UTF-8 text",
                remedy="give the value in UTF-8 (etl-craft reads and stores text as UTF-8)",
            )
    return None


def _unexpected(command: str, error: Exception, as_json: bool) -> int:
    """A bug: one line naming it and the file that holds its traceback (logged too when debugging)."""
    log.debug("unexpected error in etl-craft %s", command, exc_info=error)
    try:
        with tempfile.NamedTemporaryFile(
            "w", prefix="etl-craft-traceback-", suffix=".txt", delete=False, encoding="utf-8", errors="backslashreplace"
        ) as out:
            out.write(f"etl-craft {__version__} {command}\n")
            out.write("".join(traceback.format_exception(error)))
        where = f"its traceback is in {out.name}"
    except OSError:
        where = "run the command again with --log-level DEBUG to see its traceback"
    bug = EtlCraftError(
        f"unexpected {type(error).__name__} in etl-craft {command}: {error}",
        remedy=f"this is a bug in etl-craft; {where} (include it when you report the bug)",
    )
    _report(bug, as_json)
    return int(ExitCode.UNEXPECTED)


def _run(argv: list[str]) -> int:
    as_json = _json_requested(argv)
    commands = [*CORE_COMMANDS, *contributed_commands()]
    parser = build_parser(commands)
    if refused := _not_utf8(argv):
        _report(refused, as_json)
        return int(ExitCode.USAGE)
    try:
        args = parser.parse_args(argv)
    except BadArguments as bad:
        bad.parser.print_usage(sys.stderr)
        _report(UsageError(bad.message), as_json)
        return int(ExitCode.USAGE)
    except SystemExit as done:  # --help and --version
        return done.code if isinstance(done.code, int) else int(ExitCode.USAGE)
    if not getattr(args, "command", None):
        parser.print_usage(sys.stderr)
        _report(UsageError("name a command; etl-craft --help lists them"), as_json)
        return int(ExitCode.USAGE)

    from etl_craft.cli.logs import configure_logging
    from etl_craft.core.actor import acting_as, resolve_actor

    configure_logging(args.log_level, args.log_format)
    as_json = getattr(args, "format", "text") == "json"
    try:
        with acting_as(resolve_actor()):
            return int(args.handler(args))
    except UsageError as error:
        parser.print_usage(sys.stderr)
        _report(error, as_json)
        return int(error.exit_code)
    except EtlCraftError as error:
        _report(error, as_json)
        return int(error.exit_code)
    except KeyboardInterrupt:
        write(sys.stderr, "error: interrupted\n")
        return int(ExitCode.FAILURE)
    except Exception as error:  # an unclassified error is a bug
        return _unexpected(args.command, error, as_json)


def main(argv: Sequence[str] | None = None) -> int:
    status = _run(list(sys.argv[1:] if argv is None else argv))
    finish()
    return status


if __name__ == "__main__":
    raise SystemExit(main())
