"""Every status change of runs, task runs and attempts.

Each function is one guarded UPDATE (or INSERT) whose row count is checked: the row must be in the
expected status (and, for owned rows, held by the expected owner), else StaleTransitionError says
what was expected and what was found. No other module writes a STATUS. Callers pass the connection
of their transaction, so writes that belong together (an attempt, its task-run summary, an offset,
consumption, an intervention) commit together.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from datetime import date, datetime
from typing import Any

import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.core.enums import (
    FINISHED_RUN,
    LIVE_ATTEMPT,
    OWNED_ATTEMPT,
    UNFINISHED_RUN,
    AttemptStatus,
    InterventionAction,
    RunStatus,
    TriggerKind,
)
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine.dialects import for_connection
from etl_craft.engine.records import AttemptOutcome, QueuedAttempt
from etl_craft.engine.tables import aud_dependency_consumption as consumption
from etl_craft.engine.tables import aud_gate_decisions as decisions
from etl_craft.engine.tables import aud_gate_waits as gate_waits
from etl_craft.engine.tables import aud_pipelines_run_log as runs
from etl_craft.engine.tables import aud_run_interventions as interventions
from etl_craft.engine.tables import aud_task_attempts as attempts
from etl_craft.engine.tables import aud_task_offset_tracker as offsets
from etl_craft.engine.tables import aud_task_run_log as task_runs
from etl_craft.engine.tables import cfg_pipeline_dependency as pipeline_deps
from etl_craft.engine.tables import cfg_pipelines as pipelines
from etl_craft.engine.tables import cfg_task_dependency as task_deps
from etl_craft.engine.tables import cfg_tasks as tasks

EVENTS_CHANNEL = "etl_craft_events"


# --- helpers -------------------------------------------------------------------------------------


def announce(conn: sa.Connection, *payloads: str) -> None:
    """Wake overseers once this transaction commits: `run:<id>` or `pipeline:<id>` for a change to one,
    `ended:<run id>:<attempt id>` for an attempt's end (many in one call). Where the Engine DB cannot
    notify, overseers sweep often instead."""
    for_connection(conn).announce(conn, EVENTS_CHANNEL, payloads)


def _found_run(conn: sa.Connection, run_id: int) -> str:
    row = conn.execute(
        sa.select(runs.c.status, runs.c.owner_id, runs.c.lease_expires_at).where(runs.c.pipeline_run_id == run_id)
    ).one_or_none()
    if row is None:
        return "no such run"
    owner = f", owned by {row.owner_id} until {row.lease_expires_at:%Y-%m-%d %H:%M:%S}Z" if row.owner_id else ""
    return f"status {row.status}{owner}"


def _found_attempt(conn: sa.Connection, attempt_id: int) -> str:
    row = conn.execute(
        sa.select(attempts.c.status, attempts.c.owner_id).where(attempts.c.attempt_id == attempt_id)
    ).one_or_none()
    if row is None:
        return "no such attempt"
    return f"status {row.status}" + (f", owned by {row.owner_id}" if row.owner_id else "")


def _found_task_run(conn: sa.Connection, run_id: int, task_id: int) -> str:
    row = conn.execute(
        sa.select(task_runs.c.status, task_runs.c.attempt_count).where(
            task_runs.c.pipeline_run_id == run_id, task_runs.c.task_id == task_id
        )
    ).one_or_none()
    return "no task run" if row is None else f"status {row.status} after {row.attempt_count} attempt(s)"


def _run_status(conn: sa.Connection, run_id: int) -> str:
    status = conn.execute(sa.select(runs.c.status).where(runs.c.pipeline_run_id == run_id)).scalar_one_or_none()
    if status is None:
        raise _stale(f"run {run_id}", "an existing run", "no such run")
    return str(status)


def _stale(subject: str, expected: str, found: str) -> StaleTransitionError:
    return StaleTransitionError(
        subject,
        found=found,
        expected=expected,
        remedy="another process or operator changed it first; look again with etl-craft status",
    )


def _check(result: sa.CursorResult, subject: str, expected: str, found: str | Callable[[], str] | None = None) -> None:
    """Refuse an update that matched no row. `found` may be a function: the extra SELECT that says what
    was found instead runs only on refusal, never on the hot path of a transition that succeeded."""
    if result.rowcount != 1:
        raise _stale(subject, expected, (found() if callable(found) else found) or "a different state")


def record_intervention(
    conn: sa.Connection,
    *,
    run_id: int,
    action: InterventionAction,
    actor: Actor,
    reason: str,
    now: datetime,
    task_id: int | None = None,
    from_status: str | None = None,
    to_status: str | None = None,
    target_count: int | None = None,
    previous_message: str | None = None,
) -> None:
    """One AUD_RUN_INTERVENTIONS row: what an operator changed or asked for, and what was there before."""
    pipeline_id = sa.select(runs.c.pipeline_id).where(runs.c.pipeline_run_id == run_id).scalar_subquery()
    conn.execute(
        interventions.insert().values(
            pipeline_id=pipeline_id,
            pipeline_run_id=run_id,
            task_id=task_id,
            action=action.value,
            from_status=from_status,
            to_status=to_status,
            target_count=target_count,
            previous_message=previous_message,
            reason=reason,
            requested_by=actor.name,
            requested_by_kind=actor.kind.value,
            requested_at=now,
        )
    )
    announce(conn, f"run:{run_id}")  # every operator change reaches the overseer at once


def _no_live_attempt_of_run(run_id: object) -> sa.ColumnElement[bool]:
    return ~sa.exists().where(
        attempts.c.task_run_id == task_runs.c.task_run_id,
        task_runs.c.pipeline_run_id == run_id,
        attempts.c.status.in_(OWNED_ATTEMPT),
    )


# --- runs ----------------------------------------------------------------------------------------


def _new_run(
    pipeline_id: int, status: RunStatus, trigger_kind: TriggerKind, actor: Actor, now: datetime, run_date: date | None
) -> dict[str, object]:
    """The columns every new run row sets."""
    return {
        "pipeline_id": pipeline_id,
        "status": status.value,
        "trigger_kind": trigger_kind.value,
        "backfill": "Y" if trigger_kind is TriggerKind.BACKFILL else "N",
        "start_date": now,
        "run_date": run_date,
        "started_by": actor.name,
        "started_by_kind": actor.kind.value,
    }


def create_run(
    conn: sa.Connection,
    *,
    pipeline_id: int,
    status: RunStatus,
    trigger_kind: TriggerKind,
    actor: Actor,
    now: datetime,
    run_key: str | None = None,
    run_date: date | None = None,
    owner_id: str | None = None,
    lease_until: datetime | None = None,
    config_sha256: str | None = None,
) -> int:
    """Insert a run. The unique indexes refuse a second IN-PROGRESS run and a repeated run key."""
    values = _new_run(pipeline_id, status, trigger_kind, actor, now, run_date)
    values.update(owner_id=owner_id, lease_expires_at=lease_until, config_sha256=config_sha256)
    if run_key is not None:
        values["run_key"] = run_key
    if status.terminal:
        values.update(end_date=now, ended_by=actor.name, ended_by_kind=actor.kind.value)
    try:
        with conn.begin_nested():
            run_id = int(conn.execute(runs.insert().values(**values).returning(runs.c.pipeline_run_id)).scalar_one())
        announce(conn, f"run:{run_id}")
        return run_id
    except sa.exc.IntegrityError:
        pass
    clash = conn.execute(
        sa.select(runs.c.pipeline_run_id, runs.c.status, runs.c.run_key, runs.c.start_date).where(
            runs.c.pipeline_id == pipeline_id,
            sa.or_(runs.c.run_key == run_key, runs.c.status == "IN-PROGRESS")
            if run_key
            else runs.c.status == "IN-PROGRESS",
        )
    ).first()
    found = (
        f"run {clash.pipeline_run_id} ({clash.run_key}, {clash.status}, started {clash.start_date:%Y-%m-%d %H:%M:%S}Z)"
        if clash
        else "a conflicting run"
    )
    raise StaleTransitionError(
        f"new {status.value} run of pipeline {pipeline_id}" + (f" with key {run_key!r}" if run_key else ""),
        found=found,
        expected="no IN-PROGRESS run of the pipeline and an unused run key",
        remedy="that run belongs to someone else; see etl-craft status, or select it with --run-id",
    )


def record_skipped_tick(
    conn: sa.Connection,
    *,
    pipeline_id: int,
    run_key: str,
    run_date: date,
    reason: str,
    actor: Actor,
    now: datetime,
) -> int:
    """A scheduled tick that will not run: a SKIPPED run whose every active task is SKIPPED with the
    reason (one INSERT ... SELECT), so status, history and explain say why."""
    run_id = create_run(
        conn,
        pipeline_id=pipeline_id,
        status=RunStatus.SKIPPED,
        trigger_kind=TriggerKind.SCHEDULE,
        actor=actor,
        now=now,
        run_key=run_key,
        run_date=run_date,
    )
    conn.execute(
        task_runs.insert().from_select(
            ["task_id", "pipeline_run_id", "status", "start_date", "end_date", "attempt_count", "error_message"],
            sa.select(
                tasks.c.task_id,
                sa.literal(run_id, type_=task_runs.c.pipeline_run_id.type),
                sa.literal("SKIPPED", type_=task_runs.c.status.type),
                sa.literal(now, type_=task_runs.c.start_date.type),
                sa.literal(now, type_=task_runs.c.end_date.type),
                sa.literal(0, type_=task_runs.c.attempt_count.type),
                sa.literal(reason, type_=task_runs.c.error_message.type),
            ).where(tasks.c.pipeline_id == pipeline_id, tasks.c.active_flag == "Y"),
        )
    )
    return run_id


def queue_scheduled_runs(
    conn: sa.Connection, ticks: Sequence[tuple[int, str, date]], *, actor: Actor, now: datetime
) -> dict[tuple[int, str], int]:
    """Insert a QUEUED SCHEDULE run for each (pipeline id, run key, run date) in one statement (an
    overseer at a tick due for many pipelines), and wake PostgreSQL overseers.

    A run key its pipeline has used already is left out by the unique run-key index (ON CONFLICT DO
    NOTHING) rather than failing the others. Returns the new run ids by (pipeline id, run key). Ids
    follow no order within the statement: a caller that needs two ticks of one pipeline ordered
    inserts them in two calls.
    """
    if not ticks:
        return {}
    insert = for_connection(conn).insert(runs)
    rows = [
        {**_new_run(pipeline_id, RunStatus.QUEUED, TriggerKind.SCHEDULE, actor, now, run_date), "run_key": run_key}
        for pipeline_id, run_key, run_date in ticks
    ]
    # A list of parameter sets with RETURNING is sent as one multi-row INSERT ("insertmanyvalues").
    created = conn.execute(
        insert.on_conflict_do_nothing().returning(runs.c.pipeline_id, runs.c.run_key, runs.c.pipeline_run_id), rows
    )
    ids = {(int(pipeline_id), str(run_key)): int(run_id) for pipeline_id, run_key, run_id in created}
    announce(conn, *(f"run:{run_id}" for run_id in ids.values()))
    return ids


def _free_for(owner_id: str, now: datetime) -> sa.ColumnElement[bool]:
    """A run nobody holds, held by this owner already, or whose holder's lease ran out."""
    return sa.or_(runs.c.owner_id.is_(None), runs.c.owner_id == owner_id, runs.c.lease_expires_at < now)


