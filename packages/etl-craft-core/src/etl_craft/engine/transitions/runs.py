"""Status changes the engine makes to runs: created, admitted, held, started and ended, the leases
their owners renew, and the tasks a run skips."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.core.enums import (
    OWNED_ATTEMPT,
    UNFINISHED_RUN,
    RunStatus,
    TriggerKind,
)
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine.dialects import for_connection
from etl_craft.engine.schema.tables import aud_gate_waits as gate_waits
from etl_craft.engine.schema.tables import aud_pipelines_run_log as runs
from etl_craft.engine.schema.tables import aud_task_attempts as attempts
from etl_craft.engine.schema.tables import aud_task_run_log as task_runs
from etl_craft.engine.schema.tables import cfg_pipeline_dependency as pipeline_deps
from etl_craft.engine.schema.tables import cfg_pipelines as pipelines
from etl_craft.engine.schema.tables import cfg_tasks as tasks
from etl_craft.engine.transitions.common import announce, check_rowcount, found_run, stale_error


def no_live_attempt_of_run(run_id: object) -> sa.ColumnElement[bool]:
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
        raise stale_error(f"run {run_id}", expected, "another run of its pipeline is IN-PROGRESS") from None
    check_rowcount(result, f"run {run_id}", expected, lambda: found_run(conn, run_id))


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
        raise stale_error(
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
    check_rowcount(result, f"run {run_id}", "QUEUED with no live owner", lambda: found_run(conn, run_id))


def release_run(conn: sa.Connection, run_id: int, *, owner_id: str) -> None:
    """The supervisor leaves a run IN-PROGRESS (paused, interrupted) for another to resume."""
    result = conn.execute(
        runs.update()
        .where(runs.c.pipeline_run_id == run_id, runs.c.owner_id == owner_id)
        .values(owner_id=None, lease_expires_at=None)
    )
    check_rowcount(result, f"run {run_id}", f"owned by {owner_id}", lambda: found_run(conn, run_id))
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
        conditions.append(no_live_attempt_of_run(runs.c.pipeline_run_id))
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
    check_rowcount(
        result,
        f"run {run_id}",
        f"{from_status.value}{owner} and no claimed or running attempt",
        lambda: found_run(conn, run_id),
    )
    announce(conn, f"run:{run_id}")


def record_sla(conn: sa.Connection, run_id: int, *, sla_status: str) -> bool:
    """Decide a live run's SLA once (a breach seen while it runs); returns whether this call decided it."""
    result = conn.execute(
        runs.update().where(runs.c.pipeline_run_id == run_id, runs.c.sla_status.is_(None)).values(sla_status=sla_status)
    )
    return result.rowcount == 1


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
        check_rowcount(
            result,
            f"lease of run {run_id}",
            f"QUEUED or IN-PROGRESS, owned by {owner_id}",
            lambda: found_run(conn, run_id),
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
        raise stale_error(f"task {task_id} of run {pipeline_run_id}", "no task run yet", "a task run already") from None
