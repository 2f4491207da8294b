"""What every transition shares: the guard on its row count, what it found instead, and the
notifications that wake overseers."""

from __future__ import annotations

from collections.abc import Callable

import sqlalchemy as sa

from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine.dialects import for_connection
from etl_craft.engine.schema.tables import aud_pipelines_run_log as runs
from etl_craft.engine.schema.tables import aud_task_attempts as attempts
from etl_craft.engine.schema.tables import aud_task_run_log as task_runs

EVENTS_CHANNEL = "etl_craft_events"


# --- helpers -------------------------------------------------------------------------------------


def announce(conn: sa.Connection, *payloads: str) -> None:
    """Wake overseers once this transaction commits: `run:<id>` or `pipeline:<id>` for a change to one,
    `ended:<run id>:<attempt id>` for an attempt's end (many in one call). Where the Engine DB cannot
    notify, overseers sweep often instead."""
    for_connection(conn).announce(conn, EVENTS_CHANNEL, payloads)


def found_run(conn: sa.Connection, run_id: int) -> str:
    row = conn.execute(
        sa.select(runs.c.status, runs.c.owner_id, runs.c.lease_expires_at).where(runs.c.pipeline_run_id == run_id)
    ).one_or_none()
    if row is None:
        return "no such run"
    owner = f", owned by {row.owner_id} until {row.lease_expires_at:%Y-%m-%d %H:%M:%S}Z" if row.owner_id else ""
    return f"status {row.status}{owner}"


def found_attempt(conn: sa.Connection, attempt_id: int) -> str:
    row = conn.execute(
        sa.select(attempts.c.status, attempts.c.owner_id).where(attempts.c.attempt_id == attempt_id)
    ).one_or_none()
    if row is None:
        return "no such attempt"
    return f"status {row.status}" + (f", owned by {row.owner_id}" if row.owner_id else "")


def found_task_run(conn: sa.Connection, run_id: int, task_id: int) -> str:
    row = conn.execute(
        sa.select(task_runs.c.status, task_runs.c.attempt_count).where(
            task_runs.c.pipeline_run_id == run_id, task_runs.c.task_id == task_id
        )
    ).one_or_none()
    return "no task run" if row is None else f"status {row.status} after {row.attempt_count} attempt(s)"


def status_of_run(conn: sa.Connection, run_id: int) -> str:
    status = conn.execute(sa.select(runs.c.status).where(runs.c.pipeline_run_id == run_id)).scalar_one_or_none()
    if status is None:
        raise stale_error(f"run {run_id}", "an existing run", "no such run")
    return str(status)


def stale_error(subject: str, expected: str, found: str) -> StaleTransitionError:
    return StaleTransitionError(
        subject,
        found=found,
        expected=expected,
        remedy="another process or operator changed it first; look again with etl-craft status",
    )


def check_rowcount(
    result: sa.CursorResult, subject: str, expected: str, found: str | Callable[[], str] | None = None
) -> None:
    """Refuse an update that matched no row. `found` may be a function: the extra SELECT that says what
    was found instead runs only on refusal, never on the hot path of a transition that succeeded."""
    if result.rowcount != 1:
        raise stale_error(subject, expected, (found() if callable(found) else found) or "a different state")