def start_run(conn: sa.Connection, run_id: int, *, owner_id: str, lease_until: datetime, now: datetime) -> None:
    """Admit a QUEUED run, or take ownership of an IN-PROGRESS run nobody holds (or whose lease ended).

    The unique index on IN-PROGRESS runs refuses a second one of the pipeline (two admitters racing).
    """
    expected = "QUEUED or IN-PROGRESS, with no live owner, and no other IN-PROGRESS run of its pipeline"
    try:
        with conn.begin_nested():
            result = conn.execute(
                runs.update()
                .where(
                    runs.c.pipeline_run_id == run_id,
                    runs.c.status.in_(UNFINISHED_RUN),
                    _free_for(owner_id, now),
                )
                .values(status="IN-PROGRESS", owner_id=owner_id, lease_expires_at=lease_until)
            )
    except sa.exc.IntegrityError:
        raise _stale(f"run {run_id}", expected, "another run of its pipeline is IN-PROGRESS") from None
    _check(result, f"run {run_id}", expected, lambda: _found_run(conn, run_id))


def admit_ungated_runs(
    conn: sa.Connection, run_ids: Sequence[int], *, owner_id: str, lease_until: datetime, now: datetime
) -> list[int]:
    """Admit many QUEUED runs in one statement (an overseer after a tick due for many pipelines).

    Admitted are the runs still QUEUED with no live owner whose pipeline has no pipeline gate (no
    active dependency on an active pipeline) and that wait for no gate look; their ids are returned.
    The others stay as they are, for the caller to admit one at a time through their gates. When the
    unique index on IN-PROGRESS runs refuses the statement (another admitter started a run of one of
    the pipelines), nothing is admitted and StaleTransitionError says so.
    """
    up = pipelines.alias("up")
    gated = (
        sa.select(pipeline_deps.c.pipeline_dependency_id)
        .join(up, up.c.pipeline_id == pipeline_deps.c.depends_on_pipeline_id)
        .where(pipeline_deps.c.pipeline_id == runs.c.pipeline_id, pipeline_deps.c.active_flag == "Y")
        .where(up.c.active_flag == "Y")
    )
    waiting = sa.select(gate_waits.c.pipeline_run_id).where(
        gate_waits.c.pipeline_run_id == runs.c.pipeline_run_id,
        gate_waits.c.task_id.is_(None),
        gate_waits.c.next_check_at.is_not(None),
    )
    try:
        with conn.begin_nested():
            admitted = conn.execute(
                runs.update()
                .where(
                    runs.c.pipeline_run_id.in_(run_ids),
                    runs.c.status == "QUEUED",
                    _free_for(owner_id, now),
                    ~gated.exists(),
                    ~waiting.exists(),
                )
                .values(status="IN-PROGRESS", owner_id=owner_id, lease_expires_at=lease_until)
                .returning(runs.c.pipeline_run_id)
            )
            return [int(run_id) for run_id in admitted.scalars()]
    except sa.exc.IntegrityError:
        raise _stale(
            f"runs {', '.join(map(str, run_ids))}",
            "no other IN-PROGRESS run of their pipelines",
            "another admitter started a run of one of the pipelines",
        ) from None


