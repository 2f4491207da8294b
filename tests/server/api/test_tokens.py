"""`etl-craft token create|list|revoke`: the value is shown once and stored only as its SHA-256; the
API records a token's last use and refuses it once revoked; each command is in AUD_ACTIONS."""

from __future__ import annotations

import hashlib

import pytest
import sqlalchemy as sa

from etl_craft.core.errors import UsageError
from etl_craft.engine.schema import tables as t
from etl_craft.services.access.tokens import create_token

P = "/api/v1/projects/default"


def test_create_list_use_and_revoke(fresh_api) -> None:
    api = fresh_api
    created = api.cli("token", "create", "--name", "nightly", "--role", "developer", "--expires", "12h")
    value = created["value"]
    assert created["schema"] == "etl-craft/api-token/1" and created["token"]["role"] == "developer"
    with api.ctx.db.read() as conn:
        row = conn.execute(sa.select(t.cfg_api_tokens).where(t.cfg_api_tokens.c.name == "nightly")).one()
    assert row.token_sha256 == hashlib.sha256(value.encode()).hexdigest()
    assert value not in str(tuple(row)) and row.last_used_at is None and row.expires_at is not None

    listed = api.cli("token", "list")
    assert value not in str(listed) and row.token_sha256 not in str(listed)
    nightly = next(tk for tk in listed["tokens"] if tk["name"] == "nightly")
    assert (nightly["role"], nightly["revoked_at"], nightly["last_used_at"]) == ("developer", None, None)

    api.tokens["nightly"] = value
    assert api.get(f"{P}/pipelines", kind="nightly").status_code == 200
    with api.ctx.db.read() as conn:
        used = conn.execute(
            sa.select(t.cfg_api_tokens.c.last_used_at).where(t.cfg_api_tokens.c.name == "nightly")
        ).scalar_one()
    assert used is not None

    revoked = api.cli("token", "revoke", "--token-id", str(nightly["token_id"]))
    assert (revoked["token_id"], revoked["name"]) == (nightly["token_id"], "nightly")
    with api.ctx.db.read() as conn:
        live = (
            conn.execute(sa.select(t.cfg_api_tokens.c.name).where(t.cfg_api_tokens.c.revoked_at.is_(None)))
            .scalars()
            .all()
        )
    assert "nightly" not in live and "viewer-token" in live  # that token only
    refused = api.get(f"{P}/pipelines", kind="nightly")
    assert refused.status_code == 401 and "revoked" in refused.json()["message"]
    assert value not in refused.text
    with api.ctx.db.read() as conn:
        commands = conn.execute(
            sa.select(t.aud_actions.c.command, t.aud_actions.c.arguments).where(t.aud_actions.c.command.like("token%"))
        ).all()
    created_args = next(args for command, args in commands if command == "token create" and args["name"] == "nightly")
    assert created_args == {"name": "nightly", "role": "developer", "expires": "12h"}
    revoked_args = {"id": nightly["token_id"], "name": "nightly"}
    assert ("token revoke", revoked_args) in [(c, a) for c, a in commands]


@pytest.mark.sqlite
@pytest.mark.parametrize(
    ("name", "role", "expires", "fragment"),
    [
        ("", "viewer", None, "--name"),
        ("bot", "root", None, "--role: found 'root'"),
        ("bot", "viewer", "yesterday", "--expires: found 'yesterday'"),
        ("bot", "viewer", "2001-01-01", "--expires: found '2001-01-01'"),
        ("viewer-token", "viewer", None, "a live token with this name"),
    ],
)
def test_bad_token_requests_are_refused(api, name, role, expires, fragment) -> None:
    with pytest.raises(UsageError, match=fragment):
        create_token(api.ctx, name, role, expires)
