"""Bad input: 422 naming the field and the value, 413 for a large body, 404 naming an unknown id or
code, and sensitive task parameters masked in every response."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.server.api.conftest import SECRET

pytestmark = pytest.mark.sqlite
P = "/api/v1/projects/default"


def _refused(response, status: int, *fragments: str) -> dict:  # type: ignore[no-untyped-def]
    assert response.status_code == status, response.text
    body = response.json()
    assert body["schema"] == "etl-craft/error/1" and body["http_status"] == status
    for fragment in fragments:
        assert fragment in body["message"], body["message"]
    return body


@pytest.mark.parametrize(
    ("params", "fragments"),
    [
        ({"limit": 0}, ("limit = '0'", "greater than or equal to 1")),
        ({"limit": 101}, ("limit = '101'", "less than or equal to 100")),
        ({"limit": "many"}, ("limit = 'many'", "valid integer")),
        ({"before": -5}, ("before = '-5'",)),
    ],
)
def test_absurd_paging_is_refused_naming_the_field(api, params, fragments) -> None:
    body = _refused(api.get(f"{P}/pipelines/sales/runs", **params), 422, *fragments)
    assert body["exit_name"] == "USAGE" and body["remedy"]


@pytest.mark.parametrize(
    ("path", "payload", "fragment"),
    [
        ("/pipelines/sales/pause", {}, "reason = "),
        ("/pipelines/sales/pause", {"reason": "x" * 2001}, "at most 2000 characters"),
        ("/pipelines/sales/pause", {"reason": "ok", "force": True}, "force = True"),
        ("/pipelines/sales/runs/1/mark", {"status": "DONE", "reason": "r"}, "status = 'DONE'"),
        ("/pipelines/sales/runs", {"run_date": "2026-02-30"}, "run_date = '2026-02-30'"),
        ("/pipelines/sales/backfills", {"first": "2026-01-01", "reason": "r"}, "last = "),
    ],
)
def test_bad_bodies_are_422_naming_the_field(api, path, payload, fragment) -> None:
    _refused(api.post(P + path, payload), 422, fragment)
    with api.ctx.db.read() as conn:  # nothing was changed
        assert conn.execute(sa.select(sa.func.count()).select_from(t.aud_pipeline_pauses)).scalar_one() == 0


def test_a_body_that_is_not_json_is_422(api) -> None:
    response = api.client.post(
        f"{P}/pipelines/sales/pause",
        content=b"{not json",
        headers={**api.headers("operator"), "Content-Type": "application/json"},
    )
    _refused(response, 422, "JSON")


def test_an_oversized_body_is_refused_unread(api) -> None:
    response = api.client.post(f"{P}/pipelines/sales/pause", content=b"x" * 70_000, headers=api.headers("operator"))
    _refused(response, 413, "70000 bytes", "at most 65536 bytes")


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("/pipelines/nosuch", "pipeline 'nosuch'"),
        ("/pipelines/sales/runs/999999", "run 999999"),
        ("/pipelines/sales/runs/999999/steps", "run 999999"),
        ("/pipelines/sales/runs/999999/tasks/extract/explain", "run 999999"),
        ("/pipelines/sales/runs?task_code=nosuch", "task sales.nosuch"),
    ],
)
def test_unknown_ids_and_codes_are_404_naming_them(api, path, fragment) -> None:
    _refused(api.client.get(P + path, headers=api.headers("viewer")), 404, fragment)


def test_another_project_is_404_naming_it(api) -> None:
    _refused(api.get("/api/v1/projects/finance/pipelines"), 404, "project 'finance'")


def test_sensitive_parameters_are_masked_in_every_response(api) -> None:
    steps = api.get(f"{P}/pipelines/sales").json()
    load = next(s for s in steps["steps"] if s["task_code"] == "load")
    assert load["parameters"]["API_TOKEN"] == "***"
    audit = api.get(f"{P}/audit")
    assert audit.status_code == 200
    for path in ("/pipelines", "/pipelines/sales", "/pipelines/sales/graph", "/audit", "/validate"):
        response = api.get(P + path)
        assert SECRET not in response.text, path
        assert not any(api.tokens["viewer"] in value for value in response.headers.values())