def hold_run(conn: sa.Connection, run_id: int, *, owner_id: str, lease_until: datetime, now: datetime) -> None:
    """Hold a QUEUED run while its gates are judged (it stays QUEUED); refused while another holds it."""
    result = conn.execute(
        runs.update()
        .where(runs.c.pipeline_run_id == run_id, runs.c.status == "QUEUED", _free_for(owner_id, now))
        .values(owner_id=owner_id, lease_expires_at=lease_until)
    )
    _check(result, f"run {run_id}", "QUEUED with no live owner", lambda: _found_run(conn, run_id))


def release_run(conn: sa.Connection, run_id: int, *, owner_id: str) -> None:
    """The supervisor leaves a run IN-PROGRESS (paused, interrupted) for another to resume."""
    result = conn.execute(
        runs.update()
        .where(runs.c.pipeline_run_id == run_id, runs.c.owner_id == owner_id)
        .values(owner_id=None, lease_expires_at=None)
    )
    _check(result, f"run {run_id}", f"owned by {owner_id}", lambda: _found_run(conn, run_id))
    announce(conn, f"run:{run_id}")


def finish_run(
    conn: sa.Connection,
    run_id: int,
    *,
    status: RunStatus,
    actor: Actor,
    now: datetime,
    owner_id: str | None = None,
    sla_status: str | None = None,
    from_status: RunStatus = RunStatus.IN_PROGRESS,
) -> None:
    """End a run. IN-PROGRESS runs need no claimed or running attempt; QUEUED ends only as SKIPPED.

    The SLA is decided once (a repair never re-measures it); a reopened run that ends SUCCESS
    publishes a new output revision and clears REPAIR_PENDING.
    """
    assert status in (RunStatus.SUCCESS, RunStatus.FAILED, RunStatus.SKIPPED)
    conditions = [
        runs.c.pipeline_run_id == run_id,
        runs.c.status == from_status.value,
        runs.c.owner_id.is_(None) if owner_id is None else runs.c.owner_id == owner_id,
    ]
    if from_status is RunStatus.IN_PROGRESS:
        conditions.append(_no_live_attempt_of_run(runs.c.pipeline_run_id))
    succeeded = status is RunStatus.SUCCESS
    result = conn.execute(
        runs.update()
        .where(*conditions)
        .values(
            status=status.value,
            end_date=now,
            ended_by=actor.name,
            ended_by_kind=actor.kind.value,
            owner_id=None,
            lease_expires_at=None,
            sla_status=sa.func.coalesce(runs.c.sla_status, sla_status),
            output_revision=runs.c.output_revision
            + (sa.case((runs.c.repair_pending == "Y", 1), else_=0) if succeeded else 0),
            repair_pending="N" if succeeded else runs.c.repair_pending,
        )
    )
    owner = f" owned by {owner_id}" if owner_id else " with no owner"
    _check(
        result,
        f"run {run_id}",
        f"{from_status.value}{owner} and no claimed or running attempt",
        lambda: _found_run(conn, run_id),
    )
    announce(conn, f"run:{run_id}")


