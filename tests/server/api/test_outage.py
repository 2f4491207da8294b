"""A request while the Engine DB does not answer gets 503 with a retry hint; once it answers again
the same server serves again. The outage is real: PostgreSQL refuses every connection to the database
(ALLOW_CONNECTIONS false) and the server's connections are terminated."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import pytest

from tests.fixtures import postgres as pg

pytestmark = pytest.mark.postgres
P = "/api/v1/projects/default"


@contextmanager
def outage(database: str) -> Iterator[None]:
    with psycopg.connect(pg.admin_dsn(), autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS false')
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (database,))
        try:
            yield
        finally:
            admin.execute(f'ALTER DATABASE "{database}" WITH ALLOW_CONNECTIONS true')


@pytest.mark.parametrize("fresh_api", ["postgresql"], indirect=True)
def test_503_during_an_outage_and_service_after_it(fresh_api) -> None:
    api = fresh_api
    assert api.get(f"{P}/pipelines").status_code == 200
    database = api.project.pg_database
    assert database
    with outage(database):
        for path in ("/api/v1/health", f"{P}/pipelines", f"{P}/pipelines/sales/runs"):
            response = api.get(path)
            assert response.status_code == 503, response.text
            assert response.headers["Retry-After"] == "5"
            body = response.json()
            assert body["exit_name"] == "ENGINE_DB" and "try again in 5 seconds" in body["remedy"]
            assert "Traceback" not in response.text
    listed = api.get(f"{P}/pipelines")
    assert listed.status_code == 200, listed.text
    assert [p["pipeline_code"] for p in listed.json()["pipelines"]] == ["sales"]
