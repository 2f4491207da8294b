"""What transitions NOTIFY on PostgreSQL, received by a real LISTEN connection: the id of each run
whose state changed, delivered at commit and never for a rolled-back change."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from etl_craft.core.actor import Actor
from etl_craft.core.enums import ActorKind
from etl_craft.engine import transitions as tr
from etl_craft.engine.transitions.values import AttemptOutcome
from tests.core.engine.test_engine_reads import OWNER, SYSTEM
from tests.fixtures.project import received
from tests.fixtures.seed import in_progress_run, pipeline_with_tasks

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
# SQLite has no notifications: an overseer on it looks every second instead.
pytestmark = pytest.mark.parametrize("dialect", [pytest.param("postgresql", marks=pytest.mark.postgres)])


def test_an_attempt_end_notifies_its_run_and_attempt_at_commit_only(engine_db, listener) -> None:
    pipeline, tasks = pipeline_with_tasks(engine_db, "p", ["a"])
    run_id = in_progress_run(engine_db, pipeline, OWNER, NOW, NOW)
    with engine_db.write() as conn:
        queued = tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=tasks["a"], actor=SYSTEM, now=NOW)
        tr.claim_attempt(conn, queued.attempt_id, owner_id=OWNER, lease_until=NOW, host="h", now=NOW)
    received(listener)  # what creating and queueing sent

    with pytest.raises(RuntimeError), engine_db.write() as conn:
        tr.finish_attempt(conn, queued.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("SUCCESS"), now=NOW)
        raise RuntimeError("rolled back")
    assert received(listener) == []

    with engine_db.write() as conn:
        tr.finish_attempt(conn, queued.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("SUCCESS"), now=NOW)
    assert received(listener) == [f"ended:{run_id}:{queued.attempt_id}"]


def test_scheduled_runs_created_at_once_notify_each_new_run(engine_db, listener) -> None:
    first, _ = pipeline_with_tasks(engine_db, "p", ["a"])
    second, _ = pipeline_with_tasks(engine_db, "q", ["a"])
    actor = Actor("etl-craft server@test", ActorKind.SCHEDULE)
    key = "schedule:2026-03-01T00:00:00Z"
    with engine_db.write() as conn:
        created = tr.queue_scheduled_runs(
            conn, [(first, key, date(2026, 3, 1)), (second, key, date(2026, 3, 1))], actor=actor, now=NOW
        )
    assert set(created) == {(first, key), (second, key)}
    assert sorted(received(listener)) == sorted(f"run:{run_id}" for run_id in created.values())

    with engine_db.write() as conn:  # both keys used: nothing new, and nobody is woken
        assert tr.queue_scheduled_runs(conn, [(first, key, date(2026, 3, 1))], actor=actor, now=NOW) == {}
    assert received(listener) == []
