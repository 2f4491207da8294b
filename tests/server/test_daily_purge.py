"""The server purges at Retention.Daily_at (S6.A), with the schedule clock the test moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from etl_craft.core.clock import utc_now
from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, TaskSpec
from tests.fixtures.seed import _insert
from tests.server.overseer_fixtures import Clock, start_server, stop_server

pytestmark = pytest.mark.timeout(240)


def test_the_server_purges_once_a_day_at_daily_at(harness: Harness) -> None:
    harness.project.extra_sections = "Retention:\n  Daily_at: '03:00'\n"
    harness.project.write_config()
    harness.pipeline("nightly", [TaskSpec("a")])
    pipeline = harness.rows(t.cfg_pipelines)[0].pipeline_id
    old = utc_now() - timedelta(days=500)
    with harness.db.write() as conn:
        gone, kept = (
            _insert(
                conn,
                t.aud_pipelines_run_log,
                pipeline_id=pipeline,
                status="SUCCESS",
                start_date=old + timedelta(hours=h),
            )
            for h in (0, 1)
        )
    clock = Clock(harness.root / "clock", datetime(2026, 3, 3, 2, 59, tzinfo=UTC))
    server = start_server(harness, clock)
    # The overseer plans the purge when it starts (after the lead is taken): move the clock after that.
    planned = "the daily purge (Retention.Daily_at) runs next at 2026-03-03T03:00:00+00:00"
    harness.wait_until(lambda: planned in server.err_path.read_text(), 60, "the purge to be planned")
    # Before 03:00 nothing is purged.
    assert not harness.rows(t.aud_actions, t.aud_actions.c.command == "purge")
    clock.set(datetime(2026, 3, 3, 3, 0, 30, tzinfo=UTC))
    action = harness.wait_until(
        lambda: harness.rows(t.aud_actions, t.aud_actions.c.command == "purge"), 60, "the purge"
    )[0]
    clock.set(datetime(2026, 3, 3, 3, 30, tzinfo=UTC))  # later the same day: no second purge
    stderr = stop_server(server)

    assert action.actor.startswith("etl-craft server@") and action.actor_kind == "SYSTEM"
    assert action.arguments["removed"]["AUD_PIPELINES_RUN_LOG"] == 1
    assert [r.pipeline_run_id for r in harness.runs()] == [kept]  # the newest run of a pipeline stays
    assert gone != kept
    assert len(harness.rows(t.aud_actions, t.aud_actions.c.command == "purge")) == 1
    assert "purge removed 1 row(s)" in stderr
