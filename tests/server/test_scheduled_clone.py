"""The server clones every Cloning.Every_minutes (S6.E), with the schedule clock the test moves."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest

from etl_craft.engine.schema import tables as t
from tests.core.cloning.test_clone import _engine_rows, _mirror_rows
from tests.fixtures.harness import Harness, TaskSpec
from tests.fixtures.seed import _insert
from tests.server.overseer_fixtures import Clock, start_server, stop_server

pytestmark = [pytest.mark.timeout(240), pytest.mark.duckdb]


def test_the_server_clones_on_its_own_schedule(harness: Harness) -> None:
    harness.project.extra_sections = (
        "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n"
        "Cloning:\n  Enabled: true\n  Scope: aud\n  Every_minutes: 10\n"
    )
    harness.project.write_config()
    harness.pipeline("nightly", [TaskSpec("a")])
    pipeline = harness.rows(t.cfg_pipelines)[0].pipeline_id
    with harness.db.write() as conn:
        first = _insert(conn, t.aud_pipelines_run_log, pipeline_id=pipeline, status="SUCCESS")
    time.sleep(2.2)  # older than the clone's settle time
    start = datetime(2026, 3, 3, 2, 0, tzinfo=UTC)
    clock = Clock(harness.root / "clock", start)
    server = start_server(harness, clock)
    harness.wait_until(lambda: "cloned " in server.err_path.read_text(), 60, "the first clone at start")
    with harness.db.write() as conn:
        second = _insert(conn, t.aud_pipelines_run_log, pipeline_id=pipeline, status="SUCCESS")
    time.sleep(2.2)
    clock.set(start + timedelta(minutes=5))  # not yet due: no second clone
    time.sleep(2)
    assert server.err_path.read_text().count("cloned ") == 1
    clock.set(start + timedelta(minutes=10, seconds=30))
    harness.wait_until(lambda: server.err_path.read_text().count("cloned ") == 2, 60, "the second clone")
    stop_server(server)

    mirrored = _mirror_rows(harness.project, "AUD_PIPELINES_RUN_LOG")
    assert [r[0] for r in mirrored] == [first, second]
    assert mirrored == _engine_rows(harness.db, "AUD_PIPELINES_RUN_LOG")
    # AUD_OVERSEERS changed when the server stopped, after its last clone: the mirror lags until the next.
