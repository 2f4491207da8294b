"""`etl-craft user create|passwd|disable`: scrypt hashes in CFG_USERS, sign-in over HTTP Basic as the
actor, a disabled user refused, and failed sign-ins limited per user and per address."""

from __future__ import annotations

import base64
import contextlib
import io
import sys

import pytest
import sqlalchemy as sa

from etl_craft.cli.main import main
from etl_craft.engine.schema import tables as t
from etl_craft.services.access.users import password_matches

pytestmark = pytest.mark.sqlite
P = "/api/v1/projects/default"


def _basic(name: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{name}:{password}".encode()).decode()}


def _user_cli(api, monkeypatch, *args: str, stdin: str = "") -> int:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
    with contextlib.redirect_stdout(io.StringIO()):
        return main(["user", *args, "--config", str(api.project.config_path)])


def _row(api, name: str):  # type: ignore[no-untyped-def]
    with api.ctx.db.read() as conn:
        return conn.execute(sa.select(t.cfg_users).where(t.cfg_users.c.user_name == name)).one()


def test_a_user_signs_in_changes_password_and_is_disabled(api, monkeypatch) -> None:
    assert _user_cli(api, monkeypatch, "create", "--name", "pat", "--role", "viewer", stdin="first passphrase!\n") == 0
    row = _row(api, "pat")
    assert row.password_hash.startswith("scrypt$16384$8$1$") and "first passphrase" not in row.password_hash
    assert password_matches(row.password_hash, "first passphrase!") and row.disabled_at is None

    listed = api.client.get(f"{P}/pipelines", headers=_basic("pat", "first passphrase!"))
    assert listed.status_code == 200
    assert _row(api, "pat").last_login_at is not None
    paused = api.client.post(
        f"{P}/pipelines/sales/pause", json={"reason": "r"}, headers=_basic("pat", "first passphrase!")
    )
    assert paused.status_code == 403 and "'pat' with role viewer" in paused.json()["message"]

    assert _user_cli(api, monkeypatch, "passwd", "--name", "pat", stdin="second passphrase\n") == 0
    assert api.client.get(f"{P}/pipelines", headers=_basic("pat", "first passphrase!")).status_code == 401
    assert api.client.get(f"{P}/pipelines", headers=_basic("pat", "second passphrase")).status_code == 200

    assert _user_cli(api, monkeypatch, "disable", "--name", "pat") == 0
    refused = api.client.get(f"{P}/pipelines", headers=_basic("pat", "second passphrase"))
    assert refused.status_code == 401 and "disabled" in refused.json()["message"]
    assert "second passphrase" not in refused.text
    with api.ctx.db.read() as conn:
        actions = conn.execute(
            sa.select(t.aud_actions.c.command, t.aud_actions.c.arguments).where(t.aud_actions.c.command.like("user%"))
        ).all()
    assert [(c, a) for c, a in actions if a["name"] == "pat"] == [
        ("user create", {"name": "pat", "role": "viewer"}),
        ("user passwd", {"name": "pat"}),
        ("user disable", {"name": "pat"}),
    ]


def test_a_short_password_is_refused(api, monkeypatch) -> None:
    assert _user_cli(api, monkeypatch, "create", "--name", "shorty", "--role", "viewer", stdin="short\n") == 2
    with api.ctx.db.read() as conn:
        assert conn.execute(sa.select(t.cfg_users).where(t.cfg_users.c.user_name == "shorty")).all() == []


def test_failed_sign_ins_are_limited(api) -> None:
    api.client.app.state.failed_sign_ins.__init__()  # other tests' failures from this address don't count
    try:
        for _ in range(5):
            assert api.client.get(f"{P}/pipelines", headers=_basic("olga", "wrong password!!")).status_code == 401
        limited = api.client.get(f"{P}/pipelines", headers=_basic("olga", "a long passphrase 1"))
        assert limited.status_code == 429, limited.text
        assert int(limited.headers["Retry-After"]) > 0 and "5 failed sign-ins" in limited.json()["message"]
        assert api.get(f"{P}/pipelines", kind="viewer").status_code == 200  # tokens are not sign-ins
    finally:
        api.client.app.state.failed_sign_ins.__init__()  # the module's other tests sign in from this address
