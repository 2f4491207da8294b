"""Retention's statements (S6.A): each removes one batch of rows past their retention, oldest first,
as one set statement, and never a row that something retained still references.

Each function runs on the caller's transaction (marked `writing_for("retention")`, the only purpose
the append-only guards let delete) and returns what it removed, so the caller decides how many
batches share a transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.core.enums import ENDED_ATTEMPT, FINISHED_RUN
from etl_craft.engine.schema import tables as t

BATCH_ROWS = 10_000
# A run leaves with all its remaining rows (task runs, decisions, consumption, flags) in one
# transaction; a thousand runs of about ten tasks each keep that near BATCH_ROWS rows.
BATCH_RUNS = 1_000


@dataclass(frozen=True)
class Batch:
    rows: Sequence[sa.RowMapping]  # the rows removed, whole (RETURNING): what --archive-to writes
    last_id: int  # the highest id removed: the next batch starts after it (kept rows are not re-read)

    @property
    def removed(self) -> int:
        return len(self.rows)


def _keyset_delete(
    conn: sa.Connection, table: sa.Table, key: sa.Column, keep: sa.ColumnElement[bool], after: int
) -> Batch:
    """Delete the next BATCH_ROWS rows past `after` in key order that `keep` selects."""
    chosen = sa.select(key).where(key > after, keep).order_by(key).limit(BATCH_ROWS).scalar_subquery()
    rows = conn.execute(sa.delete(table).where(key.in_(chosen)).returning(*table.c)).mappings().all()
    return Batch(rows, max((row[key.name] for row in rows), default=after))


def delete_attempts(conn: sa.Connection, cutoff: datetime, after: int) -> Batch:
    """Ended attempts older than Attempt_log_days; an attempt a gate decision or an alert delivery
    names stays until its run goes."""
    a, gd, ad = t.aud_task_attempts, t.aud_gate_decisions, t.aud_alert_deliveries
    keep = sa.and_(
        a.c.status.in_([s.value for s in ENDED_ATTEMPT]),
        a.c.ended_at < cutoff,
        ~sa.exists().where(gd.c.attempt_id == a.c.attempt_id),
        ~sa.exists().where(ad.c.attempt_id == a.c.attempt_id),
    )
    return _keyset_delete(conn, a, a.c.attempt_id, keep, after)


def delete_consumption(conn: sa.Connection, cutoff: datetime, after: int) -> Batch:
    c = t.aud_dependency_consumption
    return _keyset_delete(conn, c, c.c.consumption_id, c.c.consumed_at < cutoff, after)


def delete_interventions(conn: sa.Connection, cutoff: datetime, after: int) -> Batch:
    i = t.aud_run_interventions
    return _keyset_delete(conn, i, i.c.intervention_id, i.c.requested_at < cutoff, after)


def delete_sessions(conn: sa.Connection, cutoff: datetime, after: int) -> Batch:
    """Web UI sessions that can no longer sign anyone in: expired, or ended by a sign-out, before the
    cutoff (the purge's start)."""
    s = t.aud_ui_sessions
    dead = sa.or_(s.c.expires_at < cutoff, s.c.ended_at < cutoff)
    return _keyset_delete(conn, s, s.c.session_id, dead, after)


def _referenced_from_elsewhere(run: sa.Table) -> Iterable[sa.ColumnElement[bool]]:
    """The references that keep a run: another run's consumption or gate decision naming it or one
    of its task runs, an intervention on it, or a standing business-rule flag one of its task runs
    raised."""
    c, gd, tr = t.aud_dependency_consumption, t.aud_gate_decisions, t.aud_task_run_log
    brr, res, iv = t.aud_business_rules_run_log, t.aud_business_rules_results, t.aud_run_interventions
    run_id = run.c.pipeline_run_id
    other_consumer = sa.or_(c.c.pipeline_run_id.is_(None), c.c.pipeline_run_id != run_id)
    yield sa.exists().where(c.c.consumed_pipeline_run_id == run_id, other_consumer)
    yield sa.exists().where(
        c.c.consumed_task_run_id == tr.c.task_run_id, tr.c.pipeline_run_id == run_id, other_consumer
    )
    yield sa.exists().where(gd.c.selected_pipeline_run_id == run_id, gd.c.pipeline_run_id != run_id)
    yield sa.exists().where(
        gd.c.selected_task_run_id == tr.c.task_run_id, tr.c.pipeline_run_id == run_id, gd.c.pipeline_run_id != run_id
    )
    yield sa.exists().where(iv.c.pipeline_run_id == run_id)
    yield sa.exists().where(
        res.c.business_rule_run_id == brr.c.business_rule_run_id,
        brr.c.task_run_id == tr.c.task_run_id,
        tr.c.pipeline_run_id == run_id,
        res.c.active_flag == "Y",
    )


def purgeable_runs(conn: sa.Connection, cutoff: datetime) -> list[int]:
    """The oldest BATCH_RUNS ended runs started before the cutoff that nothing retained references.
    The newest run of each pipeline always stays: gates and `history` look for it."""
    run = t.aud_pipelines_run_log
    newer = run.alias("newer")
    query = (
        sa.select(run.c.pipeline_run_id)
        .where(
            run.c.status.in_([s.value for s in FINISHED_RUN]),
            run.c.start_date < cutoff,
            sa.exists().where(
                newer.c.pipeline_id == run.c.pipeline_id, newer.c.pipeline_run_id > run.c.pipeline_run_id
            ),
            *(~reference for reference in _referenced_from_elsewhere(run)),
        )
        .order_by(run.c.pipeline_run_id)
        .limit(BATCH_RUNS)
    )
    return list(conn.execute(query).scalars())


def delete_runs(conn: sa.Connection, run_ids: list[int]) -> dict[str, Sequence[sa.RowMapping]]:
    """Remove the runs and every row that belongs to them, children first (the foreign keys have no
    cascade), returning the rows removed per table; AUD_ACTIONS rows naming a run stay, with the run
    id cleared."""
    if not run_ids:
        return {}
    ids: sa.BindParameter[list[int]] = sa.bindparam("run_ids", run_ids, expanding=True, literal_execute=True)
    tr, a, brr, res = (
        t.aud_task_run_log,
        t.aud_task_attempts,
        t.aud_business_rules_run_log,
        t.aud_business_rules_results,
    )
    task_runs = sa.select(tr.c.task_run_id).where(tr.c.pipeline_run_id.in_(ids))
    rule_runs = sa.select(brr.c.business_rule_run_id).where(brr.c.task_run_id.in_(task_runs))
    statements: list[tuple[str, sa.Executable]] = [
        ("AUD_GATE_DECISIONS", sa.delete(t.aud_gate_decisions).where(t.aud_gate_decisions.c.pipeline_run_id.in_(ids))),
        (
            "AUD_DEPENDENCY_CONSUMPTION",
            sa.delete(t.aud_dependency_consumption).where(t.aud_dependency_consumption.c.pipeline_run_id.in_(ids)),
        ),
        ("AUD_GATE_WAITS", sa.delete(t.aud_gate_waits).where(t.aud_gate_waits.c.pipeline_run_id.in_(ids))),
        (
            "AUD_ALERT_DELIVERIES",
            sa.delete(t.aud_alert_deliveries).where(t.aud_alert_deliveries.c.pipeline_run_id.in_(ids)),
        ),
        ("AUD_TASK_ATTEMPTS", sa.delete(a).where(a.c.task_run_id.in_(task_runs))),
        ("AUD_BUSINESS_RULES_RESULTS", sa.delete(res).where(res.c.business_rule_run_id.in_(rule_runs))),
        ("AUD_BUSINESS_RULES_RUN_LOG", sa.delete(brr).where(brr.c.task_run_id.in_(task_runs))),
        ("AUD_TASK_RUN_LOG", sa.delete(tr).where(tr.c.pipeline_run_id.in_(ids))),
        (
            "AUD_ACTIONS",
            sa.update(t.aud_actions).where(t.aud_actions.c.pipeline_run_id.in_(ids)).values(pipeline_run_id=None),
        ),
        (
            "AUD_PIPELINES_RUN_LOG",
            sa.delete(t.aud_pipelines_run_log).where(t.aud_pipelines_run_log.c.pipeline_run_id.in_(ids)),
        ),
    ]
    removed: dict[str, Sequence[sa.RowMapping]] = {}
    for table, statement in statements:
        if table == "AUD_ACTIONS":  # unlinked, not removed
            conn.execute(statement)
            continue
        columns = t.T[table.lower()].c
        removed[table] = conn.execute(statement.returning(*columns)).mappings().all()  # type: ignore[attr-defined]
    return removed
