"""The demo project on its own schedules for a simulated week under `etl-craft server`, with kill -9.

The schedule clock moves a day at a time while no server runs, so each day's ticks come due at once:
the latest tick of each pipeline runs and the older ones are recorded SKIPPED (CATCHUP 'N'). On some
days, chosen at random (CHAOS_SEED reproduces a failure), the server is killed -9 at a random moment
and a new one reconciles and finishes the day. The second delivery of source files arrives mid-week.

Afterwards: every tick of every schedule has exactly one run, nothing is left unfinished, and the
warehouse holds every delivered record exactly once (the reconciliation query of the demo).
"""

from __future__ import annotations

import os
import random
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import duckdb
import pytest
import sqlalchemy as sa

from etl_craft.config.loader import load_config
from etl_craft.core import cron
from etl_craft.engine.database import EngineDb, open_engine_db
from etl_craft.engine.schema import tables as t
from etl_craft.services.demo.walkthrough import create_warehouse, drop_batch, write_project
from tests.core.demo.conftest import demo_env
from tests.core.demo.test_reconciliation import LANDING, source_records
from tests.fixtures.cli import run_cli
from tests.fixtures.harness import Started
from tests.server.overseer_fixtures import Clock

pytestmark = [pytest.mark.chaos, pytest.mark.sqlite, pytest.mark.duckdb, pytest.mark.timeout(900)]

DAYS = 7
SECOND_DELIVERY_DAY = 4
CLIENTS = ("alpha", "beta", "gamma")
MISSED = "missed while no overseer was running"


class Week:
    def __init__(self, folder: Path, seed: int) -> None:
        self.folder, self.rng, self.seed = folder, random.Random(seed), seed
        self.clock_path = folder / "schedule-clock"
        self.env = demo_env(ETL_CRAFT_CONFIG=str(folder / "craft-connector.yml"))
        self.servers: list[Started] = []
        self.db: EngineDb = None  # type: ignore[assignment]

    def cli(self, *args: str) -> None:
        result = run_cli(*args, env=self.env, cwd=self.folder, timeout=300)
        assert result.returncode == 0, str(result)

    def start_server(self) -> Started:
        env = {**self.env, "ETL_CRAFT_SCHEDULE_CLOCK": str(self.clock_path)}
        server = Started(["server"], env, self.folder / "servers" / str(len(self.servers)))
        self.servers.append(server)
        self.wait(lambda: self._leads(server.pid), 60, "the server to lead")
        return server

    def _leads(self, pid: int) -> bool:
        with self.db.read() as conn:
            row = conn.execute(sa.select(t.aud_overseers.c.stopped_at).where(t.aud_overseers.c.pid == pid)).first()
        return row is not None and row.stopped_at is None

    def wait(self, check, timeout: float, what: str):  # type: ignore[no-untyped-def]
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = check()
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"seed {self.seed}: timed out after {timeout}s waiting for {what}")

    def unfinished(self) -> int:
        runs = t.aud_pipelines_run_log
        with self.db.read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count()).where(runs.c.status.in_(("QUEUED", "IN-PROGRESS")))
                ).scalar_one()
            )

    def scheduled_runs(self) -> int:
        runs = t.aud_pipelines_run_log
        with self.db.read() as conn:
            return int(conn.execute(sa.select(sa.func.count()).where(runs.c.trigger_kind == "SCHEDULE")).scalar_one())

    def day(self, number: int, kill: bool) -> None:
        before = self.scheduled_runs()
        server = self.start_server()
        # The day's ticks are recorded within the server's first pass.
        self.wait(lambda: self.scheduled_runs() > before, 60, f"day {number}'s runs")
        if kill:
            time.sleep(self.rng.uniform(0.2, 6.0))
            server.process.kill()
            server.wait(30)
            server = self.start_server()
        self.wait(lambda: self.unfinished() == 0, 300, f"day {number}'s runs to end")
        server.signal(signal.SIGTERM)
        stopped = server.wait(120)
        assert stopped.returncode == 0, str(stopped)

    def close(self) -> None:
        for server in self.servers:
            if server.process.poll() is None:
                server.process.kill()
                server.wait(30)
        if self.db is not None:
            self.db.dispose()


@pytest.fixture
def week(tmp_path: Path) -> Iterator[Week]:
    seed = int(os.environ.get("CHAOS_SEED") or random.randrange(1 << 30))
    folder = tmp_path / "support-insights"
    write_project(folder)
    create_warehouse(folder)
    w = Week(folder, seed)
    w.cli("init-db")
    w.cli("migrate")
    w.db = open_engine_db(load_config(folder / "craft-connector.yml", w.env))
    w.cli("run", "--pipeline_code", "support_setup")
    yield w
    w.close()


