"""Web UI sessions: sign-in and sign-out, cookies, the CSRF check and the limit of failed sign-ins."""

from __future__ import annotations

import dataclasses

import pytest
import sqlalchemy as sa

from etl_craft.core.actor import acting_as
from etl_craft.engine.schema.tables import aud_ui_sessions, cfg_users
from etl_craft.services.access.tokens import digest
from etl_craft.services.access.users import create_user, disable_user
from etl_craft_server.api.app import create_app
from tests.server.api.conftest import ADMIN
from tests.server.ui.conftest import PASSWORD, PEOPLE, Ui, csrf, sign_in

pytestmark = pytest.mark.sqlite


def _sessions(ui: Ui, name: str) -> list[sa.Row]:
    query = (
        sa.select(aud_ui_sessions)
        .join(cfg_users, cfg_users.c.user_id == aud_ui_sessions.c.user_id)
        .where(cfg_users.c.user_name == name)
        .order_by(aud_ui_sessions.c.session_id)
    )
    with ui.api.ctx.db.read() as conn:
        return list(conn.execute(query))


def test_a_page_without_a_session_sends_the_browser_to_sign_in_and_back(ui: Ui) -> None:
    browser = ui.client()
    page = browser.get("/ui/pipelines?text=sa&status=FAILED")
    assert page.status_code == 303
    assert page.headers["location"] == "/ui/sign-in?next=/ui/pipelines%3Ftext%3Dsa%26status%3DFAILED"
    response = sign_in(browser, "vera", PASSWORD, "/ui/pipelines")
    assert response.status_code == 303 and response.headers["location"] == "/ui/pipelines"


def test_sign_in_stores_only_the_hash_of_the_cookie_and_sets_safe_cookie_flags(ui: Ui) -> None:
    browser = ui.client()
    form = browser.get("/ui/sign-in")
    pre = form.headers["set-cookie"]
    assert "etl_craft_sign_in=" in pre and "HttpOnly" in pre and "SameSite=lax" in pre and "Path=/ui" in pre
    response = sign_in(browser, "otto", PASSWORD)
    assert response.status_code == 303
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("etl_craft_session="))
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Path=/ui" in cookie and "Secure" not in cookie
    value = browser.cookies.get("etl_craft_session", path="/ui")
    rows = _sessions(ui, "otto")
    assert [(r.session_sha256, r.address, r.ended_at) for r in rows][-1] == (digest(value), "testclient", None)
    assert all(value not in str(tuple(r)) for r in rows)
    assert rows[-1].expires_at > rows[-1].created_at
    page = browser.get("/ui/pipelines")
    assert page.status_code == 200
    assert '<span class="who-name">otto</span>' in page.text and '<span class="role">operator</span>' in page.text
    assert "sales" in page.text


def test_secure_cookies_when_configured_always(ui: Ui) -> None:
    config = ui.api.ctx.config
    orchestration = dataclasses.replace(config.orchestration, ui_cookie_secure="always")
    app = create_app(dataclasses.replace(config, orchestration=orchestration), ui.api.ctx.db)
    from fastapi.testclient import TestClient

    browser = TestClient(app, base_url="https://testserver", follow_redirects=False)
    response = sign_in(browser, "vera", PASSWORD)
    cookie = next(c for c in response.headers.get_list("set-cookie") if c.startswith("etl_craft_session="))
    assert "Secure" in cookie


def test_sign_out_needs_the_sessions_csrf_token_and_ends_the_session(ui: Ui) -> None:
    browser = ui.signed_in("developer")
    page = browser.get("/ui/pipelines")
    value = browser.cookies.get("etl_craft_session", path="/ui")
    refused = browser.post("/ui/sign-out", data={"csrf_token": "0" * 64})
    assert refused.status_code == 403 and "CSRF" in refused.text
    assert _sessions(ui, "dev")[-1].ended_at is None
    assert browser.post("/ui/sign-out", data={}).status_code == 403
    done = browser.post("/ui/sign-out", data={"csrf_token": csrf(page.text)})
    assert done.status_code == 303 and done.headers["location"] == "/ui/sign-in"
    assert _sessions(ui, "dev")[-1].ended_at is not None
    replayed = ui.client()  # the old cookie, replayed, no longer opens a page
    replayed.cookies.set("etl_craft_session", value, path="/ui")
    assert replayed.get("/ui/pipelines").status_code == 303


def test_a_sign_in_form_without_its_cookie_is_refused(ui: Ui) -> None:
    browser = ui.client()
    body = {"user_name": "vera", "password": PASSWORD, "form_token": "forged"}
    response = browser.post("/ui/sign-in", data=body)
    assert response.status_code == 400 and "expired" in response.text
    assert "etl_craft_session" not in browser.cookies


def test_next_never_leaves_the_ui(ui: Ui) -> None:
    for target in ("https://evil.example/", "//evil.example/ui/", "/ui//evil.example", "/api/v1/health"):
        response = sign_in(ui.client(), "vera", PASSWORD, target)
        assert response.headers["location"] == "/ui/pipelines", target


def test_a_disabled_users_session_stops_opening_pages(ui: Ui) -> None:
    with acting_as(ADMIN):
        create_user(ui.api.ctx, "shortlived", "viewer", PASSWORD)
    browser = ui.client()
    assert sign_in(browser, "shortlived", PASSWORD).status_code == 303
    assert browser.get("/ui/pipelines").status_code == 200
    with acting_as(ADMIN):
        disable_user(ui.api.ctx, "shortlived")
    assert browser.get("/ui/pipelines").status_code == 303


def test_failed_sign_ins_are_limited_per_account(ui: Ui) -> None:
    browser = ui.client()
    for _ in range(5):
        assert sign_in(browser, "vera", "wrong passphrase!").status_code == 401
    limited = sign_in(browser, "vera", PASSWORD)  # the right password, too late
    assert limited.status_code == 429 and "wait" in limited.text and int(limited.headers["retry-after"]) > 0
    assert "etl_craft_session" not in browser.cookies


def test_failed_sign_ins_are_limited_per_address(ui: Ui) -> None:
    browser = ui.client()
    for n in range(5):
        assert sign_in(browser, f"nobody{n}", "wrong passphrase!").status_code == 401
    limited = sign_in(browser, PEOPLE["operator"], PASSWORD)
    assert limited.status_code == 429 and "address testclient" in limited.text
