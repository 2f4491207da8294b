"""The pool contract (S5.A, S5.J), one module for both providers: the local pool and the queue pool
with a real `etl-craft worker` process. PostgreSQL only (the queue needs it)."""

from __future__ import annotations

import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from etl_craft.core.actor import Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind, Handler
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine import transitions
from etl_craft.engine.schema import tables as t
from etl_craft.execution.pools.interface import AttemptSpec, ExecutionHandle, HandleState, Pool, SlotKind
from etl_craft.execution.pools.local import LocalPool
from etl_craft.execution.pools.queue import QueuePool
from etl_craft.execution.processes.identity import my_owner_id
from etl_craft.execution.processes.task_process import ChildSpec
from etl_craft.execution.run_loop.leases import LEASE_SECONDS, lease_until
from tests.fixtures.harness import Harness, Started, TaskSpec, process_alive
from tests.fixtures.seed import in_progress_run

pytestmark = pytest.mark.parametrize("dialect", ["postgresql"])
ACTOR = Actor("pool-contract@test", ActorKind.SYSTEM)


@dataclass
class Provider:
    pool: Pool
    owner: str  # who holds the attempts it runs
    worker: Started | None = None


def _worker(harness: Harness, slots: str = "1") -> Started:
    worker = harness.start("worker", "--pool", "contract", "--ingestion-slots", slots, "--warehouse-slots", "1")
    harness.wait_until(
        lambda: any(w.pid == worker.pid and w.status == "ACTIVE" for w in harness.rows(t.aud_workers)),
        60,
        "the worker to register",
    )
    return worker


@pytest.fixture(params=["local", "queue"])
def provider(request: pytest.FixtureRequest, harness: Harness) -> Iterator[Provider]:
    if request.param == "local":
        config = harness.project.load()
        pool = LocalPool(config.path, harness.db.dialect, {SlotKind.INGESTION: 1, SlotKind.WAREHOUSE: 1}, Handler)
        yield Provider(pool, str(my_owner_id()))
        return
    worker = _worker(harness)
    owner = next(w.owner_id for w in harness.rows(t.aud_workers) if w.pid == worker.pid)
    yield Provider(QueuePool(harness.db, "contract"), owner, worker)
    worker.signal(signal.SIGTERM)
    assert worker.wait(60).returncode == 0


def _ready_attempt(harness: Harness, provider: Provider, gate: Path, code: str = "C") -> AttemptSpec:
    """A task held by `gate`, its attempt claimed by this test (local) or queued for the workers."""
    harness.pipeline(code, [TaskSpec("a", {"wait_for": str(gate)})])
    (pipeline,) = [p.pipeline_id for p in harness.rows(t.cfg_pipelines, t.cfg_pipelines.c.pipeline_code == code)]
    (task_id,) = [x.task_id for x in harness.rows(t.cfg_tasks, t.cfg_tasks.c.pipeline_id == pipeline)]
    now = utc_now()
    run_id = in_progress_run(harness.db, pipeline, "pool-contract", now, lease_until(now))
    with harness.db.write() as conn:
        if provider.pool.owner_claims:
            queued = transitions.queue_and_claim_attempt(
                conn,
                pipeline_run_id=run_id,
                task_id=task_id,
                attempts_so_far=None,
                actor=ACTOR,
                owner_id=provider.owner,
                lease_until=lease_until(now),
                host=socket.gethostname(),
                now=now,
            )
        else:
            queued = transitions.queue_attempt(conn, pipeline_run_id=run_id, task_id=task_id, actor=ACTOR, now=now)
    log = harness.root / "logs" / f"{code}.log"
    log.parent.mkdir(exist_ok=True)
    child = ChildSpec(
        queued.attempt_id, provider.owner, str(harness.project.config_path), str(log), ACTOR.name, "SYSTEM"
    )
    return AttemptSpec(
        attempt_id=queued.attempt_id,
        task_run_id=queued.task_run_id,
        pipeline_run_id=run_id,
        task_id=task_id,
        pipeline_code=code,
        task_code="a",
        handler="PYTHON",
        timeout_seconds=0,
        lease_seconds=LEASE_SECONDS,
        child=child,
    )


def _attempt(harness: Harness, attempt_id: int):  # type: ignore[no-untyped-def]
    (row,) = harness.rows(t.aud_task_attempts, t.aud_task_attempts.c.attempt_id == attempt_id)
    return row


def test_submitting_an_attempt_twice_starts_one_process(harness: Harness, provider: Provider, tmp_path: Path) -> None:
    gate = tmp_path / "go"
    spec = _ready_attempt(harness, provider, gate)
    first = provider.pool.submit(spec)
    assert provider.pool.submit(spec) == first
    running = harness.wait_for_attempt("a", "RUNNING")
    assert running.owner_id == provider.owner and running.pid is not None
    assert provider.pool.status(first).state is HandleState.RUNNING
    # One slot of the attempt's kind is taken, the other kind is untouched.
    room = provider.pool.capacity()
    assert (room.free[SlotKind.INGESTION], room.free[SlotKind.WAREHOUSE]) == (0, 1)
    assert [s.handle.attempt_id for s in provider.pool.reconcile() if s.state is HandleState.RUNNING] == [
        spec.attempt_id
    ]
    gate.write_text("go")
    harness.wait_until(lambda: provider.pool.status(first).state is HandleState.EXITED, 90, "the attempt to end")
    (only,) = harness.attempts("a")
    assert (only.attempt_id, only.status, only.owner_id) == (spec.attempt_id, "SUCCESS", provider.owner)
    assert provider.pool.capacity().free[SlotKind.INGESTION] == 1


def test_the_status_of_an_unknown_handle_is_unknown(harness: Harness, provider: Provider) -> None:
    unknown = ExecutionHandle(provider.pool.name, 987654, SlotKind.WAREHOUSE)
    assert provider.pool.status(unknown).state is HandleState.UNKNOWN


def test_a_cancelled_attempt_stops_and_its_late_outcome_is_refused(
    harness: Harness, provider: Provider, tmp_path: Path
) -> None:
    gate = tmp_path / "go"
    spec = _ready_attempt(harness, provider, gate)
    handle = provider.pool.submit(spec)
    running = harness.wait_for_attempt("a", "RUNNING")
    if provider.pool.owner_claims:
        # The local caller ends the attempt itself, then stops its process.
        with harness.db.write() as conn:
            transitions.cancel_attempt(conn, spec.attempt_id, actor=ACTOR, reason="contract", now=utc_now())
    provider.pool.cancel(handle, 2.0)
    harness.wait_until(lambda: provider.pool.status(handle).state is HandleState.EXITED, 60, "the attempt to stop")
    row = _attempt(harness, spec.attempt_id)
    assert row.status == "CANCELLED" and row.owner_id == running.owner_id
    # The owner stops the task process: at once here, at its next heartbeat (10 s) on a worker.
    harness.wait_until(lambda: not process_alive(running.pid), 40, "the task process to stop")
    gate.write_text("go")  # too late: the process was stopped, and a write from it would be fenced
    assert _attempt(harness, spec.attempt_id).status == "CANCELLED"
    with pytest.raises(StaleTransitionError), harness.db.write() as conn:
        transitions.finish_attempt(
            conn,
            spec.attempt_id,
            owner_id=running.owner_id,
            outcome=transitions.AttemptOutcome("SUCCESS"),
            now=utc_now(),
        )
