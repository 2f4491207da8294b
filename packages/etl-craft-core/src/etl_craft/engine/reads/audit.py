"""Reads of the audit trail: run interventions, command requests (AUD_ACTIONS) and metadata changes.

Each read is one set query, bounded by what the caller shows (a run-id floor, a pipeline, a time).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from etl_craft.engine.schema import tables as t


@dataclass(frozen=True)
class InterventionRow:
    intervention_id: int
    pipeline_run_id: int
    task_id: int | None
    task_code: str | None  # None for an intervention on the run itself
    action: str
    from_status: str | None
    to_status: str | None
    target_count: int | None
    previous_message: str | None
    reason: str
    requested_by: str
    requested_by_kind: str | None
    requested_at: datetime


def interventions(
    conn: sa.Connection,
    pipeline_id: int,
    *,
    from_run_id: int | None = None,
    to_run_id: int | None = None,
    run_id: int | None = None,
    task_id: int | None = None,
) -> list[InterventionRow]:
    """A pipeline's interventions, newest first: in runs `from_run_id` to `to_run_id`, or in run
    `run_id`; with `task_id`, that task's and those on the run itself."""
    iv = t.aud_run_interventions
    query = (
        sa.select(
            iv.c.intervention_id,
            iv.c.pipeline_run_id,
            iv.c.task_id,
            t.cfg_tasks.c.task_code,
            iv.c.action,
            iv.c.from_status,
            iv.c.to_status,
            iv.c.target_count,
            iv.c.previous_message,
            iv.c.reason,
            iv.c.requested_by,
            iv.c.requested_by_kind,
            iv.c.requested_at,
        )
        .outerjoin(t.cfg_tasks, t.cfg_tasks.c.task_id == iv.c.task_id)
        .where(iv.c.pipeline_id == pipeline_id)
        .order_by(iv.c.requested_at.desc(), iv.c.intervention_id.desc())
    )
    if from_run_id is not None:
        query = query.where(iv.c.pipeline_run_id >= from_run_id)
    if to_run_id is not None:
        query = query.where(iv.c.pipeline_run_id <= to_run_id)
    if run_id is not None:
        query = query.where(iv.c.pipeline_run_id == run_id)
    if task_id is not None:
        query = query.where(sa.or_(iv.c.task_id == task_id, iv.c.task_id.is_(None)))
    return [InterventionRow(**row._mapping) for row in conn.execute(query)]


@dataclass(frozen=True)
class ActionRow:
    action_id: int
    started_at: datetime
    actor: str
    actor_kind: str
    host: str
    command: str
    arguments: Any
    pipeline_id: int | None
    pipeline_run_id: int | None
    task_id: int | None
    outcome: str
    exit_code: int | None


def actions(conn: sa.Connection, *, pipeline_id: int | None = None, since: datetime | None = None) -> list[ActionRow]:
    """Command requests, oldest first; optionally of one pipeline and from a time on."""
    a = t.aud_actions
    query = sa.select(*(a.c[name] for name in ActionRow.__dataclass_fields__)).order_by(a.c.action_id)
    if pipeline_id is not None:
        query = query.where(a.c.pipeline_id == pipeline_id)
    if since is not None:
        query = query.where(a.c.started_at >= since)
    return [ActionRow(**row._mapping) for row in conn.execute(query)]


@dataclass(frozen=True)
class MetadataChangeRow:
    change_id: int
    changed_at: datetime
    actor: str
    actor_kind: str
    table_name: str
    row_key: str
    operation: str
    before_json: Any
    after_json: Any
    migration: str | None


def _field(name: str) -> sa.ColumnElement[int]:
    """An id field of the changed row, from its after image, else its before image."""
    m = t.aud_metadata_changes
    return sa.func.coalesce(m.c.after_json[name].as_integer(), m.c.before_json[name].as_integer())


def metadata_changes(
    conn: sa.Connection, *, pipeline_id: int | None = None, since: datetime | None = None
) -> list[MetadataChangeRow]:
    """CFG_ row changes, oldest first. With a pipeline: its own rows, the rows of its tasks (parameters
    included) and dependencies on it from other pipelines."""
    m = t.aud_metadata_changes
    query = sa.select(*(m.c[name] for name in MetadataChangeRow.__dataclass_fields__)).order_by(m.c.change_id)
    if pipeline_id is not None:
        tasks_of_pipeline = sa.select(t.cfg_tasks.c.task_id).where(t.cfg_tasks.c.pipeline_id == pipeline_id)
        query = query.where(
            sa.or_(
                _field("PIPELINE_ID") == pipeline_id,
                _field("DEPENDS_ON_PIPELINE_ID") == pipeline_id,
                sa.and_(m.c.table_name == "CFG_TASK_PARAMETERS", _field("TASK_ID").in_(tasks_of_pipeline)),
            )
        )
    if since is not None:
        query = query.where(m.c.changed_at >= since)
    return [MetadataChangeRow(**row._mapping) for row in conn.execute(query)]


def task_handlers(conn: sa.Connection, task_ids: Iterable[int]) -> dict[int, str]:
    """task id -> HANDLER, for the tasks whose parameter changes are shown (S7.C hides by handler)."""
    ids = sorted(set(task_ids))
    if not ids:
        return {}
    rows = conn.execute(sa.select(t.cfg_tasks.c.task_id, t.cfg_tasks.c.handler).where(t.cfg_tasks.c.task_id.in_(ids)))
    return {r.task_id: r.handler for r in rows}