def record_sla(conn: sa.Connection, run_id: int, *, sla_status: str) -> bool:
    """Decide a live run's SLA once (a breach seen while it runs); returns whether this call decided it."""
    result = conn.execute(
        runs.update().where(runs.c.pipeline_run_id == run_id, runs.c.sla_status.is_(None)).values(sla_status=sla_status)
    )
    return result.rowcount == 1


def reopen_run(
    conn: sa.Connection, run_id: int, *, actor: Actor, reason: str, now: datetime, task_id: int | None = None
) -> RunStatus:
    """An ended run back to IN-PROGRESS for a repair, if no other run of its pipeline is unfinished."""
    previous = _run_status(conn, run_id)
    other = runs.alias("other")
    result = conn.execute(
        runs.update()
        .where(
            runs.c.pipeline_run_id == run_id,
            runs.c.status.in_(FINISHED_RUN),
            ~sa.exists().where(
                other.c.pipeline_id == runs.c.pipeline_id,
                other.c.status.in_(UNFINISHED_RUN),
                other.c.pipeline_run_id != run_id,
            ),
        )
        .values(
            status="IN-PROGRESS",
            end_date=None,
            ended_by=None,
            ended_by_kind=None,
            owner_id=None,
            lease_expires_at=None,
            repair_pending="Y",
        )
    )
    _check(
        result,
        f"run {run_id}",
        "an ended run, and no other unfinished run of its pipeline",
        lambda: _found_run(conn, run_id) + "; or another run of the pipeline is unfinished",
    )
    record_intervention(
        conn,
        run_id=run_id,
        action=InterventionAction.REOPEN,
        actor=actor,
        reason=reason,
        now=now,
        task_id=task_id,
        from_status=previous,
        to_status="IN-PROGRESS",
    )
    return RunStatus(previous)


def mark_run(
    conn: sa.Connection, run_id: int, *, status: RunStatus, actor: Actor, reason: str, now: datetime
) -> RunStatus:
    """An operator ends a run with a status, whatever its tasks did; refused while a task is running."""
    assert status in (RunStatus.SUCCESS, RunStatus.FAILED, RunStatus.SKIPPED)
    previous = _run_status(conn, run_id)
    republish = status is RunStatus.SUCCESS
    result = conn.execute(
        runs.update()
        .where(
            runs.c.pipeline_run_id == run_id,
            runs.c.status.in_((*FINISHED_RUN, "IN-PROGRESS")),
            _no_live_attempt_of_run(runs.c.pipeline_run_id),
        )
        .values(
            status=status.value,
            end_date=now,
            ended_by=actor.name,
            ended_by_kind=actor.kind.value,
            owner_id=None,
            lease_expires_at=None,
            output_revision=runs.c.output_revision
            + (
                sa.case((sa.or_(runs.c.repair_pending == "Y", runs.c.status.in_(FINISHED_RUN)), 1), else_=0)
                if republish
                else 0
            ),
            repair_pending="N" if republish else runs.c.repair_pending,
        )
    )
    _check(
        result,
        f"run {run_id}",
        "ended or IN-PROGRESS, with no claimed or running attempt",
        lambda: _found_run(conn, run_id),
    )
    # A retry still waiting for its time would outlive the ended run: it ends with the mark.
    why = f"the run was marked {status.value} by {actor.name}"
    of_run = sa.select(task_runs.c.task_run_id).where(task_runs.c.pipeline_run_id == run_id)
    waiting = (
        conn.execute(
            attempts.update()
            .where(attempts.c.task_run_id.in_(of_run), attempts.c.status == "QUEUED")
            .values(status="CANCELLED", ended_at=now, error_message=why)
            .returning(attempts.c.task_run_id)
        )
        .scalars()
        .all()
    )
    if waiting:
        conn.execute(
            task_runs.update()
            .where(task_runs.c.task_run_id.in_(waiting), task_runs.c.status == "IN-PROGRESS")
            .values(status="CANCELLED", end_date=now, error_message=why)
        )
    record_intervention(
        conn,
        run_id=run_id,
        action=InterventionAction.MARK,
        actor=actor,
        reason=reason,
        now=now,
        from_status=previous,
        to_status=status.value,
    )
    return RunStatus(previous)


def cancel_run(conn: sa.Connection, run_id: int, *, actor: Actor, reason: str, now: datetime) -> list[int]:
    """An operator cancels an unfinished run: the run, its live attempts and their task runs end CANCELLED.

    Returns the cancelled attempt ids; their supervisors see the change and stop the processes.
    """
    previous = _run_status(conn, run_id)
    result = conn.execute(
        runs.update()
        .where(runs.c.pipeline_run_id == run_id, runs.c.status.in_(UNFINISHED_RUN))
        .values(
            status="CANCELLED",
            end_date=now,
            ended_by=actor.name,
            ended_by_kind=actor.kind.value,
            owner_id=None,
            lease_expires_at=None,
        )
    )
    _check(result, f"run {run_id}", "QUEUED or IN-PROGRESS", lambda: _found_run(conn, run_id))
    of_run = sa.select(task_runs.c.task_run_id).where(task_runs.c.pipeline_run_id == run_id)
    cancelled = (
        conn.execute(
            attempts.update()
            .where(attempts.c.task_run_id.in_(of_run), attempts.c.status.in_(LIVE_ATTEMPT))
            .values(status="CANCELLED", ended_at=now, error_message=f"cancelled by {actor.name}: {reason}")
            .returning(attempts.c.attempt_id)
        )
        .scalars()
        .all()
    )
    conn.execute(
        task_runs.update()
        .where(task_runs.c.pipeline_run_id == run_id, task_runs.c.status == "IN-PROGRESS")
        .values(status="CANCELLED", end_date=now, error_message=f"cancelled by {actor.name}: {reason}")
    )
    record_intervention(
        conn,
        run_id=run_id,
        action=InterventionAction.CANCEL,
        actor=actor,
        reason=reason,
        now=now,
        from_status=previous,
        to_status="CANCELLED",
    )
    return list(cancelled)


