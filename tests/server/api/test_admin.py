"""Tokens and users managed over HTTP by an admin: the same operations and documents as `etl-craft
token` and `etl-craft user`, recorded with the admin's token as the actor; no answer but a token's
creation carries a token, and none carries a password. Worker health says who runs attempts."""

from __future__ import annotations

import base64
import hashlib

import sqlalchemy as sa

from etl_craft.engine.schema import tables as t

P = "/api/v1/projects/default"


def _basic(name: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}


def test_tokens_over_http(fresh_api) -> None:
    api = fresh_api
    created = api.post("/api/v1/tokens", {"name": "nightly", "role": "viewer", "expires": "30d"}, kind="admin")
    assert created.status_code == 200, created.text
    doc = created.json()
    value = doc["value"]
    assert (doc["schema"], doc["token"]["name"], doc["token"]["role"]) == ("etl-craft/api-token/1", "nightly", "viewer")
    with api.ctx.db.read() as conn:
        row = conn.execute(sa.select(t.cfg_api_tokens).where(t.cfg_api_tokens.c.name == "nightly")).one()
    assert (row.token_sha256, row.created_by, row.role) == (
        hashlib.sha256(value.encode()).hexdigest(),
        "admin-token",
        "viewer",
    )
    api.tokens["nightly"] = value
    assert api.get(f"{P}/pipelines", kind="nightly").status_code == 200

    listed = api.get("/api/v1/tokens", kind="admin")
    assert listed.status_code == 200, listed.text
    assert listed.json() == api.cli("token", "list")
    assert value not in listed.text and row.token_sha256 not in listed.text

    token_id = next(tk["token_id"] for tk in listed.json()["tokens"] if tk["name"] == "nightly")
    revoked = api.client.post(f"/api/v1/tokens/{token_id}/revoke", headers=api.headers("admin"))
    assert revoked.status_code == 200, revoked.text
    assert (revoked.json()["schema"], revoked.json()["token_id"]) == ("etl-craft/api-token-revoke/1", token_id)
    again = api.client.post(f"/api/v1/tokens/{token_id}/revoke", headers=api.headers("admin"))
    assert again.status_code == 404 and "already revoked" in again.json()["message"], again.text
    assert api.get(f"{P}/pipelines", kind="nightly").status_code == 401
    with api.ctx.db.read() as conn:
        actions = conn.execute(
            sa.select(t.aud_actions.c.command, t.aud_actions.c.actor).where(t.aud_actions.c.command.like("token %"))
        ).all()
    assert ("token create", "admin-token") in actions and ("token revoke", "admin-token") in actions


def test_users_over_http(fresh_api) -> None:
    api = fresh_api
    first, second = "the first passphrase", "the second passphrase"
    made = api.post("/api/v1/users", {"name": "uma", "role": "viewer", "password": first}, kind="admin")
    assert made.status_code == 200, made.text
    assert made.json()["schema"] == "etl-craft/user/1" and first not in made.text
    assert api.client.get(f"{P}/pipelines", headers=_basic("uma", first)).status_code == 200
    changed = api.post("/api/v1/users/passwd", {"name": "uma", "password": second}, kind="admin")
    assert changed.status_code == 200 and second not in changed.text
    assert api.client.get(f"{P}/pipelines", headers=_basic("uma", first)).status_code == 401
    assert api.client.get(f"{P}/pipelines", headers=_basic("uma", second)).status_code == 200
    disabled = api.post("/api/v1/users/disable", {"name": "uma"}, kind="admin")
    assert disabled.status_code == 200, disabled.text
    assert api.client.get(f"{P}/pipelines", headers=_basic("uma", second)).status_code == 401
    with api.ctx.db.read() as conn:
        user = conn.execute(sa.select(t.cfg_users).where(t.cfg_users.c.user_name == "uma")).one()
        actions = conn.execute(
            sa.select(t.aud_actions.c.command, t.aud_actions.c.actor).where(t.aud_actions.c.command.like("user %"))
        ).all()
    assert user.disabled_at is not None and user.role == "viewer"
    assert {("user create", "admin-token"), ("user passwd", "admin-token"), ("user disable", "admin-token")} <= set(
        actions
    )


def test_a_refused_body_never_repeats_a_password(api) -> None:
    for body in (
        {"name": "pat", "role": "viewer", "password": "short-pw-9"},  # too short: the field itself
        {"name": "pat", "password": "a long enough secret 7"},  # no role: the whole body is quoted
    ):
        refused = api.post("/api/v1/users", body, kind="admin")
        assert refused.status_code == 422, refused.text
        assert body["password"] not in refused.text and "***" in refused.text


def test_worker_health_names_who_runs_attempts(api) -> None:
    answer = api.get("/api/v1/workers")
    assert answer.status_code == 200, answer.text
    doc = answer.json()
    assert (doc["schema"], doc["mode"], doc["workers"]) == ("etl-craft/workers/1", "local", [])
    assert "etl-craft server" in doc["attempts_run_by"]


def test_a_taken_name_is_a_conflict_and_an_unprintable_name_bad_input(api) -> None:
    taken = api.post("/api/v1/tokens", {"name": "viewer-token", "role": "viewer"}, kind="admin")
    assert taken.status_code == 409, taken.text
    assert (taken.json()["exit_name"], taken.json()["error"]) == ("USAGE", "NameTakenError")
    assert "a live token with this name" in taken.json()["message"]
    user = api.post("/api/v1/users", {"name": "olga", "role": "viewer", "password": "x" * 20}, kind="admin")
    assert user.status_code == 409 and "a user with this name" in user.json()["message"], user.text
    for body in ({"name": "tab\there", "role": "viewer"}, {"name": "   ", "role": "viewer"}):
        assert api.post("/api/v1/tokens", body, kind="admin").status_code == 422
    past = api.post("/api/v1/tokens", {"name": "dated", "role": "viewer", "expires": "2001-01-01"}, kind="admin")
    assert past.status_code == 422 and "expires = '2001-01-01'" in past.json()["message"], past.text
