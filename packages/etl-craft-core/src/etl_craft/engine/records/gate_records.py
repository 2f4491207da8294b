"""What gates record: one decision per judged dependency, durable waits, and pipeline consumption.

Decisions are written in the transaction that admits (or skips) the run or attempt they were judged
for; consumption rows are copied from the SATISFIED decisions in the transaction that ends the run
SUCCESS, so nothing is ever judged twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.engine.schema import tables as t

SATISFIED, UNSATISFIED, BYPASSED = "SATISFIED", "UNSATISFIED", "BYPASSED"


@dataclass(frozen=True)
class Decision:
    pipeline_dependency_id: int | None
    task_dependency_id: int | None
    result: str  # SATISFIED, UNSATISFIED or BYPASSED
    reason: str
    selected_pipeline_run_id: int | None = None
    selected_task_run_id: int | None = None
    selected_revision: int | None = None


def record_decisions(
    conn: sa.Connection, run_id: int, decisions: Iterable[Decision], now: datetime, attempt_id: int | None = None
) -> None:
    rows = [
        {
            "pipeline_run_id": run_id,
            "attempt_id": attempt_id,
            "pipeline_dependency_id": d.pipeline_dependency_id,
            "task_dependency_id": d.task_dependency_id,
            "selected_pipeline_run_id": d.selected_pipeline_run_id,
            "selected_task_run_id": d.selected_task_run_id,
            "selected_revision": d.selected_revision,
            "result": d.result,
            "reason": d.reason,
            "decided_at": now,
        }
        for d in decisions
    ]
    if rows:
        conn.execute(t.aud_gate_decisions.insert(), rows)


@dataclass(frozen=True)
class StoredWait:
    first_check_at: datetime
    next_check_at: datetime | None
    looks: int
    wait_until: datetime


def _wait_key(run_id: int, task_id: int | None) -> sa.ColumnElement[bool]:
    waits = t.aud_gate_waits
    task = waits.c.task_id.is_(None) if task_id is None else waits.c.task_id == task_id
    return sa.and_(waits.c.pipeline_run_id == run_id, task)


def load_wait(conn: sa.Connection, run_id: int, task_id: int | None) -> StoredWait | None:
    waits = t.aud_gate_waits
    row = conn.execute(
        sa.select(waits.c.first_check_at, waits.c.next_check_at, waits.c.looks, waits.c.wait_until).where(
            _wait_key(run_id, task_id)
        )
    ).one_or_none()
    return StoredWait(**row._mapping) if row else None


def save_wait(conn: sa.Connection, run_id: int, task_id: int | None, wait: StoredWait) -> None:
    """Insert or update the wait of one run (task_id None) or one task of it."""
    waits = t.aud_gate_waits
    values = {
        "first_check_at": wait.first_check_at,
        "next_check_at": wait.next_check_at,
        "looks": wait.looks,
        "wait_until": wait.wait_until,
    }
    updated = conn.execute(waits.update().where(_wait_key(run_id, task_id)).values(**values))
    if updated.rowcount == 0:
        conn.execute(waits.insert().values(pipeline_run_id=run_id, task_id=task_id, **values))


def settle_wait(conn: sa.Connection, run_id: int, task_id: int | None) -> None:
    """The wait is over (admitted or refused): NEXT_CHECK_AT becomes NULL, the history stays."""
    conn.execute(t.aud_gate_waits.update().where(_wait_key(run_id, task_id)).values(next_check_at=None))


def consume_pipeline_decisions(conn: sa.Connection, run_id: int, now: datetime) -> None:
    """A run that ended SUCCESS consumes the upstream runs its pipeline gates admitted."""
    d, deps, runs = t.aud_gate_decisions, t.cfg_pipeline_dependency, t.aud_pipelines_run_log
    selected = (
        sa.select(
            d.c.pipeline_dependency_id,
            runs.c.pipeline_id,
            d.c.pipeline_run_id,
            deps.c.depends_on_pipeline_id,
            d.c.selected_pipeline_run_id,
            sa.func.coalesce(d.c.selected_revision, 1),
            sa.literal(now, type_=t.aud_dependency_consumption.c.consumed_at.type),
        )
        .join(deps, deps.c.pipeline_dependency_id == d.c.pipeline_dependency_id)
        .join(runs, runs.c.pipeline_run_id == d.c.pipeline_run_id)
        .where(
            d.c.pipeline_run_id == run_id,
            d.c.attempt_id.is_(None),
            d.c.result == SATISFIED,
            d.c.selected_pipeline_run_id.is_not(None),
        )
    )
    conn.execute(
        t.aud_dependency_consumption.insert().from_select(
            [
                "pipeline_dependency_id",
                "pipeline_id",
                "pipeline_run_id",
                "depends_on_pipeline_id",
                "consumed_pipeline_run_id",
                "consumed_revision",
                "consumed_at",
            ],
            selected,
        )
    )


def pipeline_gate_edges(conn: sa.Connection, pipeline_id: int) -> list[sa.Row]:
    """The pipeline's active dependencies on other active pipelines."""
    deps, up = t.cfg_pipeline_dependency, t.cfg_pipelines
    return list(
        conn.execute(
            sa.select(
                deps.c.pipeline_dependency_id,
                deps.c.depends_on_pipeline_id,
                deps.c.dependency_type,
                deps.c.consume_repairs,
                up.c.pipeline_code,
            )
            .join(up, up.c.pipeline_id == deps.c.depends_on_pipeline_id)
            .where(deps.c.pipeline_id == pipeline_id, deps.c.active_flag == "Y", up.c.active_flag == "Y")
            .order_by(deps.c.pipeline_dependency_id)
        ).all()
    )
