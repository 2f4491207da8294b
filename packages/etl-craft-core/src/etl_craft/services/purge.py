"""`purge`: remove Engine DB history past the Retention section's days (S6.A).

Order: attempts, consumption and interventions by their own ages, then whole runs (with their task
runs and remaining rows) past Run_history_days. Every batch is its own transaction, so a concurrent
run waits at most for one batch; a dry run does the same work in one transaction it rolls back, so
its counts are exactly what a purge would remove now.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from typing import Any

import sqlalchemy as sa

from etl_craft.config.model import RetentionSettings
from etl_craft.core.actor import Actor, host_name
from etl_craft.core.clock import iso, utc_now
from etl_craft.core.errors import UsageError
from etl_craft.engine import retention
from etl_craft.engine.database import EngineDb, writing_for
from etl_craft.engine.schema import tables as t
from etl_craft.services.context import OperationContext

_Stage = Callable[[sa.Connection, datetime, int], retention.Batch]


@dataclass(frozen=True)
class PurgeView:
    """The `etl-craft/purge/1` document: rows removed (or, dry, that would be) per table."""

    dry_run: bool
    cutoffs: dict[str, str | None]
    removed: dict[str, int]
    transactions: int
    action_id: int | None
    message: str = field(default="")

    def lines(self) -> list[str]:
        verb = "would remove" if self.dry_run else "removed"
        out = [f"{table}: {verb} {count} row(s)" for table, count in self.removed.items()]
        return [*out, self.message]


def _next_batch(stage: _Stage, cutoff: datetime, after: int, conn: sa.Connection) -> retention.Batch:
    return stage(conn, cutoff, after)


class _DryRun(Exception):
    """Raised inside the dry run's transaction so that it rolls back."""


def _cutoffs(settings: RetentionSettings, now: datetime) -> dict[str, datetime | None]:
    def before(days: int | None) -> datetime | None:
        return None if days is None else now - timedelta(days=days)

    return {
        "attempts": before(settings.attempt_log_days),
        "consumption": before(settings.consumption_days),
        "interventions": before(settings.interventions_days),
        "runs": before(settings.run_history_days),
    }


class _Purge:
    """One purge's progress: the counts so far and the transactions it has committed."""

    def __init__(self, db: EngineDb, conn: sa.Connection | None) -> None:
        self.db = db
        self.conn = conn  # the dry run's single transaction; None: one transaction per batch
        self.removed: dict[str, int] = {}
        self.transactions = 0

    def _run(self, work: Callable[[sa.Connection], Any]) -> Any:
        if self.conn is not None:
            return work(self.conn)
        with self.db.write() as conn:
            self.transactions += 1
            return work(conn)

    def _add(self, table: str, count: int) -> None:
        self.removed[table] = self.removed.get(table, 0) + count

    def rows(self, table: str, stage: _Stage, cutoff: datetime | None) -> None:
        self._add(table, 0)
        if cutoff is None:
            return
        batch = retention.Batch(retention.BATCH_ROWS, 0)
        while batch.removed == retention.BATCH_ROWS:
            batch = self._run(partial(_next_batch, stage, cutoff, batch.last_id))
            self._add(table, batch.removed)

    def runs(self, cutoff: datetime | None) -> None:
        self._add("AUD_PIPELINES_RUN_LOG", 0)
        if cutoff is None:
            return

        def one_batch(conn: sa.Connection) -> int:
            ids = retention.purgeable_runs(conn, cutoff)
            for table, count in retention.delete_runs(conn, ids).items():
                self._add(table, count)
            return len(ids)

        # Removing a run can free an older run only it referenced, so batches go on until none is left.
        while self._run(one_batch):
            pass


def purge(
    db: EngineDb, settings: RetentionSettings, now: datetime, *, dry_run: bool = False
) -> tuple[dict[str, int], int]:
    """Remove (or count) everything past retention; returns rows per table and transactions used."""
    cutoffs = _cutoffs(settings, now)

    def stages(job: _Purge) -> None:
        job.rows("AUD_TASK_ATTEMPTS", retention.delete_attempts, cutoffs["attempts"])
        job.rows("AUD_DEPENDENCY_CONSUMPTION", retention.delete_consumption, cutoffs["consumption"])
        job.rows("AUD_RUN_INTERVENTIONS", retention.delete_interventions, cutoffs["interventions"])
        job.runs(cutoffs["runs"])

    with writing_for("retention"):
        if not dry_run:
            job = _Purge(db, None)
            stages(job)
            return job.removed, job.transactions
        try:
            with db.write() as conn:
                job = _Purge(db, conn)
                stages(job)
                raise _DryRun
        except _DryRun:
            return job.removed, 1


def record_purge(db: EngineDb, actor: Actor, started_at: datetime, arguments: dict[str, Any]) -> int:
    """The AUD_ACTIONS row of a purge, written once it has ended, with what it removed."""
    with db.write() as conn:
        return int(
            conn.execute(
                t.aud_actions.insert()
                .values(
                    started_at=started_at,
                    ended_at=utc_now(),
                    actor=actor.name,
                    actor_kind=actor.kind.value,
                    host=host_name(),
                    command="purge",
                    arguments=arguments,
                    outcome="COMPLETED",
                    exit_code=0,
                )
                .returning(t.aud_actions.c.action_id)
            ).scalar_one()
        )


def purge_history(ctx: OperationContext, *, dry_run: bool = False, archive_to: str | None = None) -> PurgeView:
    """`etl-craft purge`: what the Retention section says is past keeping leaves the Engine DB."""
    if archive_to is not None:
        # Refused rather than ignored: deleting rows the user asked to keep a copy of would lose them.
        raise UsageError(
            "etl-craft purge --archive-to",
            found=repr(archive_to),
            expected="no --archive-to: this release cannot copy purged rows to the warehouse yet",
            remedy="run etl-craft purge --dry-run to see what would go, and copy it with your own tools first",
        )
    started_at = utc_now()
    cutoffs = {name: iso(value) for name, value in _cutoffs(ctx.config.retention, started_at).items()}
    removed, transactions = purge(ctx.db, ctx.config.retention, started_at, dry_run=dry_run)
    arguments = {"dry_run": dry_run, "cutoffs": cutoffs, "removed": removed}
    action_id = None if dry_run else record_purge(ctx.db, ctx.actor, started_at, arguments)
    total = sum(removed.values())
    if dry_run:
        message = f"dry run: a purge would remove {total} row(s) now; nothing was removed"
    else:
        message = f"purge removed {total} row(s) in {transactions} transaction(s) (AUD_ACTIONS action_id={action_id})"
    return PurgeView(dry_run, cutoffs, removed, transactions, action_id, message)