def renew_lease(
    conn: sa.Connection, *, owner_id: str, lease_until: datetime, now: datetime, run_id: int | None = None
) -> int:
    """Extend the owner's leases: its run (if given; refused when lost) and all its live attempts at once."""
    if run_id is not None:
        result = conn.execute(
            runs.update()
            .where(runs.c.pipeline_run_id == run_id, runs.c.owner_id == owner_id, runs.c.status.in_(UNFINISHED_RUN))
            .values(lease_expires_at=lease_until)
        )
        _check(
            result,
            f"lease of run {run_id}",
            f"QUEUED or IN-PROGRESS, owned by {owner_id}",
            lambda: _found_run(conn, run_id),
        )
    return _renew_attempts(conn, owner_id, lease_until, now)


def renew_all_leases(conn: sa.Connection, *, owner_id: str, lease_until: datetime, now: datetime) -> None:
    """An overseer's heartbeat: every unfinished run it holds and every attempt it owns, one statement each."""
    conn.execute(
        runs.update()
        .where(runs.c.owner_id == owner_id, runs.c.status.in_(UNFINISHED_RUN))
        .values(lease_expires_at=lease_until)
    )
    _renew_attempts(conn, owner_id, lease_until, now)


def _renew_attempts(conn: sa.Connection, owner_id: str, lease_until: datetime, now: datetime) -> int:
    renewed = conn.execute(
        attempts.update()
        .where(attempts.c.owner_id == owner_id, attempts.c.status.in_(OWNED_ATTEMPT))
        .values(lease_expires_at=lease_until, heartbeat_at=now)
    )
    return int(renewed.rowcount)


# --- task runs and attempts ------------------------------------------------------------------------


def queue_attempt(
    conn: sa.Connection,
    *,
    pipeline_run_id: int,
    task_id: int,
    actor: Actor,
    now: datetime,
    not_before: datetime | None = None,
    again_from: tuple[str, ...] = ("FAILED",),
) -> QueuedAttempt:
    """A new attempt of a task under a run, QUEUED, with the task-run summary back to IN-PROGRESS.

    The first attempt creates the summary row; a later one is allowed only from `again_from`
    (FAILED for a retry or a resumed run; SUCCESS and SKIPPED too for a rerun). The unique indexes
    make a second concurrent caller fail instead of running the task twice.
    """
    existing = conn.execute(
        sa.select(task_runs.c.attempt_count).where(
            task_runs.c.pipeline_run_id == pipeline_run_id, task_runs.c.task_id == task_id
        )
    ).scalar_one_or_none()
    values = {"status": "QUEUED", "queued_at": now, "not_before": not_before}
    return _new_attempt(conn, pipeline_run_id, task_id, existing, again_from, actor, now, values)


def queue_and_claim_attempt(
    conn: sa.Connection,
    *,
    pipeline_run_id: int,
    task_id: int,
    attempts_so_far: int | None,
    actor: Actor,
    owner_id: str,
    lease_until: datetime,
    host: str,
    now: datetime,
    again_from: tuple[str, ...] = ("FAILED",),
) -> QueuedAttempt:
    """The local provider's queue and claim in one: the new attempt is inserted CLAIMED by its owner
    (QUEUED_AT = CLAIMED_AT), which no one could tell from QUEUED then CLAIMED in one transaction,
    and two statements fewer on the path from a ready task to its process. `attempts_so_far` is the
    task run's ATTEMPT_COUNT as the caller last read it (None: no task run yet); the write is refused
    as stale when it changed since, as when another caller queued the task first."""
    values = {
        "status": "CLAIMED",
        "queued_at": now,
        "claimed_at": now,
        "owner_id": owner_id,
        "lease_expires_at": lease_until,
        "heartbeat_at": now,
        "host": host,
    }
    return _new_attempt(conn, pipeline_run_id, task_id, attempts_so_far, again_from, actor, now, values)


def _new_attempt(
    conn: sa.Connection,
    pipeline_run_id: int,
    task_id: int,
    attempts_so_far: int | None,
    again_from: tuple[str, ...],
    actor: Actor,
    now: datetime,
    values: dict[str, object],
) -> QueuedAttempt:
    """Insert the next attempt with `values`. Without a task run (`attempts_so_far` None) its summary
    row is created; else it moves back to IN-PROGRESS from `again_from`, guarded by the attempt count
    (a SKIPPED task run has none)."""
    subject = f"task {task_id} of run {pipeline_run_id}"
    number = (attempts_so_far or 0) + 1
    # No savepoint: a refused insert ends the caller's transaction, and every caller lets it roll back.
    try:
        if attempts_so_far is None:
            task_run_id = int(
                conn.execute(
                    task_runs.insert()
                    .values(
                        task_id=task_id,
                        pipeline_run_id=pipeline_run_id,
                        status="IN-PROGRESS",
                        start_date=now,
                        attempt_count=1,
                    )
                    .returning(task_runs.c.task_run_id)
                ).scalar_one()
            )
        else:
            found = conn.execute(
                task_runs.update()
                .where(
                    task_runs.c.pipeline_run_id == pipeline_run_id,
                    task_runs.c.task_id == task_id,
                    task_runs.c.status.in_(again_from),
                    task_runs.c.attempt_count == attempts_so_far,
                )
                .values(status="IN-PROGRESS", attempt_count=number, end_date=None)
                .returning(task_runs.c.task_run_id)
            ).scalar_one_or_none()
            if found is None:
                expected = f"{' or '.join(again_from)} after {attempts_so_far} attempt(s)"
                raise _stale(subject, expected, _found_task_run(conn, pipeline_run_id, task_id))
            task_run_id = int(found)
        attempt_id = int(
            conn.execute(
                attempts.insert()
                .values(
                    task_run_id=task_run_id,
                    attempt_number=number,
                    requested_by=actor.name,
                    requested_by_kind=actor.kind.value,
                    **values,
                )
                .returning(attempts.c.attempt_id)
            ).scalar_one()
        )
    except sa.exc.IntegrityError:
        raise _stale(subject, "no task run yet, or no live attempt", "another caller queued it first") from None
    return QueuedAttempt(task_run_id, attempt_id, number)