def _schedules(db: EngineDb) -> dict[str, tuple[int, str, str, datetime]]:
    pipelines = t.cfg_pipelines
    with db.read() as conn:
        rows = conn.execute(
            sa.select(
                pipelines.c.pipeline_id,
                pipelines.c.pipeline_code,
                pipelines.c.run_schedule,
                pipelines.c.schedule_timezone,
                pipelines.c.create_date,
            ).where(pipelines.c.active_flag == "Y", pipelines.c.run_schedule.is_not(None))
        ).all()
    return {r.pipeline_code: (r.pipeline_id, r.run_schedule, r.schedule_timezone, r.create_date) for r in rows}


def _expected_ticks(expression: str, zone: str, after: datetime, until: datetime) -> list[str]:
    keys, tick = [], cron.next_after(expression, after.replace(tzinfo=UTC), ZoneInfo(zone))
    while tick <= until:
        keys.append(f"schedule:{tick:%Y-%m-%dT%H:%M:%SZ}")
        tick = cron.next_after(expression, tick, ZoneInfo(zone))
    return keys


def test_the_demo_runs_a_simulated_week_on_its_schedules_through_kill_9(week: Week) -> None:
    schedules = _schedules(week.db)
    start = max(created for *_, created in schedules.values()).replace(tzinfo=UTC)
    killed_days = set(week.rng.sample(range(1, DAYS + 1), 3))
    day_ends = []
    for number in range(1, DAYS + 1):
        if number == SECOND_DELIVERY_DAY:
            drop_batch(week.folder, 2)
        day_ends.append(start + timedelta(days=number))
        Clock(week.clock_path, day_ends[-1])
        week.day(number, kill=number in killed_days)
    context = f"seed {week.seed}, killed on days {sorted(killed_days)}"

    runs, attempts = t.aud_pipelines_run_log, t.aud_task_attempts
    with week.db.read() as conn:
        run_rows = conn.execute(sa.select(runs).where(runs.c.trigger_kind == "SCHEDULE")).all()
        attempt_rows = conn.execute(sa.select(attempts.c.status, attempts.c.error_message)).all()
        task_rows = conn.execute(
            sa.select(
                t.aud_task_run_log.c.pipeline_run_id, t.aud_task_run_log.c.status, t.aud_task_run_log.c.error_message
            )
        ).all()

    # Every tick of the week has exactly one run: the day's latest ran, the others were recorded missed.
    skipped_reasons = {(r.pipeline_run_id, r.error_message) for r in task_rows if r.status == "SKIPPED"}
    for code, (pipeline_id, expression, zone, created) in schedules.items():
        expected = _expected_ticks(expression, zone, created, day_ends[-1])
        mine = [r for r in run_rows if r.pipeline_id == pipeline_id]
        assert sorted(r.run_key for r in mine) == expected, f"{code}: {context}"
        ran = {r.run_key for r in mine if r.status != "SKIPPED"}
        latest_each_day = {max(k for k in expected if k <= f"schedule:{end:%Y-%m-%dT%H:%M:%SZ}") for end in day_ends}
        assert ran == latest_each_day, f"{code}: {context}"
        assert {r.status for r in mine if r.run_key in ran} == {"SUCCESS"}, f"{code}: {context}"
        for run in mine:
            if run.run_key not in ran:
                assert (run.pipeline_run_id, MISSED) in skipped_reasons, f"{code} {run.run_key}: {context}"
            assert (
                run.run_date
                == datetime.strptime(run.run_key, "schedule:%Y-%m-%dT%H:%M:%SZ")
                .replace(tzinfo=UTC)
                .astimezone(ZoneInfo(zone))
                .date()
            )
    # Nothing is left unfinished, and every attempt a kill cut short is recorded LOST and was retried.
    assert week.unfinished() == 0, context
    assert {s for s, _ in attempt_rows} <= {"SUCCESS", "LOST", "FAILED"}, context
    for status, message in attempt_rows:
        if status != "SUCCESS":
            assert status == "LOST" and message.startswith("attempt "), (status, message, context)

    # The warehouse: every delivered record landed once, every ticket is in the fact or rejected.
    with duckdb.connect(str(week.folder / "warehouse.duckdb"), read_only=True) as conn:
        for client in CLIENTS:
            records = source_records(client)
            landed = conn.execute(
                f"SELECT COUNT(*), COUNT(DISTINCT (source_file, source_position)) FROM {LANDING[client]}"
            ).fetchone()
            assert landed == (len(records), len(records)), f"{client}: {context}"
            active = {
                key
                for (key,) in conn.execute(
                    "SELECT ticket_key FROM dm.ticket_fact WHERE ACTIVE_FLAG = 'Y' AND client = ?", [client.upper()]
                ).fetchall()
            }
            rejected = {
                key
                for (key,) in conn.execute(
                    "SELECT ticket_key FROM dq.rejected_tickets WHERE checked_table = ?", [f"stg.{client}_tickets"]
                ).fetchall()
            }
            assert active | rejected == set(records) and not active & rejected, f"{client}: {context}"
        doubled = conn.execute(
            "SELECT ticket_key FROM dm.ticket_fact WHERE ACTIVE_FLAG = 'Y' GROUP BY ticket_key HAVING COUNT(*) > 1"
        ).fetchall()
        assert doubled == [], context
