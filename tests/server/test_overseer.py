"""Leadership, crash recovery, runs started elsewhere, cancellation and shutdown under real `etl-craft
server` processes (S4.A, S4.B, S4.E), and the CLI's run date in the project time zone (W12)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import psycopg
import pytest

from etl_craft.core.actor import host_name
from etl_craft.engine.dialects.postgresql.locks import advisory_key
from etl_craft.engine.schema import tables as t
from etl_craft.execution.processes.identity import descendants
from etl_craft_server.leadership import LEADERSHIP_LOCK
from tests.core.alerts.test_webhooks import KEY, deliveries, use_webhooks
from tests.fixtures.harness import Harness, Started, TaskSpec, pipeline_dependency, process_alive
from tests.fixtures.postgres import admin_dsn
from tests.server.overseer_fixtures import Clock, schedule, settled, start_server, stop_server

pytestmark = pytest.mark.timeout(240)


def _overseers(harness: Harness) -> list:
    return harness.rows(t.aud_overseers, order_by=t.aud_overseers.c.overseer_id)


def _no_live_attempts(harness: Harness) -> None:
    assert [a for a in harness.attempts() if a.status in ("QUEUED", "CLAIMED", "RUNNING")] == []


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_server_whose_lock_session_ends_stops_so_that_one_server_leads(harness: Harness) -> None:
    """The overseer lock lives as long as its PostgreSQL session. When that session ends (here an
    administrator's pg_terminate_backend), another server may take the lock, so this one stops at its
    next heartbeat and exits ENGINE_DB (12) saying why; a new server then leads."""
    server = start_server(harness)
    key = advisory_key(harness.db.schema, LEADERSHIP_LOCK) & 0xFFFFFFFFFFFFFFFF
    with harness.db.engine.connect() as conn:
        holder = conn.exec_driver_sql(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = %s AND objid = %s"
            " AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            (key >> 32, key & 0xFFFFFFFF),
        ).scalar_one()
        assert conn.exec_driver_sql("SELECT pg_terminate_backend(%s)", (holder,)).scalar_one() is True
    result = server.wait(60)
    assert result.returncode == 12, str(result)
    assert "lost its leadership: the Engine DB session holding the overseer lock ended" in result.stderr
    rows = _overseers(harness)
    assert [(r.pid, r.stopped_at is not None) for r in rows] == [(server.pid, True)]
    stop_server(start_server(harness))
    assert [r.stopped_at is not None for r in _overseers(harness)] == [True, True]


@contextmanager
def _engine_db_outage(harness: Harness) -> Iterator[None]:
    """The Engine DB closed to new sessions and every session on it ended but the one holding the
    overseer lock (so the server still leads), until the block ends."""
    key = advisory_key(harness.db.schema, LEADERSHIP_LOCK) & 0xFFFFFFFFFFFFFFFF
    database = harness.db.engine.url.database
    with psycopg.connect(admin_dsn(), autocommit=True) as admin:
        holder = admin.execute(
            "SELECT l.pid FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND l.granted AND l.classid = %s AND l.objid = %s AND d.datname = %s",
            (key >> 32, key & 0xFFFFFFFF, database),
        ).fetchone()[0]
        admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS false")
        try:
            ended = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> %s",
                (database, holder),
            ).fetchall()
            assert ended and all(row[0] for row in ended)
            yield
        finally:
            admin.execute(f"ALTER DATABASE {database} ALLOW_CONNECTIONS true")


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_server_rides_out_an_engine_db_that_stops_answering(harness: Harness) -> None:
    """While the Engine DB does not answer and its lock's session lives, the server keeps leading
    through failed passes, says so once, and schedules the tick that fell due meanwhile once the
    Engine DB answers again."""
    harness.pipeline("hourly", [TaskSpec("a")])
    schedule(harness, "hourly", "0 * * * *", start=date(2026, 5, 1))
    clock = Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 30, tzinfo=UTC))
    server = start_server(harness, clock)
    harness.wait_until(lambda: settled(harness, 1), 60, "the first tick's run")
    with _engine_db_outage(harness):
        clock.set(datetime(2026, 5, 1, 1, 0, 30, tzinfo=UTC))  # a tick falls due during the outage
        harness.wait_until(lambda: "the Engine DB did not answer" in server.err_path.read_text(), 30, "the warning")
        time.sleep(5)  # a few failed passes
        assert server.process.poll() is None
    harness.wait_until(lambda: settled(harness, 2), 60, "the run of the tick due during the outage")
    stderr = stop_server(server)

    assert stderr.count("the Engine DB did not answer") == 1
    assert stderr.count("could not LISTEN for Engine DB events") == 1  # once per outage, not every pass
    assert "the Engine DB answers again after" in stderr
    assert "listening for Engine DB events again" in stderr
    assert {(r.run_key, r.status) for r in harness.runs()} == {
        ("schedule:2026-05-01T00:00:00Z", "SUCCESS"),
        ("schedule:2026-05-01T01:00:00Z", "SUCCESS"),
    }
    assert [(a.attempt_number, a.status) for a in harness.attempts("a")] == [(1, "SUCCESS"), (1, "SUCCESS")]
    assert [(r.pid, r.stopped_at is not None) for r in _overseers(harness)] == [(server.pid, True)]


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_server_stopped_while_the_engine_db_does_not_answer_stops_its_task_processes(harness: Harness) -> None:
    """SIGTERM twice during an outage: the server stops its task process and exits 0 although it cannot
    record the stop; the attempt, still RUNNING under the gone server, is then recorded LOST."""
    clock = _hourly(harness, "slow", [TaskSpec("a", {"sleep": 120})])
    server = start_server(harness, clock)
    running = harness.wait_for_attempt("a", "RUNNING")
    with _engine_db_outage(harness):
        harness.wait_until(lambda: "the Engine DB did not answer" in server.err_path.read_text(), 30, "the warning")
        server.signal(signal.SIGTERM)
        harness.wait_until(lambda: "no new run or task starts" in server.err_path.read_text(), 30, "the shutdown")
        server.signal(signal.SIGTERM)  # the second: stop the attempts now, not after the grace
        result = server.wait(60)
        assert result.returncode == 0, str(result)
        assert "its task processes were stopped, but the Engine DB did not answer" in result.stderr
        assert "answers again" not in result.stderr
        harness.wait_until(lambda: not process_alive(running.pid), 10, "the task process to end")
    (attempt,) = harness.attempts("a")
    assert (attempt.attempt_id, attempt.status, attempt.owner_id) == (running.attempt_id, "RUNNING", running.owner_id)
    assert harness.cli("reconcile").returncode == 0
    (attempt,) = harness.attempts("a")
    assert attempt.status == "LOST"
    (run,) = harness.runs()
    assert (run.status, run.owner_id) == ("IN-PROGRESS", None)


def _held_downstream(harness: Harness) -> tuple[Started, Any, Any]:
    """`down` gated on `up`, both due at 00:00Z under one server: up's run runs a long task, and down's
    run is held by the server (QUEUED, owned, a stored gate wait). Returns the server and both runs."""
    harness.project.orchestration = "  Mode: local\n  Gate_wait_minutes: 60\n"
    harness.project.write_config()
    harness.pipeline("up", [TaskSpec("u", {"sleep": 120})])
    harness.pipeline("down", [TaskSpec("d")])
    harness.migrate(pipeline_dependency("down", "up"))
    for code in ("up", "down"):
        schedule(harness, code, "0 * * * *", start=date(2026, 5, 1))
    server = start_server(harness, Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 30, tzinfo=UTC)))
    harness.wait_for_attempt("u", "RUNNING")
    harness.wait_until(lambda: harness.rows(t.aud_gate_waits), 60, "down's stored gate wait")
    runs = {r.status: r for r in harness.runs()}
    assert sorted(runs) == ["IN-PROGRESS", "QUEUED"]
    up, down = runs["IN-PROGRESS"], runs["QUEUED"]  # up's run runs, down's waits for it
    assert down.owner_id == up.owner_id and down.lease_expires_at is not None  # held by the server
    return server, up, down


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_stopping_server_releases_the_runs_it_held_for_their_gates(harness: Harness) -> None:
    server, _up, down = _held_downstream(harness)
    server.signal(signal.SIGTERM)
    harness.wait_until(lambda: "no new run or task starts" in server.err_path.read_text(), 30, "the shutdown")
    server.signal(signal.SIGTERM)  # stop the long task now
    assert server.wait(60).returncode == 0
    run = next(r for r in harness.runs() if r.pipeline_run_id == down.pipeline_run_id)
    assert (run.status, run.owner_id, run.lease_expires_at) == ("QUEUED", None, None)


@pytest.mark.parametrize("dialect", ["postgresql"])
def test_a_server_stopped_during_an_outage_leaves_its_held_runs_to_reconciliation(harness: Harness) -> None:
    """The release cannot be written while the Engine DB does not answer: the run stays held by the
    stopped server (it says so), and reconciliation releases it, its owner being gone."""
    server, up, down = _held_downstream(harness)
    with _engine_db_outage(harness):
        harness.wait_until(lambda: "the Engine DB did not answer" in server.err_path.read_text(), 30, "the warning")
        server.signal(signal.SIGTERM)
        harness.wait_until(lambda: "no new run or task starts" in server.err_path.read_text(), 30, "the shutdown")
        server.signal(signal.SIGTERM)
        result = server.wait(60)
        assert result.returncode == 0, str(result)
    assert (
        f"pipeline_run_id={down.pipeline_run_id} stays held until its lease ends: the Engine DB did not answer"
        in result.stderr
    )
    run = next(r for r in harness.runs() if r.pipeline_run_id == down.pipeline_run_id)
    assert (run.status, run.owner_id) == ("QUEUED", down.owner_id)
    assert harness.cli("reconcile").returncode == 0
    runs = {r.pipeline_run_id: r for r in harness.runs()}
    assert (runs[down.pipeline_run_id].status, runs[down.pipeline_run_id].owner_id) == ("QUEUED", None)
    assert (runs[up.pipeline_run_id].status, runs[up.pipeline_run_id].owner_id) == ("IN-PROGRESS", None)
    assert [a.status for a in harness.attempts("u")] == ["LOST"]


def _hourly(harness: Harness, code: str, tasks: list[TaskSpec], deps=()) -> Clock:
    """A pipeline due once, at 2026-05-01 00:00Z, on a clock that stays there."""
    harness.pipeline(code, tasks, list(deps))
    schedule(harness, code, "0 * * * *", start=date(2026, 5, 1))
    return Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 30, tzinfo=UTC))


def test_of_two_servers_exactly_one_leads_and_the_other_names_it(harness: Harness) -> None:
    first, second = harness.start("server"), harness.start("server")
    # The loser exits at once with LOCK_TIMEOUT (14); the winner keeps running.
    refused = harness.wait_until(
        lambda: next((s for s in (first, second) if s.process.poll() is not None), None), 60, "one server to exit"
    )
    leader = second if refused is first else first
    result = refused.wait(10)
    assert result.returncode == 14, str(result)
    assert leader.process.poll() is None
    running = harness.wait_until(lambda: [r for r in _overseers(harness) if r.stopped_at is None], 30, "the row")
    assert [(r.host, r.pid) for r in running] == [(host_name(), leader.pid)]
    assert f"on {host_name()} (pid {leader.pid}" in result.stderr
    assert f"since {running[0].started_at:%Y-%m-%d %H:%M:%S}Z" in result.stderr
    assert "Stop that server first (SIGTERM)" in result.stderr

    stderr = stop_server(leader)
    assert "leader" in stderr and f"overseer {running[0].overseer_id} stopped" in stderr
    assert "up to 8 task process(es) at once across its runs" in stderr  # the server-wide pool, by default
    assert "password" not in stderr.lower()
    rows = _overseers(harness)
    assert len(rows) == 1  # the refused server wrote nothing
    assert rows[0].stopped_at is not None and rows[0].stopped_by == rows[0].started_by
    # The lock went with the process: a new server leads at once.
    stop_server(start_server(harness))
    assert [r.stopped_at is not None for r in _overseers(harness)] == [True, True]


def test_kill_9_of_the_server_mid_run_then_a_new_server_finishes_the_run(
    harness: Harness, start_receiver, monkeypatch
) -> None:
    receiver = start_receiver(KEY)
    use_webhooks(harness, monkeypatch, receiver.url, extra="        events: [attempt_lost]\n")
    clock = _hourly(
        harness, "p", [TaskSpec("a", {"sleep": 120, "rows": 2}), TaskSpec("b", {"rows": 3})], [("b", "a", "SUCCESS")]
    )
    crashed = start_server(harness, clock)
    running = harness.wait_for_attempt("a", "RUNNING")
    harness.wait_until(lambda: running.pid in descendants(crashed.pid), 30, "the task process")
    crashed.process.kill()
    crashed.wait(30)
    assert process_alive(running.pid)  # its own session: it outlives the overseer, unsupervised
    harness.migrate(
        "UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{\"rows\": 2}' WHERE PARAMETER_VALUE LIKE '%sleep%';\n"
    )

    successor = start_server(harness, clock)
    # A third server names the live overseer, never the dead one whose row was left open.
    refused = harness.cli("server", timeout=60)
    assert refused.returncode == 14, str(refused)
    assert f"(pid {successor.pid}," in refused.stderr and f"(pid {crashed.pid}," not in refused.stderr
    runs = harness.wait_until(lambda: settled(harness, 1), 120, "the run to end")
    stop_server(successor)

    assert [(r.status, r.owner_id, r.run_key) for r in runs] == [("SUCCESS", None, "schedule:2026-05-01T00:00:00Z")]
    assert {code: (r.status, r.rows_written) for code, r in harness.task_runs().items()} == {
        "a": ("SUCCESS", 2),
        "b": ("SUCCESS", 3),
    }
    attempts = [(a.task_code, a.attempt_number, a.status) for a in harness.attempts()]
    assert attempts == [("a", 1, "LOST"), ("a", 2, "SUCCESS"), ("b", 1, "SUCCESS")]
    lost = harness.attempts("a")[0]
    assert lost.error_message.startswith("attempt 1 was lost: owner ") and str(crashed.pid) in lost.owner_id
    assert not process_alive(running.pid)  # the orphan was stopped, not left to write after the fence
    _no_live_attempts(harness)
    first, second = _overseers(harness)
    assert (first.pid, first.stopped_at) == (crashed.pid, None)  # a hard kill leaves its heartbeat only
    assert (second.pid, second.stopped_at is not None) == (successor.pid, True)
    # The successor told the alert channels about the lost attempt, as a foreground run would.
    assert [(d.json["event"], d.json["task"]["attempt_id"], d.valid_signature) for d in receiver.deliveries] == [
        ("attempt_lost", lost.attempt_id, True)
    ]
    assert [(r.event, r.attempt_id, r.status) for r in deliveries(harness)] == [
        ("attempt_lost", lost.attempt_id, "DELIVERED")
    ]


def test_a_cli_run_stopped_by_sigterm_is_taken_over_by_the_server(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"sleep": 120}), TaskSpec("b", {"rows": 3})], [("b", "a", "SUCCESS")])
    foreground = harness.start("run", "--pipeline_code", "p")
    harness.wait_for_attempt("a", "RUNNING")
    foreground.signal(signal.SIGTERM)
    assert foreground.wait(60).returncode == 22
    assert [(r.status, r.owner_id, r.trigger_kind) for r in harness.runs()] == [("IN-PROGRESS", None, "MANUAL")]
    harness.migrate(
        "UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '{\"rows\": 5}' WHERE PARAMETER_VALUE LIKE '%sleep%';\n"
    )

    server = start_server(harness)
    runs = harness.wait_until(lambda: settled(harness, 1), 120, "the run to end")
    stderr = stop_server(server)

    assert [(r.status, r.owner_id) for r in runs] == [("SUCCESS", None)]
    assert f"p: pipeline_run_id={runs[0].pipeline_run_id} taken over and resumed" in stderr
    assert [(a.task_code, a.status, a.error_message) for a in harness.attempts()] == [
        ("a", "FAILED", "stopped: the parent etl-craft run received SIGTERM"),
        ("a", "SUCCESS", None),
        ("b", "SUCCESS", None),
    ]
    assert harness.task_runs()["a"].rows_written == 5
    assert harness.attempts()[1].owner_id.split(":")[1] == str(server.pid)


def test_a_run_created_by_the_cli_while_the_server_runs_is_picked_up(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"rows": 2}), TaskSpec("b", {"rows": 3})], [("b", "a", "SUCCESS")])
    server = start_server(harness)
    created = harness.cli("run", "--pipeline_code", "p", "--init-only")
    assert created.returncode == 0, str(created)
    runs = harness.wait_until(lambda: settled(harness, 1), 120, "the server to finish the run")
    stderr = stop_server(server)

    assert [(r.status, r.owner_id, r.trigger_kind) for r in runs] == [("SUCCESS", None, "MANUAL")]
    assert f"p: pipeline_run_id={runs[0].pipeline_run_id} taken over and resumed" in stderr
    assert {code: (r.status, r.rows_written) for code, r in harness.task_runs().items()} == {
        "a": ("SUCCESS", 2),
        "b": ("SUCCESS", 3),
    }
    assert all(a.owner_id.split(":")[1] == str(server.pid) for a in harness.attempts())


def test_a_cli_run_while_the_server_runs_is_left_to_the_cli(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("a", {"sleep": 4, "rows": 2})])
    server = start_server(harness)
    foreground = harness.cli("run", "--pipeline_code", "p")
    assert foreground.returncode == 0, str(foreground)
    stop_server(server)

    runs = harness.runs()
    assert [(r.status, r.owner_id, r.trigger_kind) for r in runs] == [("SUCCESS", None, "MANUAL")]
    attempts = harness.attempts()
    assert [(a.status, a.attempt_number) for a in attempts] == [("SUCCESS", 1)]
    # The attempt's owner is the foreground `run`, never the server.
    assert str(server.pid) not in attempts[0].owner_id


def test_cancel_while_the_server_supervises_stops_the_run(harness: Harness) -> None:
    clock = _hourly(harness, "p", [TaskSpec("a", {"sleep": 120}), TaskSpec("b")], [("b", "a", "SUCCESS")])
    server = start_server(harness, clock)
    running = harness.wait_for_attempt("a", "RUNNING")
    done = harness.cli("cancel", "--pipeline_code", "p", "--reason", "wrong feed", ETL_CRAFT_ACTOR="alice")
    assert done.returncode == 0, str(done)
    harness.wait_until(lambda: not process_alive(running.pid), 30, "the task process to stop")
    # The server neither restarts the cancelled run nor creates another one for the same tick.
    harness.wait_until(lambda: harness.attempts("a")[-1].status == "CANCELLED", 30, "the attempt to end")
    stop_server(server)

    runs = harness.runs()
    assert [(r.status, r.owner_id, r.ended_by) for r in runs] == [("CANCELLED", None, "alice")]
    assert {code: r.status for code, r in harness.task_runs().items()} == {"a": "CANCELLED"}
    assert [(a.status, a.error_message) for a in harness.attempts()] == [
        ("CANCELLED", "cancelled by alice: wrong feed")
    ]


def test_shutdown_lets_running_attempts_finish_within_the_grace(harness: Harness) -> None:
    clock = _hourly(harness, "p", [TaskSpec("a", {"sleep": 4, "rows": 2}), TaskSpec("b")], [("b", "a", "SUCCESS")])
    server = start_server(harness, clock)
    harness.wait_for_attempt("a", "RUNNING")
    stderr = stop_server(server)

    assert "received SIGTERM: no new run or task starts; waiting up to 60 s" in stderr
    attempts = [(a.task_code, a.status) for a in harness.attempts()]
    assert attempts == [("a", "SUCCESS")]  # finished in the grace; b was not started after the signal
    run = harness.runs()[0]
    assert (run.status, run.owner_id) == ("IN-PROGRESS", None)
    assert {code: r.status for code, r in harness.task_runs().items()} == {"a": "SUCCESS"}
    # The next server resumes the run where it stopped.
    successor = start_server(harness, clock)
    harness.wait_until(lambda: settled(harness, 1), 120, "the run to end")
    stop_server(successor)
    assert [(a.task_code, a.status) for a in harness.attempts()] == [("a", "SUCCESS"), ("b", "SUCCESS")]
    assert harness.runs()[0].status == "SUCCESS"


def test_shutdown_stops_attempts_still_running_after_the_grace(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: local\n  Shutdown_grace_seconds: 1\n"
    harness.project.write_config()
    clock = _hourly(harness, "p", [TaskSpec("a", {"sleep": 120})])
    server = start_server(harness, clock)
    running = harness.wait_for_attempt("a", "RUNNING")
    family = [running.pid, *descendants(running.pid)]
    stop_server(server, timeout=60)

    assert not any(process_alive(pid) for pid in family)
    assert [(a.status, a.error_message) for a in harness.attempts()] == [
        ("FAILED", "stopped: the parent etl-craft server received SIGTERM")
    ]
    run = harness.runs()[0]
    assert (run.status, run.owner_id, run.lease_expires_at) == ("IN-PROGRESS", None, None)


def _most_at_once(attempts: list) -> int:
    """The most attempts RUNNING at the same instant."""
    changes = sorted([(a.started_at, 1) for a in attempts] + [(a.ended_at, -1) for a in attempts])
    live = most = 0
    for _instant, change in changes:
        live += change
        most = max(most, live)
    return most


def test_max_parallel_tasks_bounds_the_servers_task_processes_across_pipelines(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: local\n  Max_parallel_tasks: 2\n"
    harness.project.write_config()
    codes = ["p0", "p1", "p2", "p3"]
    for code in codes:
        harness.pipeline(code, [TaskSpec("a", {"sleep": 2, "rows": 1})])
        schedule(harness, code, "0 * * * *", start=date(2026, 5, 1))
    clock = Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 30, tzinfo=UTC))
    server = start_server(harness, clock)
    runs = harness.wait_until(lambda: settled(harness, 4), 120, "the four runs to end")
    stderr = stop_server(server)

    assert [(r.status, r.run_key) for r in runs] == [("SUCCESS", "schedule:2026-05-01T00:00:00Z")] * 4
    for run in runs:  # all four were due at once
        assert f"pipeline_run_id={run.pipeline_run_id} admitted" in stderr
    attempts = harness.attempts()
    assert [(a.task_code, a.status) for a in attempts] == [("a", "SUCCESS")] * 4
    # One pool of two task processes for the whole server, not two per pipeline.
    assert _most_at_once(attempts) == 2


def test_a_pipeline_whose_graph_is_broken_waits_while_the_others_due_with_it_run(harness: Harness) -> None:
    harness.pipeline("good", [TaskSpec("a", {"rows": 1})])
    harness.pipeline("broken", [TaskSpec("a"), TaskSpec("b")], [("a", "b", "SUCCESS"), ("b", "a", "SUCCESS")])
    for code in ("good", "broken"):
        schedule(harness, code, "0 * * * *", start=date(2026, 5, 1))
    clock = Clock(harness.root / "clock", datetime(2026, 5, 1, 0, 0, 30, tzinfo=UTC))
    server = start_server(harness, clock)
    harness.wait_until(
        lambda: sorted(r.status for r in harness.runs()) == ["QUEUED", "SUCCESS"], 60, "the good run to end"
    )
    stderr = stop_server(server)

    runs = {r.pipeline_id: r for r in harness.runs()}
    statuses = sorted((r.status, r.owner_id) for r in runs.values())
    assert statuses == [("QUEUED", None), ("SUCCESS", None)]
    assert "broken: its runs wait until the metadata is fixed:" in stderr
    assert [(a.task_code, a.status) for a in harness.attempts()] == [("a", "SUCCESS")]


def test_w12_a_cli_run_date_is_today_in_the_project_time_zone(harness: Harness) -> None:
    # Of two zones a day apart, at least one has a date other than UTC's at any moment.
    zone = next(
        z
        for z in ("Pacific/Kiritimati", "Pacific/Pago_Pago")
        if datetime.now(ZoneInfo(z)).date() != datetime.now(UTC).date()
    )
    harness.project.orchestration = f"  Mode: local\n  Timezone: {zone}\n"
    harness.project.write_config()
    harness.pipeline("p", [TaskSpec("a")])
    before = datetime.now(ZoneInfo(zone)).date()
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    after = datetime.now(ZoneInfo(zone)).date()
    run = harness.runs()[0]
    assert run.run_date in (before, after)
    assert run.run_date != datetime.now(UTC).date() or before != after
    assert abs(run.run_date - datetime.now(UTC).date()) == timedelta(days=1)


def test_remote_mode_refuses_the_server(harness: Harness) -> None:
    harness.project.orchestration = "  Mode: remote\n"
    harness.project.write_config()
    refused = harness.cli("server", timeout=60)
    assert refused.returncode == 18, str(refused)
    assert "found Orchestration.Mode: remote" in refused.stderr
    assert "set Orchestration.Mode to local" in refused.stderr
    assert _overseers(harness) == []
