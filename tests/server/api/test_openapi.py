"""The committed OpenAPI description is what the app serves, and names every endpoint's role."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etl_craft_server.api.app import openapi_text
from etl_craft_server.api.routes import ENDPOINTS

COMMITTED = Path(__file__).parents[3] / "docs/reference/openapi.json"


@pytest.mark.unit
def test_the_committed_description_is_current() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == openapi_text(), "run python -m tools.generate_openapi"


@pytest.mark.sqlite
def test_the_served_description_is_the_committed_one(api) -> None:
    served = api.client.get("/api/v1/openapi.json")
    assert served.status_code == 200
    assert served.json() == json.loads(COMMITTED.read_text(encoding="utf-8"))


@pytest.mark.unit
def test_every_operation_names_its_minimum_role_and_document() -> None:
    paths = json.loads(COMMITTED.read_text(encoding="utf-8"))["paths"]
    for endpoint in ENDPOINTS:
        description = paths[endpoint.path][endpoint.method.lower()]["description"]
        assert f"Minimum role: **{endpoint.role.value}**" in description
        assert f"etl-craft/{endpoint.kind}/1" in description


@pytest.mark.unit
def test_links_name_operations_that_exist() -> None:
    """A created run links to the operations on it (schemathesis follows them in its stateful phase)."""
    paths = json.loads(COMMITTED.read_text(encoding="utf-8"))["paths"]
    operations = {op["operationId"] for methods in paths.values() for op in methods.values()}
    assert len(operations) == len(ENDPOINTS)
    links = paths["/api/v1/projects/{project}/pipelines/{pipeline_code}/runs"]["post"]["responses"]["200"]["links"]
    assert {"run_detail", "cancel_run", "mark"} <= set(links)
    assert {link["operationId"] for link in links.values()} <= operations
