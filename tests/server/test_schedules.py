"""Scheduled runs under a real `etl-craft server` with a clock the test moves (S4.C, W7)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.core.enums import ActorKind, RunStatus, TriggerKind
from etl_craft.engine import reads
from etl_craft.engine import transitions as tr
from etl_craft.engine.schema import tables as t
from etl_craft_server.schedules import Schedules
from tests.fixtures.harness import Harness, TaskSpec, pipeline_sql
from tests.server.overseer_fixtures import Clock, runs_by_key, schedule, settled, start_server, stop_server

pytestmark = pytest.mark.timeout(240)


def test_catch_up_creates_the_latest_runs_and_records_older_ticks_skipped(harness: Harness) -> None:
    harness.pipeline("daily", [TaskSpec("a"), TaskSpec("b")], [("b", "a", "SUCCESS")])
    schedule(harness, "daily", "0 0 * * *", start=date(2026, 3, 1), catchup="Y", max_catchup_runs=2)
    clock = Clock(harness.root / "clock", datetime(2026, 3, 3, 12, 0, tzinfo=UTC))  # three ticks missed
    server = start_server(harness, clock)
    runs = harness.wait_until(lambda: settled(harness, 3), 120, "three settled runs")
    stop_server(server)

    by_key = runs_by_key(harness)
    assert sorted(by_key) == [
        "schedule:2026-03-01T00:00:00Z",
        "schedule:2026-03-02T00:00:00Z",
        "schedule:2026-03-03T00:00:00Z",
    ]
    missed = by_key["schedule:2026-03-01T00:00:00Z"]
    assert (missed.status, missed.trigger_kind, missed.run_date) == ("SKIPPED", "SCHEDULE", date(2026, 3, 1))
    assert missed.started_by_kind == "SCHEDULE"
    skipped_tasks = harness.task_runs(missed.pipeline_run_id)
    assert {code: (r.status, r.error_message) for code, r in skipped_tasks.items()} == {
        "a": ("SKIPPED", "missed while no overseer was running"),
        "b": ("SKIPPED", "missed while no overseer was running"),
    }
    caught_up = [by_key["schedule:2026-03-02T00:00:00Z"], by_key["schedule:2026-03-03T00:00:00Z"]]
    assert [(r.status, r.run_date, r.trigger_kind) for r in caught_up] == [
        ("SUCCESS", date(2026, 3, 2), "SCHEDULE"),
        ("SUCCESS", date(2026, 3, 3), "SCHEDULE"),
    ]
    assert caught_up[0].pipeline_run_id < caught_up[1].pipeline_run_id  # oldest first
    assert caught_up[0].end_date <= caught_up[1].start_date or caught_up[1].owner_id is None
    for run in caught_up:
        assert {code: r.status for code, r in harness.task_runs(run.pipeline_run_id).items()} == {
            "a": "SUCCESS",
            "b": "SUCCESS",
        }
    assert len(runs) == 3
    assert all(a.status == "SUCCESS" for a in harness.attempts())
    assert len(harness.attempts()) == 4


def test_catchup_n_runs_only_the_latest_tick_and_ticks_follow_the_schedule_zone(harness: Harness) -> None:
    harness.pipeline("ny", [TaskSpec("a")])
    # 23:30 in New York is the next day in UTC: the run date is the tick's date in the schedule's zone.
    schedule(harness, "ny", "30 23 * * *", timezone="America/New_York", start=date(2026, 7, 1))
    clock = Clock(harness.root / "clock", datetime(2026, 7, 3, 12, 0, tzinfo=UTC))
    server = start_server(harness, clock)
    harness.wait_until(lambda: settled(harness, 2), 120, "two settled runs")
    clock.set(datetime(2026, 7, 4, 3, 31, tzinfo=UTC))  # 2026-07-03 23:31 EDT: a tick on time
    harness.wait_until(lambda: settled(harness, 3), 120, "the on-time run")
    stop_server(server)

    by_key = runs_by_key(harness)
    assert {k: (r.status, r.run_date) for k, r in by_key.items()} == {
        "schedule:2026-07-02T03:30:00Z": ("SKIPPED", date(2026, 7, 1)),
        "schedule:2026-07-03T03:30:00Z": ("SUCCESS", date(2026, 7, 2)),
        "schedule:2026-07-04T03:30:00Z": ("SUCCESS", date(2026, 7, 3)),
    }


@pytest.mark.parametrize("policy", ["SKIP", "QUEUE"])
def test_overlap_policy(harness: Harness, policy: str) -> None:
    harness.pipeline("slow", [TaskSpec("a", {"sleep": 6})])
    schedule(harness, "slow", "0 * * * *", start=date(2026, 5, 1), overlap=policy)
    clock = Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 30, tzinfo=UTC))
    server = start_server(harness, clock)
    harness.wait_for_attempt("a", "RUNNING")
    clock.set(datetime(2026, 5, 1, 1, 0, 30, tzinfo=UTC))  # the next tick while the first run is active
    harness.wait_until(lambda: len(harness.runs()) == 2, 60, "the second tick's run")
    second = runs_by_key(harness)["schedule:2026-05-01T01:00:00Z"]
    assert second.status == ("SKIPPED" if policy == "SKIP" else "QUEUED")
    harness.wait_until(lambda: settled(harness, 2), 120, "both runs to end")
    stop_server(server)

    first, second = harness.runs()
    assert first.status == "SUCCESS"
    if policy == "SKIP":
        assert second.status == "SKIPPED"
        assert harness.task_runs(second.pipeline_run_id)["a"].error_message == "previous run still active"
        assert len(harness.attempts()) == 1
    else:
        assert second.status == "SUCCESS"
        assert second.start_date <= first.end_date  # queued while the first ran
        assert len(harness.attempts()) == 2
        assert harness.attempts()[1].started_at >= first.end_date  # and started only after it ended


def test_retries_under_the_server_w7(harness: Harness) -> None:
    """W7: with no cron and no Airflow, a scheduled run retries a failing task by itself."""
    counter = harness.root / "counter"
    harness.pipeline(
        "flaky",
        [
            TaskSpec(
                "a",
                {"fail_times": 1, "counter": str(counter)},
                parameters={"RETRIES": "1", "RETRY_DELAY_SECONDS": "0"},
            )
        ],
    )
    schedule(harness, "flaky", "*/5 * * * *", start=date(2026, 5, 1))
    clock = Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 10, tzinfo=UTC))
    server = start_server(harness, clock)
    (run,) = harness.wait_until(lambda: settled(harness, 1), 120, "the run")
    stop_server(server)

    assert (run.status, run.run_key) == ("SUCCESS", "schedule:2026-05-01T00:00:00Z")
    assert [(a.attempt_number, a.status) for a in harness.attempts("a")] == [(1, "FAILED"), (2, "SUCCESS")]
    assert counter.read_text() == "2"


def test_a_paused_pipeline_records_its_ticks_skipped(harness: Harness) -> None:
    harness.pipeline("held", [TaskSpec("a")])
    schedule(harness, "held", "0 * * * *", start=date(2026, 5, 1))
    assert (
        harness.cli("pause", "--pipeline_code", "held", "--reason", "vendor outage", ETL_CRAFT_ACTOR="ops").returncode
        == 0
    )
    clock = Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 10, tzinfo=UTC))
    server = start_server(harness, clock)
    (run,) = harness.wait_until(lambda: settled(harness, 1), 60, "the tick's run")
    stop_server(server)

    assert run.status == "SKIPPED"
    reason = harness.task_runs(run.pipeline_run_id)["a"].error_message
    assert reason == "the pipeline is paused by ops (vendor outage)"
    assert harness.attempts() == []
    assert harness.rows(t.aud_overseers)[0].stopped_at is not None


def test_a_schedule_changed_while_the_server_runs_takes_effect_without_a_restart(harness: Harness) -> None:
    harness.pipeline("moved", [TaskSpec("a", parameters={"RETRIES": "0"})])
    harness.pipeline("retired", [TaskSpec("a")])
    schedule(harness, "moved", "0 * * * *", start=date(2026, 5, 1))
    schedule(harness, "retired", "0 * * * *", start=date(2026, 5, 1))
    clock = Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 10, tzinfo=UTC))
    server = start_server(harness, clock)
    harness.wait_until(lambda: settled(harness, 2), 60, "the first ticks' runs")

    def reloads() -> int:
        return server.err_path.read_text().count("metadata changed")

    # The metadata version moves on a deletion as on an update: the server reloads after each.
    harness.migrate("DELETE FROM CFG_TASK_PARAMETERS WHERE PARAMETER_NAME = 'RETRIES';\n")
    harness.wait_until(lambda: reloads() == 1, 30, "the reload after a deletion")
    harness.migrate(
        "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '30 * * * *' WHERE PIPELINE_CODE = 'moved';\n"
        "UPDATE CFG_PIPELINES SET ACTIVE_FLAG = 'N' WHERE PIPELINE_CODE = 'retired';\n"
    )
    harness.wait_until(lambda: reloads() == 2, 30, "the reload after an update")
    clock.set(datetime(2026, 5, 1, 1, 0, 10, tzinfo=UTC))  # 00:30 and 01:00 are past
    harness.wait_until(lambda: settled(harness, 3), 60, "the moved schedule's tick")
    stop_server(server)

    keys = sorted((r.pipeline_id, r.run_key, r.status) for r in harness.runs())
    moved_id = keys[0][0]
    # The new schedule's tick ran, the old one's (01:00) did not, and the retired pipeline got none.
    assert [(k, s) for p, k, s in keys if p == moved_id] == [
        ("schedule:2026-05-01T00:00:00Z", "SUCCESS"),
        ("schedule:2026-05-01T00:30:00Z", "SUCCESS"),
    ]
    assert [(k, s) for p, k, s in keys if p != moved_id] == [("schedule:2026-05-01T00:00:00Z", "SUCCESS")]


def test_the_runs_of_a_tick_due_for_many_pipelines_are_inserted_in_one_statement(harness: Harness) -> None:
    """In process, on the harness's Engine DB: five pipelines on one schedule, one of them catching up
    on two ticks and one whose tick already has a run (another overseer created it)."""
    codes = ["p0", "p1", "p2", "p3", "late"]
    harness.migrate(
        "".join(pipeline_sql(code, [TaskSpec("a")], []) for code in codes)
        + "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 0 * * *', SCHEDULE_TIMEZONE = 'America/New_York', "
        "SCHEDULE_START_DATE = '2026-03-03';\n"
        "UPDATE CFG_PIPELINES SET SCHEDULE_START_DATE = '2026-03-01', CATCHUP = 'Y', MAX_CATCHUP_RUNS = 2 "
        "WHERE PIPELINE_CODE = 'late';\n"
    )
    actor = Actor("etl-craft server@test", ActorKind.SCHEDULE)
    with harness.db.read() as conn:
        pipelines = reads.pipelines(conn)
    ids = {p.pipeline_code: p.pipeline_id for p in pipelines}
    tick = "schedule:2026-03-03T05:00:00Z"  # midnight in New York
    with harness.db.write() as conn:
        taken = tr.create_run(
            conn,
            pipeline_id=ids["p3"],
            status=RunStatus.QUEUED,
            trigger_kind=TriggerKind.SCHEDULE,
            actor=actor,
            now=datetime(2026, 3, 3, 5, 0, 1, tzinfo=UTC),
            run_key=tick,
            run_date=date(2026, 3, 3),
        )

    now = datetime(2026, 3, 3, 5, 0, 2, tzinfo=UTC)
    schedules = Schedules(harness.db, "UTC", now, actor)
    with harness.db.read() as conn:
        schedules.load(conn, pipelines)
    statements: list[str] = []

    def seen(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        statements.append(statement)

    sa.event.listen(harness.db.engine, "before_cursor_execute", seen)
    try:
        created = schedules.create_due(now)
    finally:
        sa.event.remove(harness.db.engine, "before_cursor_execute", seen)

    run_inserts = [s for s in statements if s.lstrip().upper().startswith("INSERT INTO AUD_PIPELINES_RUN_LOG")]
    # One for the tick every pipeline shares, one for the second tick "late" catches up on, and one for
    # the SKIPPED tick older than its two caught-up ticks.
    assert len(run_inserts) == 3, run_inserts
    assert sorted((k.pipeline_code, k.at, k.status) for k in created) == sorted(
        [
            ("late", datetime(2026, 3, 1, 5, tzinfo=UTC), "SKIPPED"),
            ("late", datetime(2026, 3, 2, 5, tzinfo=UTC), "QUEUED"),
            ("late", datetime(2026, 3, 3, 5, tzinfo=UTC), "QUEUED"),
            *[(code, datetime(2026, 3, 3, 5, tzinfo=UTC), "QUEUED") for code in ("p0", "p1", "p2")],
        ]
    )
    runs = {(r.pipeline_id, r.run_key): r for r in harness.runs()}
    assert len(runs) == 7
    assert runs[(ids["p3"], tick)].pipeline_run_id == taken  # left as it was
    for code in ("p0", "p1", "p2", "late"):
        run = runs[(ids[code], tick)]
        assert (run.status, run.trigger_kind, run.run_date, run.backfill) == (
            "QUEUED",
            "SCHEDULE",
            date(2026, 3, 3),
            "N",
        )
        assert (run.started_by, run.started_by_kind, run.owner_id, run.end_date) == (
            "etl-craft server@test",
            "SCHEDULE",
            None,
            None,
        )
        assert {
            k.pipeline_run_id
            for k in created
            if k.pipeline_code == code and k.at == datetime(2026, 3, 3, 5, tzinfo=UTC)
        } == {run.pipeline_run_id}
    caught_up = runs[(ids["late"], "schedule:2026-03-02T05:00:00Z")]
    assert (caught_up.status, caught_up.run_date) == ("QUEUED", date(2026, 3, 2))
    assert caught_up.pipeline_run_id < runs[(ids["late"], tick)].pipeline_run_id  # the older tick runs first
    missed = runs[(ids["late"], "schedule:2026-03-01T05:00:00Z")]
    assert missed.status == "SKIPPED"
    assert harness.task_runs(missed.pipeline_run_id)["a"].error_message == "missed while no overseer was running"
    # Every schedule moved on past the tick, the one whose run existed too: nothing is due again.
    assert schedules.create_due(now) == []
    assert {s.pipeline.pipeline_code: s.next_tick for s in schedules.pipelines.values()} == {
        code: datetime(2026, 3, 4, 5, tzinfo=UTC) for code in codes
    }