def skip_task(conn: sa.Connection, *, pipeline_run_id: int, task_id: int, reason: str, now: datetime) -> int:
    """Record that a task will not run under this run. Only a task with no row yet can be skipped,
    so a failed attempt is never overwritten by SKIPPED."""
    try:
        with conn.begin_nested():
            return int(
                conn.execute(
                    task_runs.insert()
                    .values(
                        task_id=task_id,
                        pipeline_run_id=pipeline_run_id,
                        status="SKIPPED",
                        start_date=now,
                        end_date=now,
                        attempt_count=0,
                        error_message=reason,
                    )
                    .returning(task_runs.c.task_run_id)
                ).scalar_one()
            )
    except sa.exc.IntegrityError:
        raise _stale(f"task {task_id} of run {pipeline_run_id}", "no task run yet", "a task run already") from None


def claim_attempt(
    conn: sa.Connection, attempt_id: int, *, owner_id: str, lease_until: datetime, host: str, now: datetime
) -> None:
    result = conn.execute(
        attempts.update()
        .where(
            attempts.c.attempt_id == attempt_id,
            attempts.c.status == "QUEUED",
            sa.or_(attempts.c.not_before.is_(None), attempts.c.not_before <= now),
        )
        .values(
            status="CLAIMED",
            owner_id=owner_id,
            lease_expires_at=lease_until,
            heartbeat_at=now,
            claimed_at=now,
            host=host,
        )
    )
    _check(result, f"attempt {attempt_id}", "QUEUED and due", lambda: _found_attempt(conn, attempt_id))


def _set(column: sa.Column[Any]) -> sa.BindParameter[Any]:
    """The bound value of a column a prebuilt statement sets: named p_<column> (a parameter named
    like a column of the table would be taken for a value to set), of the column's type."""
    return sa.bindparam(f"p_{column.name}", type_=column.type)


# The statements of an attempt's start and end are built once: a task process runs them on every
# attempt, and a statement object that is reused keeps its cache key (building and keying them was
# an eighth of a task process's Python). Their WHERE parameters are named w_<column>.
_COUNTS = ("source_count", "target_count", "insert_count", "update_count", "delete_count", "rows_written")
_W_ATTEMPT = sa.bindparam("w_attempt_id", type_=attempts.c.attempt_id.type)
_W_OWNER = sa.bindparam("w_owner_id", type_=attempts.c.owner_id.type)
_START_ATTEMPT = (
    attempts.update()
    .where(attempts.c.attempt_id == _W_ATTEMPT, attempts.c.status == "CLAIMED", attempts.c.owner_id == _W_OWNER)
    .values(
        status="RUNNING",
        **{name: _set(attempts.c[name]) for name in ("started_at", "pid", "process_start", "log_path")},
    )
)


def _end_attempt_statement(guard: sa.ColumnElement[bool]) -> sa.Update:
    ended = ("status", "ended_at", "exit_code", *_COUNTS, "error_message", "task_log", "retryable")
    return (
        attempts.update()
        .where(attempts.c.attempt_id == _W_ATTEMPT, guard)
        .values(**{name: _set(attempts.c[name]) for name in ended})
        .returning(attempts.c.task_run_id, attempts.c.attempt_number)
    )


# By guard: held by the owner, running for the owner (a time-out), or live (a cancel).
_END_ATTEMPT = {
    "owned": _end_attempt_statement(sa.and_(attempts.c.status.in_(OWNED_ATTEMPT), attempts.c.owner_id == _W_OWNER)),
    "running": _end_attempt_statement(sa.and_(attempts.c.status == "RUNNING", attempts.c.owner_id == _W_OWNER)),
    "live": _end_attempt_statement(attempts.c.status.in_(LIVE_ATTEMPT)),
}
_SUMMARIZE_END = (
    task_runs.update()
    .where(
        task_runs.c.task_run_id == sa.bindparam("w_task_run_id", type_=task_runs.c.task_run_id.type),
        task_runs.c.attempt_count == sa.bindparam("w_attempt_count", type_=task_runs.c.attempt_count.type),
    )
    .values(**{name: _set(task_runs.c[name]) for name in ("status", "end_date", *_COUNTS, "error_message", "task_log")})
    .returning(task_runs.c.pipeline_run_id)
)


def start_attempt(
    conn: sa.Connection,
    attempt_id: int,
    *,
    owner_id: str,
    pid: int,
    process_start: str,
    log_path: str,
    now: datetime,
) -> None:
    result = conn.execute(
        _START_ATTEMPT,
        {
            "w_attempt_id": attempt_id,
            "w_owner_id": owner_id,
            "p_started_at": now,
            "p_pid": pid,
            "p_process_start": process_start,
            "p_log_path": log_path,
        },
    )
    _check(result, f"attempt {attempt_id}", f"CLAIMED by {owner_id}", lambda: _found_attempt(conn, attempt_id))


