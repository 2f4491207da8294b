"""The UI serves the brand's favicon and logo from its own routes and every page links them."""

from __future__ import annotations

import pytest

from etl_craft.brand import asset
from tests.server.ui.conftest import Ui

pytestmark = pytest.mark.sqlite


def test_the_favicon_and_logo_are_served_by_the_ui_and_linked_from_every_page(ui: Ui) -> None:
    browser = ui.client()
    for name, kind in (
        ("favicon.svg", "image/svg+xml"),
        ("favicon-32.png", "image/png"),
        ("logo-dark.svg", "image/svg+xml"),
    ):
        served = browser.get(f"/ui/brand/{name}")  # no sign-in: the sign-in page shows them
        assert (served.status_code, served.headers["content-type"], served.content) == (200, kind, asset(name))
    sign_in_page = browser.get("/ui/sign-in").text
    assert 'rel="icon" href="/ui/brand/favicon.svg"' in sign_in_page and "data:," not in sign_in_page
    assert '<img src="/ui/brand/logo-dark.svg"' in ui.signed_in("viewer").get("/ui/pipelines").text


def test_an_unknown_or_malformed_asset_name_is_refused(ui: Ui) -> None:
    browser = ui.client()
    missing = browser.get("/ui/brand/logo-huge.svg")
    assert missing.status_code == 404 and "favicon.svg" in missing.text  # the remedy lists the assets there are
    assert browser.get("/ui/brand/..%2Fpages.py").status_code in (404, 422)
    assert browser.get("/ui/brand/LICENSE.md").status_code == 422
