"""Every endpoint × every kind of caller, generated from the endpoint -> minimum role table.

Callers: a token of each role, no credentials, a revoked and an expired token, a user (operator,
signing in with its password) and a disabled user. Allowed callers of a write send a body the
endpoint refuses (422), or address a token that does not exist (404), so the matrix changes
nothing: the 422 or 404 proves the request passed authentication and authorisation.
"""

from __future__ import annotations

import pytest

from etl_craft.core.enums import ApiRole
from etl_craft_server.api.routes import ENDPOINTS, Endpoint

pytestmark = pytest.mark.sqlite

CALLERS = ["viewer", "operator", "developer", "admin", None, "revoked", "expired", "user", "disabled"]
ROLE_OF = {"user": "operator"}  # the user signing in with a password (conftest.USERS)
# No token has id 999999: an allowed revoke (which takes no body to refuse) answers 404 and changes nothing.
SAMPLE = {
    "{project}": "default",
    "{pipeline_code}": "sales",
    "{run_id}": "1",
    "{task_code}": "extract",
    "{token_id}": "999999",
}


def _path(endpoint: Endpoint) -> str:
    path = endpoint.path
    for name, value in SAMPLE.items():
        path = path.replace(name, value)
    return path


def expected_status(endpoint: Endpoint, caller: str | None) -> str:
    if caller in (None, "revoked", "expired", "disabled"):
        return "401"
    return "allowed" if ApiRole(ROLE_OF.get(caller, caller)).includes(endpoint.role) else "403"


CASES = [
    pytest.param(e, caller, id=f"{e.method} {e.path} as {caller or 'no token'}")
    for e in ENDPOINTS
    for caller in CALLERS
]


def test_the_table_covers_every_route_the_app_serves(api) -> None:
    paths = api.client.app.openapi()["paths"]
    served = {(method.upper(), path) for path, operations in paths.items() for method in operations}
    assert served == {(e.method, e.path) for e in ENDPOINTS}


@pytest.mark.parametrize(("endpoint", "caller"), CASES)
def test_role_matrix(api, endpoint: Endpoint, caller: str | None) -> None:
    path = _path(endpoint)
    if endpoint.method == "GET":
        response = api.get(path, kind=caller)
    else:
        response = api.post(path, {"not_a_field": True}, kind=caller)
    expected = expected_status(endpoint, caller)
    if expected == "allowed":
        assert response.status_code not in (401, 403), response.text
        if endpoint.method == "POST":
            assert response.status_code == (404 if "{token_id}" in endpoint.path else 422), response.text
    else:
        assert response.status_code == int(expected), response.text
        assert response.json()["exit_name"] == "ACCESS_DENIED"
