"""Status changes operators ask for: a run reopened, marked or cancelled, a task marked or reset
for a rerun, each recorded as an intervention with its actor and reason."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.core.enums import (
    FINISHED_RUN,
    LIVE_ATTEMPT,
    OWN_TASK_END,
    UNFINISHED_RUN,
    InterventionAction,
    RunStatus,
)
from etl_craft.engine.schema.tables import aud_pipelines_run_log as runs
from etl_craft.engine.schema.tables import aud_run_interventions as interventions
from etl_craft.engine.schema.tables import aud_task_attempts as attempts
from etl_craft.engine.schema.tables import aud_task_run_log as task_runs
from etl_craft.engine.transitions.common import announce, check_rowcount, found_run, stale_error, status_of_run
from etl_craft.engine.transitions.queue import request_cancel
from etl_craft.engine.transitions.runs import no_live_attempt_of_run


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


def reopen_run(
    conn: sa.Connection, run_id: int, *, actor: Actor, reason: str, now: datetime, task_id: int | None = None
) -> RunStatus:
    """An ended run back to IN-PROGRESS for a repair, if no other run of its pipeline is unfinished."""
    previous = status_of_run(conn, run_id)
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
    check_rowcount(
        result,
        f"run {run_id}",
        "an ended run, and no other unfinished run of its pipeline",
        lambda: found_run(conn, run_id) + "; or another run of the pipeline is unfinished",
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
    previous = status_of_run(conn, run_id)
    republish = status is RunStatus.SUCCESS
    result = conn.execute(
        runs.update()
        .where(
            runs.c.pipeline_run_id == run_id,
            runs.c.status.in_((*FINISHED_RUN, "IN-PROGRESS")),
            no_live_attempt_of_run(runs.c.pipeline_run_id),
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
    check_rowcount(
        result,
        f"run {run_id}",
        "ended or IN-PROGRESS, with no claimed or running attempt",
        lambda: found_run(conn, run_id),
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
    """An operator cancels an unfinished run: the run ends CANCELLED, and so do its queued attempts and
    those a local supervisor holds (it sees the change and stops their processes) with their task runs.
    An attempt a remote worker holds is asked to stop instead (request_cancel, S5.D): its worker ends
    it CANCELLED when its process has stopped, and its task run stays IN-PROGRESS until then, so the
    Engine DB never says it stopped before it did. The run records the operator's decision at once.

    Returns the ids of the attempts cancelled and of those asked to stop.
    """
    previous = status_of_run(conn, run_id)
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
    check_rowcount(result, f"run {run_id}", "QUEUED or IN-PROGRESS", lambda: found_run(conn, run_id))
    of_run = sa.select(task_runs.c.task_run_id).where(task_runs.c.pipeline_run_id == run_id)
    requested = request_cancel(conn, attempts.c.task_run_id.in_(of_run), now=now)
    cancelled = (
        conn.execute(
            attempts.update()
            .where(
                attempts.c.task_run_id.in_(of_run),
                attempts.c.status.in_(LIVE_ATTEMPT),
                attempts.c.cancel_requested_at.is_(None),
            )
            .values(status="CANCELLED", ended_at=now, error_message=f"cancelled by {actor.name}: {reason}")
            .returning(attempts.c.attempt_id)
        )
        .scalars()
        .all()
    )
    stopping = sa.select(attempts.c.task_run_id).where(attempts.c.attempt_id.in_(requested))
    conn.execute(
        task_runs.update()
        .where(
            task_runs.c.pipeline_run_id == run_id,
            task_runs.c.status == "IN-PROGRESS",
            task_runs.c.task_run_id.not_in(stopping),
        )
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
    return [*cancelled, *requested]


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
    assert status in OWN_TASK_END
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
            raise stale_error(subject, "not run yet", "a task run created meanwhile") from None
    else:
        live = sa.exists().where(attempts.c.task_run_id == task_runs.c.task_run_id, attempts.c.status.in_(LIVE_ATTEMPT))
        result = conn.execute(
            task_runs.update()
            .where(task_runs.c.task_run_id == existing.task_run_id, task_runs.c.status == existing.status, ~live)
            .values(status=status, end_date=now, error_message=message, **counts)
        )
        check_rowcount(result, subject, f"{existing.status} with no live attempt", "an attempt is queued or running")
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
    check_rowcount(result, f"task {task_id} of run {pipeline_run_id}", "SKIPPED without attempts", "another state")
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
