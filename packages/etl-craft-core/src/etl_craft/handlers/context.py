"""What a handler is given and what it returns: the contract between the task process and handlers."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import date

import sqlalchemy as sa

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.enums import OWNED_ATTEMPT, Handler, TriggerKind
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema.tables import aud_task_attempts
from etl_craft.engine.transitions.values import Counts, StoredOffset

__all__ = ["Counts", "HandlerResult", "StoredOffset", "TaskContext"]


@dataclass(frozen=True)
class HandlerResult:
    counts: Counts = field(default_factory=Counts)
    offset: StoredOffset | None = None  # stored if and only if the attempt is recorded SUCCESS
    variables: tuple[tuple[str, str], ...] = ()  # listed in TASK_LOG as NAME = value
    warnings: tuple[str, ...] = ()  # listed in TASK_LOG and logged at WARNING; the task still succeeds


@dataclass(frozen=True)
class TaskContext:
    """One attempt of one task, as its handler sees it."""

    config: ConnectorConfig
    engine_db: EngineDb
    log: logging.Logger
    pipeline_id: int
    pipeline_code: str
    refresh_type: str
    pipeline_run_id: int
    run_key: str
    run_date: date
    trigger_kind: TriggerKind
    task_id: int
    task_code: str
    task_type: str
    handler: Handler
    task_run_id: int
    attempt_id: int
    attempt_number: int
    owner_id: str
    parameters: Mapping[str, str]
    stored_offset: StoredOffset | None = None  # None on a first run and in a backfill
    force: bool = False  # run --force: judge everything again (business rules re-check every row)
    rerun: bool = False  # run --rerun: a repeat requested by an operator

    @property
    def backfill(self) -> bool:
        return self.trigger_kind is TriggerKind.BACKFILL

    @contextmanager
    def fenced_write(self) -> Iterator[sa.Connection]:
        """An Engine DB write transaction that first proves this attempt is still live and ours.

        The attempt row stays locked until commit (on SQLite the write lock does it), so a reconciler
        marking it LOST waits; a zombie process (its attempt lost, cancelled or ended) gets StaleTransitionError.
        """
        with self.engine_db.write() as conn:
            # FOR UPDATE: SQLite has no row locks, and SQLAlchemy renders nothing there.
            query = (
                sa.select(aud_task_attempts.c.status, aud_task_attempts.c.owner_id)
                .where(aud_task_attempts.c.attempt_id == self.attempt_id)
                .with_for_update()
            )
            row = conn.execute(query).one_or_none()
            if row is None or row.owner_id != self.owner_id or row.status not in OWNED_ATTEMPT:
                found = "no such attempt" if row is None else f"status {row.status}, owner {row.owner_id}"
                raise StaleTransitionError(
                    f"attempt {self.attempt_id} of task {self.task_code}",
                    found=found,
                    expected=f"CLAIMED or RUNNING, owned by {self.owner_id}",
                    remedy="nothing to do: another process owns this task now, so this one changes nothing",
                )
            yield conn
