"""Tokens and users over HTTP (admin): the operations `etl-craft token` and `etl-craft user` call.

Tokens and users are deployment-wide, so these paths name no project. The answer to creating a
token is the only response that carries a token: its value, shown this once.
"""

from __future__ import annotations

from fastapi import Request
from fastapi.responses import JSONResponse

from etl_craft.core.enums import ApiRole
from etl_craft_server.api.bodies import CreateTokenBody, CreateUserBody, NameBody, PasswordBody
from etl_craft_server.api.endpoints import Admin, RowId, endpoint, respond


@endpoint("GET", "/api/v1/tokens", ApiRole.ADMIN, "api-token-list", "list tokens, never their values (token list)")
def list_tokens(request: Request, bearer: Admin) -> JSONResponse:
    from etl_craft.services.access.tokens import list_tokens

    return respond(request, bearer, "api-token-list", list_tokens)


@endpoint("POST", "/api/v1/tokens", ApiRole.ADMIN, "api-token", "create a token (etl-craft token create)")
def create_token(request: Request, bearer: Admin, body: CreateTokenBody) -> JSONResponse:
    """The answer carries the token's value once; the Engine DB keeps only its SHA-256."""
    from etl_craft.services.access.tokens import create_token

    return respond(request, bearer, "api-token", lambda ctx: create_token(ctx, body.name, body.role, body.expires))


@endpoint(
    "POST",
    "/api/v1/tokens/{token_id}/revoke",
    ApiRole.ADMIN,
    "api-token-revoke",
    "revoke one token by its id (etl-craft token revoke --token-id)",
)
def revoke_token(request: Request, bearer: Admin, token_id: RowId) -> JSONResponse:
    """Addressed by id as interface.md has it: the path names the token, so there is no body."""
    from etl_craft.services.access.tokens import revoke_token

    return respond(request, bearer, "api-token-revoke", lambda ctx: revoke_token(ctx, token_id))


@endpoint("POST", "/api/v1/users", ApiRole.ADMIN, "user", "create a user (etl-craft user create)")
def create_user(request: Request, bearer: Admin, body: CreateUserBody) -> JSONResponse:
    from etl_craft.services.access.users import create_user

    return respond(request, bearer, "user", lambda ctx: create_user(ctx, body.name, body.role, body.password))


@endpoint("POST", "/api/v1/users/passwd", ApiRole.ADMIN, "user", "set a user's password (etl-craft user passwd)")
def set_password(request: Request, bearer: Admin, body: PasswordBody) -> JSONResponse:
    from etl_craft.services.access.users import set_password

    return respond(request, bearer, "user", lambda ctx: set_password(ctx, body.name, body.password))


@endpoint("POST", "/api/v1/users/disable", ApiRole.ADMIN, "user", "refuse a user's sign-ins (etl-craft user disable)")
def disable_user(request: Request, bearer: Admin, body: NameBody) -> JSONResponse:
    from etl_craft.services.access.users import disable_user

    return respond(request, bearer, "user", lambda ctx: disable_user(ctx, body.name))
