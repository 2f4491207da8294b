"""`etl-craft token create|list|revoke`: the bearer tokens of the HTTP API.

A command of the server distribution (the API is what reads tokens); the table and the operations
are core's (CFG_API_TOKENS, `etl_craft.services.access.tokens`), so every write names its actor.
"""

from __future__ import annotations

import argparse

from etl_craft.cli import arguments
from etl_craft.cli.framework import Command, add_global_options


def _configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="token_command", metavar="ACTION", required=True)
    create = sub.add_parser("create", help="create a token and print it once")
    create.add_argument("--name", required=True, help="who or what uses it; the actor of what it does")
    create.add_argument("--role", required=True, choices=("viewer", "operator", "developer", "admin"))
    create.add_argument("--expires", metavar="WHEN", help="90d, 12h, 30m or an ISO date (default: never)")
    sub.add_parser("list", help="list tokens: name, role, expiry, revocation, last use (never the token)")
    revoke = sub.add_parser("revoke", help="revoke one token by its id (token list shows ids)")
    revoke.add_argument("--token-id", required=True, type=arguments.whole_number(1), metavar="INT")
    for action in sub.choices.values():  # --config, --format, ... after the action too
        add_global_options(action, suppress=True)


def _run(args: argparse.Namespace) -> int:
    from etl_craft.cli.output import emit, table
    from etl_craft.cli.text import when
    from etl_craft.services.access import tokens
    from etl_craft.services.context import open_context

    ctx = open_context(args.config)
    try:
        if args.token_command == "create":
            created = tokens.create_token(ctx, args.name, args.role, args.expires)
            emit(args, "api-token", created, [created.value, created.message])
        elif args.token_command == "list":
            listed = tokens.list_tokens(ctx)
            rows = [
                [
                    t.token_id,
                    t.name,
                    t.role,
                    t.created_by,
                    *map(when, (t.created_at, t.expires_at)),
                    *map(when, (t.revoked_at, t.last_used_at)),
                ]
                for t in listed.tokens
            ]
            header = [
                "TOKEN_ID",
                "NAME",
                "ROLE",
                "CREATED_BY",
                "CREATED_AT",
                "EXPIRES_AT",
                "REVOKED_AT",
                "LAST_USED_AT",
            ]
            emit(args, "api-token-list", listed, table(header, rows))
        else:
            revoked = tokens.revoke_token(ctx, args.token_id)
            emit(args, "api-token-revoke", revoked, revoked.message)
    finally:
        ctx.close()
    return 0


TOKEN = Command("token", "create, list and revoke the HTTP API's bearer tokens", _run, _configure)