def _end_attempt(
    conn: sa.Connection,
    attempt_id: int,
    *,
    guard: str,
    owner_id: str | None = None,
    expected: str,
    status: str,
    outcome: AttemptOutcome,
    now: datetime,
) -> int:
    """End the attempt and write its task-run summary (the attempt is the run's latest while live).
    `guard` names the statement of _END_ATTEMPT; "owned" and "running" are fenced by `owner_id`."""
    shared = _summary_values(outcome)
    fence = {} if guard == "live" else {"w_owner_id": owner_id}
    row = conn.execute(
        _END_ATTEMPT[guard],
        {
            "w_attempt_id": attempt_id,
            **fence,
            "p_status": status,
            "p_ended_at": now,
            "p_exit_code": outcome.exit_code,
            "p_retryable": outcome.retryable,
            **shared,
        },
    ).one_or_none()
    if row is None:
        raise _stale(f"attempt {attempt_id}", expected, _found_attempt(conn, attempt_id))
    run_id = _summarize_end(conn, row.task_run_id, row.attempt_number, status, now, shared)
    if run_id is None:  # a newer attempt holds the summary; the run still learns of this end
        run_id = conn.execute(
            sa.select(task_runs.c.pipeline_run_id).where(task_runs.c.task_run_id == row.task_run_id)
        ).scalar_one()
    # With the attempt's id: an overseer whose own task process ran it waits for the process's exit.
    announce(conn, f"ended:{run_id}:{attempt_id}")
    return int(row.task_run_id)


def _summary_values(outcome: AttemptOutcome) -> dict[str, Any]:
    """The values an attempt's end writes to both its own row and its task run's summary."""
    counts = outcome.counts
    return {
        "p_source_count": counts.source,
        "p_target_count": counts.target,
        "p_insert_count": counts.inserted,
        "p_update_count": counts.updated,
        "p_delete_count": counts.deleted,
        "p_rows_written": counts.rows_written,
        "p_error_message": outcome.error_message,
        "p_task_log": outcome.task_log,
    }


def _summarize_end(
    conn: sa.Connection, task_run_id: int, attempt_number: int, status: str, now: datetime, shared: dict[str, Any]
) -> int | None:
    """Write an attempt's end into its task run's summary while it is the run's latest attempt;
    returns the run id, or None when a newer attempt holds the summary."""
    return conn.execute(
        _SUMMARIZE_END,
        {
            "w_task_run_id": task_run_id,
            "w_attempt_count": attempt_number,
            "p_status": AttemptStatus(status).summary.value,
            "p_end_date": now,
            **shared,
        },
    ).scalar_one_or_none()


def rehearse_attempt_end(conn: sa.Connection, now: datetime) -> None:
    """Run the statements of finish_attempt for an attempt and a task run that do not exist (ids start
    at 1): nothing changes, and a process forked after this (task_process.rehearse) finds them
    compiled. The summary's statement runs only once the attempt's row matched, so it is run here
    on its own."""
    outcome = AttemptOutcome("SUCCESS", task_log="", exit_code=0)
    with contextlib.suppress(StaleTransitionError):  # as it must be: there is no such attempt
        finish_attempt(conn, 0, owner_id="", outcome=outcome, now=now, consumes=False)
    _summarize_end(conn, 0, 0, outcome.status, now, _summary_values(outcome))


def finish_attempt(
    conn: sa.Connection,
    attempt_id: int,
    *,
    owner_id: str,
    outcome: AttemptOutcome,
    now: datetime,
    consumes: bool = True,
) -> None:
    """The owner records SUCCESS or FAILED. With SUCCESS the script's offset and the attempt's
    cross-pipeline consumption are written in the same transaction, so all or none is recorded.
    `consumes=False` is for an owner that read no SATISFIED decision recorded with the claim (the
    task process's subject says so): the consumption statement is skipped on every ungated task."""
    assert outcome.status in ("SUCCESS", "FAILED")
    task_run_id = _end_attempt(
        conn,
        attempt_id,
        guard="owned",
        owner_id=owner_id,
        expected=f"CLAIMED or RUNNING, owned by {owner_id}",
        status=outcome.status,
        outcome=outcome,
        now=now,
    )
    if outcome.status != "SUCCESS":
        return
    if outcome.offset is not None:
        _store_offset(conn, task_run_id, outcome, now)
    if consumes:
        _consume_task_decisions(conn, attempt_id, now)


def _store_offset(conn: sa.Connection, task_run_id: int, outcome: AttemptOutcome, now: datetime) -> None:
    assert outcome.offset is not None
    task_id = conn.execute(sa.select(task_runs.c.task_id).where(task_runs.c.task_run_id == task_run_id)).scalar_one()
    values = {
        "task_id": task_id,
        "offset_type": outcome.offset.type.value,
        "offset_value": outcome.offset.value,
        "last_updated_timestamp": now,
    }
    insert = for_connection(conn).insert(offsets)
    conn.execute(
        insert.values(**values).on_conflict_do_update(
            index_elements=[offsets.c.task_id],
            set_={k: v for k, v in values.items() if k != "task_id"},
        )
    )


