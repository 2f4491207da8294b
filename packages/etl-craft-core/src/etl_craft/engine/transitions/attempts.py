"""Status changes of attempts: queued, claimed, started and ended (succeeded, failed, timed out,
cancelled, lost), each fenced by its owner, with its task run's summary written in the same transaction."""

from __future__ import annotations

import contextlib
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from etl_craft.core.actor import Actor
from etl_craft.core.enums import (
    LIVE_ATTEMPT,
    OWNED_ATTEMPT,
    AttemptStatus,
)
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine.dialects import for_connection
from etl_craft.engine.schema.tables import aud_dependency_consumption as consumption
from etl_craft.engine.schema.tables import aud_gate_decisions as decisions
from etl_craft.engine.schema.tables import aud_pipelines_run_log as runs
from etl_craft.engine.schema.tables import aud_task_attempts as attempts
from etl_craft.engine.schema.tables import aud_task_offset_tracker as offsets
from etl_craft.engine.schema.tables import aud_task_run_log as task_runs
from etl_craft.engine.schema.tables import cfg_task_dependency as task_deps
from etl_craft.engine.transitions.common import announce, check_rowcount, found_attempt, found_task_run, stale_error
from etl_craft.engine.transitions.values import AttemptOutcome, QueuedAttempt

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
                raise stale_error(subject, expected, found_task_run(conn, pipeline_run_id, task_id))
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
        raise stale_error(subject, "no task run yet, or no live attempt", "another caller queued it first") from None
    return QueuedAttempt(task_run_id, attempt_id, number)


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
    check_rowcount(result, f"attempt {attempt_id}", "QUEUED and due", lambda: found_attempt(conn, attempt_id))


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


_HELD = sa.and_(attempts.c.status.in_(OWNED_ATTEMPT), attempts.c.owner_id == _W_OWNER)
# By guard: held by the owner and not asked to stop (its outcome), held by the owner (fenced LOST
# by the reconciler), running for the owner (a time-out), live (a cancel), or held by the owner and
# asked to stop (its acknowledgement, which stamps the time). An attempt whose stop was requested
# (S5.D) ends CANCELLED by its owner, or LOST when its owner died first: a task process that
# finishes in the meantime is fenced, so a cancelled run never gains a late SUCCESS.
_END_ATTEMPT = {
    "owned": _end_attempt_statement(sa.and_(_HELD, attempts.c.cancel_requested_at.is_(None))),
    "held": _end_attempt_statement(_HELD),
    "running": _end_attempt_statement(sa.and_(attempts.c.status == "RUNNING", attempts.c.owner_id == _W_OWNER)),
    "live": _end_attempt_statement(attempts.c.status.in_(LIVE_ATTEMPT)),
    "acknowledged": _end_attempt_statement(sa.and_(_HELD, attempts.c.cancel_requested_at.is_not(None))).values(
        cancel_acknowledged_at=_set(attempts.c.ended_at)
    ),
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
    check_rowcount(result, f"attempt {attempt_id}", f"CLAIMED by {owner_id}", lambda: found_attempt(conn, attempt_id))


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
        raise stale_error(f"attempt {attempt_id}", expected, found_attempt(conn, attempt_id))
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
        expected=f"CLAIMED or RUNNING, owned by {owner_id}, no cancel requested",
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


def acknowledge_cancel(
    conn: sa.Connection, attempt_id: int, *, owner_id: str, outcome: AttemptOutcome, now: datetime
) -> None:
    """The owner of an attempt whose stop was requested has stopped its task process: the attempt
    ends CANCELLED with CANCEL_ACKNOWLEDGED_AT (S5.D), fenced by the owner."""
    _end_attempt(
        conn,
        attempt_id,
        guard="acknowledged",
        owner_id=owner_id,
        expected=f"CLAIMED or RUNNING, owned by {owner_id}, its cancel requested",
        status="CANCELLED",
        outcome=outcome,
        now=now,
    )


def lose_attempt(conn: sa.Connection, attempt_id: int, *, expected_owner: str, message: str, now: datetime) -> None:
    """The reconciler records that nobody can vouch for an attempt any more (its side effects are unknown)."""
    _end_attempt(
        conn,
        attempt_id,
        guard="held",
        owner_id=expected_owner,
        expected=f"CLAIMED or RUNNING, owned by {expected_owner}",
        status="LOST",
        outcome=AttemptOutcome("LOST", error_message=message),
        now=now,
    )
