"""`etl-craft user create|passwd|disable`: the people who use the HTTP API (CFG_USERS, scrypt hashes).

The password is read from standard input (one line), so it never appears in a command line, the
shell's history or the process list; at a terminal it is asked for twice without echo.
"""

from __future__ import annotations

import argparse
import getpass
import sys

from etl_craft.cli.framework import Command, add_global_options


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="user_command", metavar="ACTION", required=True)
    create = sub.add_parser("create", help="create a user; its password is read from standard input")
    create.add_argument("--name", required=True, help="the user's name; the actor of what it does")
    create.add_argument("--role", required=True, choices=("viewer", "operator", "developer", "admin"))
    passwd = sub.add_parser("passwd", help="set a user's password, read from standard input")
    passwd.add_argument("--name", required=True)
    disable = sub.add_parser("disable", help="refuse a user's sign-ins from now on (its records stay)")
    disable.add_argument("--name", required=True)
    for action in sub.choices.values():
        add_global_options(action, suppress=True)


def _password() -> str:
    from etl_craft.core.errors import UsageError

    try:
        if sys.stdin.isatty():
            first = getpass.getpass("password: ")
            if getpass.getpass("again: ") != first:
                raise UsageError("the password", found="two different entries", expected="the same password twice")
            return first
        return sys.stdin.readline().rstrip("\r\n")
    except (OSError, ValueError, AttributeError):  # no standard input to read (closed, or none at all)
        raise UsageError(
            "the password",
            found="no standard input to read it from",
            expected="the password on one line of standard input",
            remedy="pipe it in: printf '%s\\n' \"$PASSWORD\" | etl-craft user create --name NAME --role ROLE",
        ) from None


def _run(args: argparse.Namespace) -> int:
    from etl_craft.cli.output import emit
    from etl_craft.services.access import users
    from etl_craft.services.context import open_context

    password = _password() if args.user_command in ("create", "passwd") else ""
    ctx = open_context(args.config)
    try:
        if args.user_command == "create":
            change = users.create_user(ctx, args.name, args.role, password)
        elif args.user_command == "passwd":
            change = users.set_password(ctx, args.name, password)
        else:
            change = users.disable_user(ctx, args.name)
    finally:
        ctx.close()
    emit(args, "user", change, change.message)
    return 0


USER = Command("user", "create users of the HTTP API, set their passwords, disable them", _run, _configure)
