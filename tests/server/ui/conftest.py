"""One throwaway project per module (the API tests' pipeline `sales`, its users and tokens) with a
viewer, an operator and a developer who sign in to the web UI through FastAPI's TestClient."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient

from etl_craft.core.actor import acting_as
from etl_craft.services.access.users import create_user
from etl_craft_server.api.app import create_app
from tests.server.api.conftest import ADMIN, Api, build_api

PASSWORD = "a long ui passphrase"
PEOPLE = {"viewer": "vera", "operator": "otto", "developer": "dev"}


@dataclass
class Ui:
    api: Api

    def client(self) -> TestClient:
        """A browser of its own (its own cookies) on a fresh app: its own limit of failed sign-ins."""
        app = create_app(self.api.ctx.config, self.api.ctx.db)
        return TestClient(app, base_url="http://testserver", follow_redirects=False, raise_server_exceptions=True)

    def signed_in(self, role: str) -> TestClient:
        browser = self.client()
        response = sign_in(browser, PEOPLE[role], PASSWORD)
        assert response.status_code == 303, response.text
        return browser


def form_token(page: str) -> str:
    return re.search(r'name="form_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]


def csrf(page: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', page).group(1)  # type: ignore[union-attr]


def sign_in(browser: TestClient, name: str, password: str, next_path: str = "/ui/pipelines"):  # type: ignore[no-untyped-def]
    page = browser.get("/ui/sign-in")
    assert page.status_code == 200, page.text
    body = {"user_name": name, "password": password, "form_token": form_token(page.text), "next": next_path}
    return browser.post("/ui/sign-in", data=body)


@pytest.fixture(scope="module")
def ui(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ui]:
    built, project = build_api(tmp_path_factory.mktemp("ui"), "sqlite", None)
    with acting_as(ADMIN):
        for role, name in PEOPLE.items():
            create_user(built.ctx, name, role, PASSWORD)
    yield Ui(built)
    built.harness.close()
    project.close()
