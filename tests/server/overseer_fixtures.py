"""Driving real `etl-craft server` processes: a schedule clock the test moves, and schedule metadata."""

from __future__ import annotations

import signal
from datetime import date, datetime
from pathlib import Path
from typing import Any

from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import Harness, Started


class Clock:
    """The file ETL_CRAFT_SCHEDULE_CLOCK names: the server reads "now" for schedules from it every loop."""

    def __init__(self, path: Path, start: datetime) -> None:
        self.path = path
        self.set(start)

    def set(self, instant: datetime) -> None:
        # Written whole and renamed, so the server never reads half an instant.
        partial = self.path.with_suffix(".partial")
        partial.write_text(instant.isoformat())
        partial.replace(self.path)


def schedule(
    harness: Harness,
    code: str,
    cron: str,
    *,
    timezone: str | None = "UTC",
    start: date | None = None,
    catchup: str = "N",
    max_catchup_runs: int = 1,
    overlap: str = "SKIP",
) -> None:
    """A project migration that puts a pipeline on a schedule."""

    def q(value: object) -> str:
        return "NULL" if value is None else f"'{value}'"

    harness.migrate(
        f"UPDATE CFG_PIPELINES SET RUN_SCHEDULE = {q(cron)}, SCHEDULE_TIMEZONE = {q(timezone)}, "
        f"SCHEDULE_START_DATE = {q(start)}, CATCHUP = {q(catchup)}, MAX_CATCHUP_RUNS = {max_catchup_runs}, "
        f"OVERLAP_POLICY = {q(overlap)} WHERE PIPELINE_CODE = {q(code)} AND ACTIVE_FLAG = 'Y';\n"
    )


def start_server(harness: Harness, clock: Clock | None = None) -> Started:
    env = {"ETL_CRAFT_SCHEDULE_CLOCK": str(clock.path)} if clock else {}
    server = harness.start("server", **env)
    harness.wait_until(lambda: _leader(harness, server.pid), 60, "the server to take the lead")
    return server


def _leader(harness: Harness, pid: int) -> bool:
    return any(r.pid == pid and r.stopped_at is None for r in harness.rows(t.aud_overseers))


def stop_server(server: Started, timeout: float = 120) -> str:
    """SIGTERM, then the server's stderr once it exited 0."""
    server.signal(signal.SIGTERM)
    result = server.wait(timeout)
    assert result.returncode == 0, str(result)
    return result.stderr


def runs_by_key(harness: Harness) -> dict[str, Any]:
    return {r.run_key: r for r in harness.runs()}


def settled(harness: Harness, count: int) -> list[Any] | None:
    """The runs, once there are `count` and all have ended."""
    runs = harness.runs()
    done = len(runs) >= count and all(r.status not in ("QUEUED", "IN-PROGRESS") for r in runs)
    return runs if done else None
