"""The state machine of runs and attempts: each allowed transition succeeds; every disallowed start
status and every wrong owner raises StaleTransitionError and changes nothing. Both dialects."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.core.enums import ActorKind, OffsetType, RunStatus, TriggerKind
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine import transitions as tr
from etl_craft.engine.records import gate_records
from etl_craft.engine.schema import tables as t
from etl_craft.engine.transitions.values import AttemptOutcome, Counts, StoredOffset

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=1)
ALICE = Actor("alice@ops", ActorKind.HUMAN)
SYSTEM = Actor("etl-craft@host", ActorKind.SYSTEM)
OWNER, OTHER = "host:1:boot:1:aaaaaaaa", "host:2:boot:2:bbbbbbbb"
RUN_STATUSES = ["QUEUED", "IN-PROGRESS", "SUCCESS", "FAILED", "SKIPPED", "CANCELLED"]
ATTEMPT_STATUSES = ["QUEUED", "CLAIMED", "RUNNING", "SUCCESS", "FAILED", "TIMED_OUT", "CANCELLED", "LOST"]


@pytest.fixture
def world(engine_db):
    with engine_db.write() as conn:
        pipeline = conn.execute(
            t.cfg_pipelines.insert()
            .values(pipeline_code="p", pipeline_name="P", refresh_type="FULL")
            .returning(t.cfg_pipelines.c.pipeline_id)
        ).scalar_one()
        task = conn.execute(
            t.cfg_tasks.insert()
            .values(task_code="a", task_type="ETL", pipeline_id=pipeline, handler="PYTHON")
            .returning(t.cfg_tasks.c.task_id)
        ).scalar_one()
    return engine_db, pipeline, task


def _run(db, pipeline, status="IN-PROGRESS", owner=None, key=None):
    with db.write() as conn:
        return tr.create_run(
            conn,
            pipeline_id=pipeline,
            status=RunStatus(status) if status != "QUEUED" else RunStatus.QUEUED,
            trigger_kind=TriggerKind.MANUAL,
            actor=ALICE,
            now=NOW,
            run_key=key,
            owner_id=owner,
            lease_until=LATER if owner else None,
        )


def _force_run_status(db, run_id, status):
    """Put a run in a status for a test (an engine write that bypasses the state machine on purpose)."""
    with db.write() as conn:
        conn.execute(
            t.aud_pipelines_run_log.update()
            .where(t.aud_pipelines_run_log.c.pipeline_run_id == run_id)
            .values(status=status)
        )


def _attempt(db, run_id, task, status="QUEUED", owner=None):
    """A task run with one attempt in `status` (written directly, as a fixture)."""
    with db.write() as conn:
        queued = tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=task, actor=SYSTEM, now=NOW)
        if status != "QUEUED":
            conn.execute(
                t.aud_task_attempts.update()
                .where(t.aud_task_attempts.c.attempt_id == queued.attempt_id)
                .values(status=status, owner_id=owner, lease_expires_at=LATER)
            )
    return queued


def _row(db, table, **where):
    with db.read() as conn:
        return conn.execute(sa.select(table).filter_by(**where)).one()


def _rows(db, table):
    with db.read() as conn:
        return conn.execute(sa.select(table)).all()


# --- runs ------------------------------------------------------------------------------------


def test_create_run_records_the_actor_and_refuses_a_second_in_progress_run(world) -> None:
    db, pipeline, _task = world
    run_id = _run(db, pipeline, key="daily:1")
    row = _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id)
    assert (row.status, row.started_by, row.started_by_kind, row.trigger_kind, row.backfill) == (
        "IN-PROGRESS",
        "alice@ops",
        "HUMAN",
        "MANUAL",
        "N",
    )
    with pytest.raises(StaleTransitionError) as caught:
        _run(db, pipeline)
    assert f"run {run_id} (daily:1, IN-PROGRESS" in caught.value.message
    _force_run_status(db, run_id, "SUCCESS")
    with pytest.raises(StaleTransitionError):
        _run(db, pipeline, key="daily:1")


@pytest.mark.parametrize("status", RUN_STATUSES)
def test_start_run(world, status: str) -> None:
    db, pipeline, _ = world
    run_id = _run(db, pipeline, "IN-PROGRESS")
    _force_run_status(db, run_id, status)
    allowed = status in ("QUEUED", "IN-PROGRESS")
    with db.write() as conn:
        if allowed:
            tr.start_run(conn, run_id, owner_id=OWNER, lease_until=LATER, now=NOW)
        else:
            with pytest.raises(StaleTransitionError):
                tr.start_run(conn, run_id, owner_id=OWNER, lease_until=LATER, now=NOW)
    row = _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id)
    assert row.status == ("IN-PROGRESS" if allowed else status)
    assert row.owner_id == (OWNER if allowed else None)


def test_start_run_refuses_a_live_owner_but_takes_an_expired_one(world) -> None:
    db, pipeline, _ = world
    run_id = _run(db, pipeline, owner=OTHER)
    with db.write() as conn, pytest.raises(StaleTransitionError) as caught:
        tr.start_run(conn, run_id, owner_id=OWNER, lease_until=LATER, now=NOW)
    assert OTHER in caught.value.message
    with db.write() as conn:
        tr.start_run(
            conn, run_id, owner_id=OWNER, lease_until=LATER + timedelta(minutes=5), now=LATER + timedelta(seconds=1)
        )
    assert _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id).owner_id == OWNER


def _pipeline(db, code: str) -> int:
    with db.write() as conn:
        return conn.execute(
            t.cfg_pipelines.insert()
            .values(pipeline_code=code, pipeline_name=code.upper(), refresh_type="FULL")
            .returning(t.cfg_pipelines.c.pipeline_id)
        ).scalar_one()


def _runs_by_id(db, run_ids):
    runs = t.aud_pipelines_run_log
    with db.read() as conn:
        rows = conn.execute(
            sa.select(runs.c.pipeline_run_id, runs.c.status, runs.c.owner_id).where(runs.c.pipeline_run_id.in_(run_ids))
        )
        return {row.pipeline_run_id: (row.status, row.owner_id) for row in rows}


def test_admit_ungated_runs_admits_free_queued_runs_of_pipelines_without_pipeline_gates(world) -> None:
    db, plain, _ = world
    gated, upstream, held, waiting, loose, retired = (
        _pipeline(db, code) for code in ("gated", "upstream", "held", "waiting", "loose", "retired")
    )
    deps = t.cfg_pipeline_dependency
    with db.write() as conn:
        conn.execute(
            deps.insert(),
            [
                {"pipeline_id": gated, "depends_on_pipeline_id": upstream, "dependency_type": "SUCCESS"},
                # A dependency on an inactive pipeline is no gate (as the gates themselves judge it).
                {"pipeline_id": loose, "depends_on_pipeline_id": retired, "dependency_type": "SUCCESS"},
            ],
        )
        conn.execute(t.cfg_pipelines.update().where(t.cfg_pipelines.c.pipeline_id == retired).values(active_flag="N"))
    queued = {
        "plain": _run(db, plain, "QUEUED"),
        "gated": _run(db, gated, "QUEUED"),
        "held": _run(db, held, "QUEUED", owner=OTHER),
        "waiting": _run(db, waiting, "QUEUED"),
        "loose": _run(db, loose, "QUEUED"),
    }
    finished = _run(db, upstream, "SUCCESS")
    with db.write() as conn:
        gate_records.save_wait(conn, queued["waiting"], None, gate_records.StoredWait(NOW, LATER, 1, LATER))
    with db.write() as conn:
        admitted = tr.admit_ungated_runs(conn, [*queued.values(), finished], owner_id=OWNER, lease_until=LATER, now=NOW)
    assert sorted(admitted) == sorted([queued["plain"], queued["loose"]])
    assert _runs_by_id(db, [*queued.values(), finished]) == {
        queued["plain"]: ("IN-PROGRESS", OWNER),
        queued["gated"]: ("QUEUED", None),
        queued["held"]: ("QUEUED", OTHER),
        queued["waiting"]: ("QUEUED", None),
        queued["loose"]: ("IN-PROGRESS", OWNER),
        finished: ("SUCCESS", None),
    }
    assert _row(db, t.aud_pipelines_run_log, pipeline_run_id=queued["plain"]).lease_expires_at is not None


def test_admit_ungated_runs_admits_nothing_when_a_pipeline_has_a_run_in_progress(world) -> None:
    db, plain, _ = world
    other = _pipeline(db, "other")
    waiting_behind = _run(db, plain, "QUEUED")
    running = _run(db, plain, "IN-PROGRESS")
    free = _run(db, other, "QUEUED")
    with db.write() as conn, pytest.raises(StaleTransitionError) as caught:
        tr.admit_ungated_runs(conn, [waiting_behind, free], owner_id=OWNER, lease_until=LATER, now=NOW)
    assert "another admitter started a run" in caught.value.message
    assert _runs_by_id(db, [waiting_behind, running, free]) == {
        waiting_behind: ("QUEUED", None),
        running: ("IN-PROGRESS", None),
        free: ("QUEUED", None),
    }


@pytest.mark.parametrize("status", RUN_STATUSES)
def test_finish_run(world, status: str) -> None:
    db, pipeline, _ = world
    run_id = _run(db, pipeline, owner=OWNER)
    _force_run_status(db, run_id, status)
    allowed = status == "IN-PROGRESS"
    with db.write() as conn:

        def call():
            return tr.finish_run(
                conn, run_id, status=RunStatus.SUCCESS, actor=SYSTEM, now=LATER, owner_id=OWNER, sla_status="MET"
            )

        if allowed:
            call()
        else:
            with pytest.raises(StaleTransitionError):
                call()
    row = _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id)
    if allowed:
        assert (row.status, row.ended_by, row.ended_by_kind, row.sla_status, row.owner_id) == (
            "SUCCESS",
            SYSTEM.name,
            "SYSTEM",
            "MET",
            None,
        )
        assert row.end_date == LATER
    else:
        assert row.status == status and row.end_date is None


def test_finish_run_refuses_another_owner_and_a_claimed_or_running_attempt(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline, owner=OWNER)
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.finish_run(conn, run_id, status=RunStatus.SUCCESS, actor=SYSTEM, now=LATER, owner_id=OTHER)
    _attempt(db, run_id, task, "RUNNING", OWNER)
    with db.write() as conn, pytest.raises(StaleTransitionError) as caught:
        tr.finish_run(conn, run_id, status=RunStatus.SUCCESS, actor=SYSTEM, now=LATER, owner_id=OWNER)
    assert "no claimed or running attempt" in caught.value.message
    assert _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id).status == "IN-PROGRESS"


def test_a_queued_run_ends_skipped_from_queued(world) -> None:
    db, pipeline, _ = world
    run_id = _run(db, pipeline, "QUEUED")
    with db.write() as conn:
        tr.finish_run(conn, run_id, status=RunStatus.SKIPPED, actor=SYSTEM, now=LATER, from_status=RunStatus.QUEUED)
    assert _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id).status == "SKIPPED"


def test_a_met_sla_stays_met_and_a_repair_publishes_one_revision(world) -> None:
    db, pipeline, _ = world
    run_id = _run(db, pipeline)
    with db.write() as conn:
        tr.finish_run(conn, run_id, status=RunStatus.SUCCESS, actor=SYSTEM, now=LATER, sla_status="MET")
        tr.reopen_run(conn, run_id, actor=ALICE, reason="fix", now=LATER)
    reopened = _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id)
    assert (reopened.status, reopened.repair_pending, reopened.output_revision) == ("IN-PROGRESS", "Y", 1)
    with db.write() as conn:
        tr.finish_run(conn, run_id, status=RunStatus.SUCCESS, actor=SYSTEM, now=LATER, sla_status="BREACHED")
    ended = _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id)
    assert (ended.sla_status, ended.repair_pending, ended.output_revision) == ("MET", "N", 2)


@pytest.mark.parametrize("status", RUN_STATUSES)
def test_reopen_run(world, status: str) -> None:
    db, pipeline, _ = world
    run_id = _run(db, pipeline)
    _force_run_status(db, run_id, status)
    allowed = status in ("SUCCESS", "FAILED", "SKIPPED", "CANCELLED")
    with db.write() as conn:
        if allowed:
            assert tr.reopen_run(conn, run_id, actor=ALICE, reason="repair", now=LATER) == RunStatus(status)
        else:
            with pytest.raises(StaleTransitionError):
                tr.reopen_run(conn, run_id, actor=ALICE, reason="repair", now=LATER)
    with db.read() as conn:
        interventions = conn.execute(sa.select(t.aud_run_interventions)).all()
    if allowed:
        assert [(i.action, i.from_status, i.to_status, i.requested_by, i.requested_by_kind) for i in interventions] == [
            ("REOPEN", status, "IN-PROGRESS", "alice@ops", "HUMAN")
        ]
    else:
        assert interventions == []


def test_reopen_is_refused_while_another_run_of_the_pipeline_is_unfinished(world) -> None:
    db, pipeline, _ = world
    old = _run(db, pipeline)
    _force_run_status(db, old, "FAILED")
    _run(db, pipeline)
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.reopen_run(conn, old, actor=ALICE, reason="repair", now=LATER)
    assert _row(db, t.aud_pipelines_run_log, pipeline_run_id=old).status == "FAILED"


@pytest.mark.parametrize("status", RUN_STATUSES)
def test_mark_run(world, status: str) -> None:
    db, pipeline, _ = world
    run_id = _run(db, pipeline)
    _force_run_status(db, run_id, status)
    allowed = status != "QUEUED"
    with db.write() as conn:
        if allowed:
            tr.mark_run(conn, run_id, status=RunStatus.FAILED, actor=ALICE, reason="bad data", now=LATER)
        else:
            with pytest.raises(StaleTransitionError):
                tr.mark_run(conn, run_id, status=RunStatus.FAILED, actor=ALICE, reason="bad data", now=LATER)
    row = _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id)
    assert row.status == ("FAILED" if allowed else status)
    if allowed:
        assert (row.ended_by, row.ended_by_kind) == ("alice@ops", "HUMAN")


def test_mark_run_is_refused_while_an_attempt_runs(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    _attempt(db, run_id, task, "RUNNING", OWNER)
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.mark_run(conn, run_id, status=RunStatus.SUCCESS, actor=ALICE, reason="x", now=LATER)


@pytest.mark.parametrize("status", RUN_STATUSES)
def test_cancel_run(world, status: str) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    queued = _attempt(db, run_id, task, "RUNNING", OWNER)
    _force_run_status(db, run_id, status)
    allowed = status in ("QUEUED", "IN-PROGRESS")
    with db.write() as conn:
        if allowed:
            assert tr.cancel_run(conn, run_id, actor=ALICE, reason="wrong day", now=LATER) == [queued.attempt_id]
        else:
            with pytest.raises(StaleTransitionError):
                tr.cancel_run(conn, run_id, actor=ALICE, reason="wrong day", now=LATER)
    attempt = _row(db, t.aud_task_attempts, attempt_id=queued.attempt_id)
    task_run = _row(db, t.aud_task_run_log, task_run_id=queued.task_run_id)
    if allowed:
        assert (attempt.status, task_run.status) == ("CANCELLED", "CANCELLED")
        assert _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id).status == "CANCELLED"
    else:
        assert (attempt.status, task_run.status) == ("RUNNING", "IN-PROGRESS")


def test_renew_lease_extends_the_owners_run_and_attempts_only(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline, owner=OWNER)
    mine = _attempt(db, run_id, task, "RUNNING", OWNER)
    new_lease = LATER + timedelta(minutes=5)
    with db.write() as conn:
        assert tr.renew_lease(conn, owner_id=OWNER, lease_until=new_lease, now=LATER, run_id=run_id) == 1
    assert _row(db, t.aud_pipelines_run_log, pipeline_run_id=run_id).lease_expires_at == new_lease
    assert _row(db, t.aud_task_attempts, attempt_id=mine.attempt_id).lease_expires_at == new_lease
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.renew_lease(conn, owner_id=OTHER, lease_until=new_lease, now=LATER, run_id=run_id)


# --- attempts ---------------------------------------------------------------------------------


def test_queue_attempt_allows_one_live_attempt_per_task_run(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    first = _attempt(db, run_id, task)
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=task, actor=SYSTEM, now=NOW)
    with db.write() as conn:
        tr.claim_attempt(conn, first.attempt_id, owner_id=OWNER, lease_until=LATER, host="h", now=NOW)
        tr.finish_attempt(
            conn, first.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("FAILED", error_message="x"), now=NOW
        )
        second = tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=task, actor=SYSTEM, now=NOW, not_before=LATER)
    assert (second.task_run_id, second.attempt_number) == (first.task_run_id, 2)
    task_run = _row(db, t.aud_task_run_log, task_run_id=first.task_run_id)
    assert (task_run.status, task_run.attempt_count) == ("IN-PROGRESS", 2)
    assert _row(db, t.aud_task_attempts, attempt_id=second.attempt_id).not_before == LATER


def test_queue_attempt_refuses_a_finished_task_unless_asked_to_run_it_again(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    first = _attempt(db, run_id, task, "RUNNING", OWNER)
    with db.write() as conn:
        tr.finish_attempt(conn, first.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("SUCCESS"), now=NOW)
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=task, actor=SYSTEM, now=NOW)
    with db.write() as conn:
        again = tr.queue_attempt(
            conn, pipeline_run_id=run_id, task_id=task, actor=SYSTEM, now=NOW, again_from=("SUCCESS",)
        )
    assert again.attempt_number == 2


def _queue_and_claim(db, run_id, task, so_far, again_from=("FAILED",)):
    with db.write() as conn:
        return tr.queue_and_claim_attempt(
            conn,
            pipeline_run_id=run_id,
            task_id=task,
            attempts_so_far=so_far,
            actor=SYSTEM,
            owner_id=OWNER,
            lease_until=LATER,
            host="h",
            now=NOW,
            again_from=again_from,
        )


def test_queue_and_claim_attempt_inserts_the_attempt_claimed_by_its_owner(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    first = _queue_and_claim(db, run_id, task, None)
    row = _row(db, t.aud_task_attempts, attempt_id=first.attempt_id)
    assert (row.status, row.attempt_number, row.owner_id, row.host) == ("CLAIMED", 1, OWNER, "h")
    assert row.queued_at == row.claimed_at == row.heartbeat_at == NOW and row.lease_expires_at == LATER
    assert (row.requested_by, row.requested_by_kind, row.not_before) == (SYSTEM.name, "SYSTEM", None)
    task_run = _row(db, t.aud_task_run_log, task_run_id=first.task_run_id)
    assert (task_run.status, task_run.attempt_count, task_run.start_date) == ("IN-PROGRESS", 1, NOW)
    with db.write() as conn:
        tr.finish_attempt(
            conn, first.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("FAILED", error_message="x"), now=NOW
        )
    second = _queue_and_claim(db, run_id, task, 1)
    assert (second.task_run_id, second.attempt_number) == (first.task_run_id, 2)
    assert _row(db, t.aud_task_attempts, attempt_id=second.attempt_id).status == "CLAIMED"
    task_run = _row(db, t.aud_task_run_log, task_run_id=first.task_run_id)
    assert (task_run.status, task_run.attempt_count, task_run.end_date) == ("IN-PROGRESS", 2, None)


def test_queue_and_claim_attempt_refuses_when_the_task_run_changed_since_it_was_read(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    first = _queue_and_claim(db, run_id, task, None)
    # Read before the first attempt was queued: another caller queued it first.
    with pytest.raises(StaleTransitionError, match="another caller queued it first"):
        _queue_and_claim(db, run_id, task, None)
    with db.write() as conn:
        tr.finish_attempt(
            conn, first.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("FAILED", error_message="x"), now=NOW
        )
    second = _queue_and_claim(db, run_id, task, 1)
    with db.write() as conn:
        tr.finish_attempt(
            conn, second.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("FAILED", error_message="x"), now=NOW
        )
    # Read after one attempt, but there were two: refused, and what was found is named.
    with pytest.raises(StaleTransitionError) as refused:
        _queue_and_claim(db, run_id, task, 1)
    assert "FAILED after 1 attempt(s)" in refused.value.message
    assert "status FAILED after 2 attempt(s)" in refused.value.message
    rows = _rows(db, t.aud_task_attempts)
    assert [(r.attempt_number, r.status) for r in rows] == [(1, "FAILED"), (2, "FAILED")]
    assert _row(db, t.aud_task_run_log, task_run_id=first.task_run_id).attempt_count == 2


def test_queue_and_claim_attempt_runs_a_skipped_task_again_only_when_asked(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    with db.write() as conn:
        tr.skip_task(conn, pipeline_run_id=run_id, task_id=task, reason="upstream failed", now=NOW)
    with pytest.raises(StaleTransitionError, match="status SKIPPED after 0 attempt"):
        _queue_and_claim(db, run_id, task, 0)
    again = _queue_and_claim(db, run_id, task, 0, again_from=("SKIPPED",))
    assert again.attempt_number == 1
    task_run = _row(db, t.aud_task_run_log, task_run_id=again.task_run_id)
    assert (task_run.status, task_run.attempt_count) == ("IN-PROGRESS", 1)


def _check(db, call, attempt_id, allowed, before, after):
    with db.write() as conn:
        if allowed:
            call(conn)
        else:
            with pytest.raises(StaleTransitionError):
                call(conn)
    assert _row(db, t.aud_task_attempts, attempt_id=attempt_id).status == (after if allowed else before)


@pytest.mark.parametrize("status", ATTEMPT_STATUSES)
def test_claim_attempt(world, status: str) -> None:
    db, pipeline, task = world
    a = _attempt(db, _run(db, pipeline), task, status, OWNER if status != "QUEUED" else None)
    _check(
        db,
        lambda c: tr.claim_attempt(c, a.attempt_id, owner_id=OWNER, lease_until=LATER, host="h", now=NOW),
        a.attempt_id,
        status == "QUEUED",
        status,
        "CLAIMED",
    )


def test_claim_attempt_waits_for_its_not_before(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    with db.write() as conn:
        queued = tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=task, actor=SYSTEM, now=NOW, not_before=LATER)
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.claim_attempt(conn, queued.attempt_id, owner_id=OWNER, lease_until=LATER, host="h", now=NOW)
    with db.write() as conn:
        tr.claim_attempt(conn, queued.attempt_id, owner_id=OWNER, lease_until=LATER, host="h", now=LATER)


@pytest.mark.parametrize("status", ATTEMPT_STATUSES)
@pytest.mark.parametrize("owner", [OWNER, OTHER])
def test_start_attempt(world, status: str, owner: str) -> None:
    db, pipeline, task = world
    a = _attempt(db, _run(db, pipeline), task, status, OWNER if status != "QUEUED" else None)
    _check(
        db,
        lambda c: tr.start_attempt(
            c, a.attempt_id, owner_id=owner, pid=42, process_start="b:1", log_path="x.log", now=NOW
        ),
        a.attempt_id,
        status == "CLAIMED" and owner == OWNER,
        status,
        "RUNNING",
    )


@pytest.mark.parametrize("status", ATTEMPT_STATUSES)
@pytest.mark.parametrize("owner", [OWNER, OTHER])
def test_finish_attempt(world, status: str, owner: str) -> None:
    db, pipeline, task = world
    a = _attempt(db, _run(db, pipeline), task, status, OWNER if status != "QUEUED" else None)
    outcome = AttemptOutcome(
        "SUCCESS",
        counts=Counts(5, 5, 3, 1, 1),
        task_log="SOURCE_COUNT = 5",
        offset=StoredOffset(OffsetType.NUMBER, "9"),
    )
    allowed = status in ("CLAIMED", "RUNNING") and owner == OWNER
    _check(
        db,
        lambda c: tr.finish_attempt(c, a.attempt_id, owner_id=owner, outcome=outcome, now=LATER),
        a.attempt_id,
        allowed,
        status,
        "SUCCESS",
    )
    task_run = _row(db, t.aud_task_run_log, task_run_id=a.task_run_id)
    with db.read() as conn:
        offsets = conn.execute(sa.select(t.aud_task_offset_tracker.c.offset_value)).scalars().all()
    if allowed:
        assert (task_run.status, task_run.rows_written, task_run.insert_count, task_run.task_log) == (
            "SUCCESS",
            5,
            3,
            "SOURCE_COUNT = 5",
        )
        assert offsets == ["9"]
    else:
        assert task_run.rows_written is None and offsets == []


def test_a_failed_attempt_stores_no_offset(world) -> None:
    db, pipeline, task = world
    a = _attempt(db, _run(db, pipeline), task, "RUNNING", OWNER)
    with db.write() as conn:
        tr.finish_attempt(
            conn,
            a.attempt_id,
            owner_id=OWNER,
            now=LATER,
            outcome=AttemptOutcome("FAILED", error_message="boom", offset=StoredOffset(OffsetType.NUMBER, "9")),
        )
    with db.read() as conn:
        assert conn.execute(sa.select(sa.func.count()).select_from(t.aud_task_offset_tracker)).scalar() == 0
    assert _row(db, t.aud_task_run_log, task_run_id=a.task_run_id).error_message == "boom"


@pytest.mark.parametrize("status", ATTEMPT_STATUSES)
@pytest.mark.parametrize("owner", [OWNER, OTHER])
def test_time_out_attempt(world, status: str, owner: str) -> None:
    db, pipeline, task = world
    a = _attempt(db, _run(db, pipeline), task, status, OWNER if status != "QUEUED" else None)
    _check(
        db,
        lambda c: tr.time_out_attempt(
            c, a.attempt_id, owner_id=owner, outcome=AttemptOutcome("TIMED_OUT", error_message="t"), now=LATER
        ),
        a.attempt_id,
        status == "RUNNING" and owner == OWNER,
        status,
        "TIMED_OUT",
    )


@pytest.mark.parametrize("status", ATTEMPT_STATUSES)
def test_cancel_attempt(world, status: str) -> None:
    db, pipeline, task = world
    a = _attempt(db, _run(db, pipeline), task, status, OWNER if status != "QUEUED" else None)
    _check(
        db,
        lambda c: tr.cancel_attempt(c, a.attempt_id, actor=ALICE, reason="no", now=LATER),
        a.attempt_id,
        status in ("QUEUED", "CLAIMED", "RUNNING"),
        status,
        "CANCELLED",
    )


@pytest.mark.parametrize("status", ATTEMPT_STATUSES)
@pytest.mark.parametrize("owner", [OWNER, OTHER])
def test_lose_attempt(world, status: str, owner: str) -> None:
    db, pipeline, task = world
    a = _attempt(db, _run(db, pipeline), task, status, OWNER if status != "QUEUED" else None)
    _check(
        db,
        lambda c: tr.lose_attempt(c, a.attempt_id, expected_owner=owner, message="attempt 1 was lost", now=LATER),
        a.attempt_id,
        status in ("CLAIMED", "RUNNING") and owner == OWNER,
        status,
        "LOST",
    )
    if status in ("CLAIMED", "RUNNING") and owner == OWNER:
        task_run = _row(db, t.aud_task_run_log, task_run_id=a.task_run_id)
        assert (task_run.status, task_run.error_message) == ("FAILED", "attempt 1 was lost")


def test_b28_skip_task_never_overwrites_a_failed_task_run(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    a = _attempt(db, run_id, task, "RUNNING", OWNER)
    with db.write() as conn:
        tr.finish_attempt(
            conn, a.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("FAILED", error_message="real error"), now=LATER
        )
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.skip_task(conn, pipeline_run_id=run_id, task_id=task, reason="upstream", now=LATER)
    row = _row(db, t.aud_task_run_log, task_run_id=a.task_run_id)
    assert (row.status, row.error_message) == ("FAILED", "real error")


def test_mark_task_records_what_it_replaced_and_is_refused_while_live(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    a = _attempt(db, run_id, task, "RUNNING", OWNER)
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.mark_task(conn, pipeline_run_id=run_id, task_id=task, status="SUCCESS", actor=ALICE, reason="ok", now=LATER)
    with db.write() as conn:
        tr.finish_attempt(
            conn, a.attempt_id, owner_id=OWNER, outcome=AttemptOutcome("FAILED", error_message="real error"), now=LATER
        )
        assert (
            tr.mark_task(
                conn,
                pipeline_run_id=run_id,
                task_id=task,
                status="SUCCESS",
                actor=ALICE,
                reason="loaded by hand",
                now=LATER,
                rows=7,
            )
            == "FAILED"
        )
    row = _row(db, t.aud_task_run_log, task_run_id=a.task_run_id)
    assert (row.status, row.rows_written) == ("SUCCESS", 7)
    assert row.error_message == "marked SUCCESS by alice@ops: loaded by hand"
    mark = _row(db, t.aud_run_interventions, action="MARK")
    assert (mark.from_status, mark.to_status, mark.previous_message, mark.target_count, mark.reason) == (
        "FAILED",
        "SUCCESS",
        "real error",
        7,
        "loaded by hand",
    )
    assert _row(db, t.aud_task_attempts, attempt_id=a.attempt_id).status == "FAILED"  # the evidence stays


def test_reset_task_only_resets_a_skipped_row_without_attempts(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    with db.write() as conn:
        tr.skip_task(conn, pipeline_run_id=run_id, task_id=task, reason="upstream failed", now=NOW)
        tr.reset_task(conn, pipeline_run_id=run_id, task_id=task, actor=ALICE, reason="repair", now=LATER)
    with db.read() as conn:
        assert conn.execute(sa.select(t.aud_task_run_log)).all() == []
    reset = _row(db, t.aud_run_interventions, action="RESET")
    assert (reset.from_status, reset.to_status, reset.previous_message) == ("SKIPPED", None, "upstream failed")
    a = _attempt(db, run_id, task, "RUNNING", OWNER)
    with db.write() as conn, pytest.raises(StaleTransitionError):
        tr.reset_task(conn, pipeline_run_id=run_id, task_id=task, actor=ALICE, reason="x", now=LATER)
    assert _row(db, t.aud_task_run_log, task_run_id=a.task_run_id).status == "IN-PROGRESS"


def test_mark_run_ends_a_retry_still_waiting_for_its_time(world) -> None:
    db, pipeline, task = world
    run_id = _run(db, pipeline)
    with db.write() as conn:
        queued = tr.queue_attempt(conn, pipeline_run_id=run_id, task_id=task, actor=SYSTEM, now=NOW, not_before=LATER)
        tr.mark_run(conn, run_id, status=RunStatus.FAILED, actor=ALICE, reason="give up", now=NOW)
    attempt = _row(db, t.aud_task_attempts, attempt_id=queued.attempt_id)
    task_run = _row(db, t.aud_task_run_log, task_run_id=queued.task_run_id)
    assert (attempt.status, task_run.status) == ("CANCELLED", "CANCELLED")
    assert attempt.error_message == "the run was marked FAILED by alice@ops"
