"""Which notifications wake a run the overseer supervises: payloads sent by real transitions on
PostgreSQL, received through a real LISTEN, read by Events."""

from __future__ import annotations

from etl_craft.core.actor import Actor
from etl_craft.core.enums import ActorKind
from etl_craft.engine import transitions as tr
from etl_craft.engine.transitions.values import AttemptOutcome
from etl_craft_server.events import Events
from tests.core.engine.test_engine_reads import OWNER, SYSTEM
from tests.core.engine.test_notifications import NOW, pytestmark  # noqa: F401 (PostgreSQL only)
from tests.fixtures.project import received
from tests.fixtures.seed import in_progress_run, pipeline_with_tasks


def _ended_attempt(engine_db, run_id: int, task_id: int) -> int:
    with engine_db.write() as conn:
        queued = tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=task_id, actor=SYSTEM, now=NOW)
        tr.claim_attempt(conn, queued.attempt_id, owner_id=OWNER, lease_until=NOW, host="h", now=NOW)
        tr.finish_attempt(conn, queued.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("FAILED"), now=NOW)
    return queued.attempt_id


def test_an_attempt_end_wakes_its_run_unless_the_overseers_own_task_process_ran_it(engine_db, listener) -> None:
    pipeline, tasks = pipeline_with_tasks(engine_db, "p", ["a"])
    other, _ = pipeline_with_tasks(engine_db, "q", ["a"])
    run_id, other_run = (
        in_progress_run(engine_db, pipeline, OWNER, NOW, NOW),
        in_progress_run(engine_db, other, OWNER, NOW, NOW),
    )
    received(listener)  # the runs' creation
    attempt = _ended_attempt(engine_db, run_id, tasks["a"])

    events = Events.parse(received(listener))
    assert events == Events(ended=frozenset({(run_id, attempt)}))
    # Its own task process ran it: the process's exit, right after, wakes the run (one step, not two).
    assert events.wake(run_id, pipeline, own_processes={attempt}) is False
    # A worker, or a process the overseer does not hold, ran it: only the notification tells.
    assert events.wake(run_id, pipeline, own_processes=set()) is True
    assert events.wake(other_run, other, own_processes=set()) is False

    # An operator's change to the run wakes it whoever runs its attempts.
    with engine_db.write() as conn:
        tr.cancel_run(conn, run_id, actor=Actor("ops", ActorKind.HUMAN), reason="test", now=NOW)
    events = Events.parse(received(listener))
    assert events.runs == frozenset({run_id})
    assert events.wake(run_id, pipeline, own_processes={attempt}) is True
    assert Events.parse(["ended:1", "ended:x:2", "run:1:2", "pipeline:", "other:3"]) == Events()
