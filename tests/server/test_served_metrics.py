"""`/metrics` of a real `etl-craft server`: a scheduled tick's run is admitted, and the scrape shows
the admission in its histogram and the overseer's heartbeat (S6.F)."""

from __future__ import annotations

import re
import time
import urllib.request
from datetime import UTC, date, datetime

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.fixtures.harness import Harness, TaskSpec
from tests.server.overseer_fixtures import Clock, schedule, settled, start_server, stop_server

pytestmark = pytest.mark.timeout(240)


def test_the_server_times_admissions_and_reports_its_heartbeat(harness: Harness) -> None:
    harness.pipeline("minutely", [TaskSpec("a")])
    schedule(harness, "minutely", "* * * * *", start=date(2026, 3, 1))
    token = harness.cli("token", "create", "--name", "prometheus", "--role", "viewer", "--format", "json")
    assert token.returncode == 0, token
    clock = Clock(harness.root / "clock", datetime(2026, 3, 3, 2, 59, 30, tzinfo=UTC))
    server = start_server(harness, clock)
    address = harness.wait_until(
        lambda: re.search(r"Uvicorn running on (http://127\.0\.0\.1:\d+)", server.err_path.read_text()), 60, "the API"
    ).group(1)
    # The overseer plans from the clock when it starts (after the API): move the clock after that.
    harness.wait_until(lambda: "the daily purge" in server.err_path.read_text(), 60, "the overseer to start")
    clock.set(datetime(2026, 3, 3, 3, 0, 1, tzinfo=UTC))
    runs = harness.wait_until(lambda: settled(harness, 1), 120, "the tick's run")
    request = urllib.request.Request(f"{address}/metrics", headers={"Authorization": f"Bearer {token.json()['value']}"})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    stop_server(server)

    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in text_string_to_metric_families(text)
        for s in f.samples
    }
    # The scrape came after the runs ended: each run that ran was admitted once, by this server (a
    # tick missed before the server started is recorded SKIPPED, never admitted).
    ran = [r for r in runs if r.status == "SUCCESS"]
    assert ran and {r.status for r in runs} <= {"SUCCESS", "SKIPPED"}
    assert samples[("etl_craft_admission_seconds_count", ())] == len(ran)
    assert 0 <= samples[("etl_craft_admission_seconds_sum", ())] < 60 * len(ran)
    assert samples[("etl_craft_runs", (("pipeline", "minutely"), ("status", "SUCCESS")))] == len(ran)
    assert samples[("etl_craft_attempts", (("status", "SUCCESS"),))] == len(ran)
    assert abs(samples[("etl_craft_overseer_heartbeat_timestamp_seconds", ())] - time.time()) < 120
    # The overseer's own statements are timed too, not only the scrape's.
    assert samples[("etl_craft_engine_db_statement_seconds_count", ())] > 20