def _consume_task_decisions(conn: sa.Connection, attempt_id: int, now: datetime) -> None:
    """Consumption of cross-pipeline task edges comes only from the attempt's SATISFIED decisions."""
    selected = (
        sa.select(
            decisions.c.task_dependency_id,
            runs.c.pipeline_id,
            decisions.c.pipeline_run_id,
            task_deps.c.task_id,
            task_deps.c.depends_on_pipeline_id,
            decisions.c.selected_pipeline_run_id,
            decisions.c.selected_task_run_id,
            sa.func.coalesce(decisions.c.selected_revision, 1),
            sa.literal(now, type_=consumption.c.consumed_at.type),
        )
        .join(task_deps, task_deps.c.task_dependency_id == decisions.c.task_dependency_id)
        .join(runs, runs.c.pipeline_run_id == decisions.c.pipeline_run_id)
        .where(
            decisions.c.attempt_id == attempt_id,
            decisions.c.result == "SATISFIED",
            decisions.c.selected_pipeline_run_id.is_not(None),
        )
    )
    conn.execute(
        consumption.insert().from_select(
            [
                "task_dependency_id",
                "pipeline_id",
                "pipeline_run_id",
                "task_id",
                "depends_on_pipeline_id",
                "consumed_pipeline_run_id",
                "consumed_task_run_id",
                "consumed_revision",
                "consumed_at",
            ],
            selected,
        )
    )


def time_out_attempt(
    conn: sa.Connection, attempt_id: int, *, owner_id: str, outcome: AttemptOutcome, now: datetime
) -> None:
    _end_attempt(
        conn,
        attempt_id,
        guard="running",
        owner_id=owner_id,
        expected=f"RUNNING, owned by {owner_id}",
        status="TIMED_OUT",
        outcome=outcome,
        now=now,
    )


def cancel_attempt(conn: sa.Connection, attempt_id: int, *, actor: Actor, reason: str, now: datetime) -> None:
    _end_attempt(
        conn,
        attempt_id,
        guard="live",
        expected="QUEUED, CLAIMED or RUNNING",
        status="CANCELLED",
        outcome=AttemptOutcome("CANCELLED", error_message=f"cancelled by {actor.name}: {reason}", retryable=False),
        now=now,
    )


def lose_attempt(conn: sa.Connection, attempt_id: int, *, expected_owner: str, message: str, now: datetime) -> None:
    """The reconciler records that nobody can vouch for an attempt any more (its side effects are unknown)."""
    _end_attempt(
        conn,
        attempt_id,
        guard="owned",
        owner_id=expected_owner,
        expected=f"CLAIMED or RUNNING, owned by {expected_owner}",
        status="LOST",
        outcome=AttemptOutcome("LOST", error_message=message),
        now=now,
    )


def mark_task(
    conn: sa.Connection,
    *,
    pipeline_run_id: int,
    task_id: int,
    status: str,
    actor: Actor,
    reason: str,
    now: datetime,
    rows: int | None = None,
) -> str | None:
    """An operator sets a task's summary status under a run; refused while an attempt of it is live.

    Attempts keep their own evidence; only the summary changes. Returns the status it had (None when
    the task had not run).
    """
    assert status in ("SUCCESS", "FAILED", "SKIPPED")
    existing = conn.execute(
        sa.select(task_runs.c.task_run_id, task_runs.c.status, task_runs.c.error_message).where(
            task_runs.c.pipeline_run_id == pipeline_run_id, task_runs.c.task_id == task_id
        )
    ).one_or_none()
    message = f"marked {status} by {actor.name}: {reason}"
    counts = {} if rows is None else {"target_count": rows, "rows_written": rows}
    subject = f"task {task_id} of run {pipeline_run_id}"
    if existing is None:
        try:
            with conn.begin_nested():
                conn.execute(
                    task_runs.insert().values(
                        task_id=task_id,
                        pipeline_run_id=pipeline_run_id,
                        status=status,
                        start_date=now,
                        end_date=now,
                        attempt_count=0,
                        error_message=message,
                        **counts,
                    )
                )
        except sa.exc.IntegrityError:
            raise _stale(subject, "not run yet", "a task run created meanwhile") from None
    else:
        live = sa.exists().where(attempts.c.task_run_id == task_runs.c.task_run_id, attempts.c.status.in_(LIVE_ATTEMPT))
        result = conn.execute(
            task_runs.update()
            .where(task_runs.c.task_run_id == existing.task_run_id, task_runs.c.status == existing.status, ~live)
            .values(status=status, end_date=now, error_message=message, **counts)
        )
        _check(result, subject, f"{existing.status} with no live attempt", "an attempt is queued or running")
    record_intervention(
        conn,
        run_id=pipeline_run_id,
        action=InterventionAction.MARK,
        actor=actor,
        reason=reason,
        now=now,
        task_id=task_id,
        from_status=existing.status if existing else None,
        to_status=status,
        target_count=rows,
        previous_message=existing.error_message if existing else None,
    )
    return existing.status if existing else None


def reset_task(
    conn: sa.Connection, *, pipeline_run_id: int, task_id: int, actor: Actor, reason: str, now: datetime
) -> None:
    """A task the engine skipped goes back to not run yet, so a repaired run can start it.

    Only a SKIPPED row without attempts can be reset; the removed row is kept in the RESET intervention.
    """
    existing = conn.execute(
        sa.select(task_runs.c.task_run_id, task_runs.c.error_message).where(
            task_runs.c.pipeline_run_id == pipeline_run_id, task_runs.c.task_id == task_id
        )
    ).one_or_none()
    result = conn.execute(
        task_runs.delete().where(
            task_runs.c.pipeline_run_id == pipeline_run_id,
            task_runs.c.task_id == task_id,
            task_runs.c.status == "SKIPPED",
            ~sa.exists().where(attempts.c.task_run_id == task_runs.c.task_run_id),
        )
    )
    _check(result, f"task {task_id} of run {pipeline_run_id}", "SKIPPED without attempts", "another state")
    record_intervention(
        conn,
        run_id=pipeline_run_id,
        action=InterventionAction.RESET,
        actor=actor,
        reason=reason,
        now=now,
        task_id=task_id,
        from_status="SKIPPED",
        previous_message=existing.error_message if existing else None,
    )
