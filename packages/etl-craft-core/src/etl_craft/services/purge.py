"""`purge`: remove Engine DB history past the Retention section's days (S6.A).

Order: attempts, consumption and interventions by their own ages, then whole runs (with their task
runs and remaining rows) past Run_history_days. Every batch is its own transaction, so a concurrent
run waits at most for one batch; a dry run does the same work in one transaction it rolls back, so
its counts are exactly what a purge would remove now.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from etl_craft.config.model import RetentionSettings
from etl_craft.core.actor import Actor, host_name
from etl_craft.core.clock import iso, utc_now
from etl_craft.engine import retention
from etl_craft.engine.database import EngineDb, writing_for
from etl_craft.engine.schema import tables as t
from etl_craft.execution.processes.log_store import open_store
from etl_craft.services.context import OperationContext
from etl_craft.services.purge_archive import PurgeArchive

_Stage = Callable[[sa.Connection, datetime, int], retention.Batch]


@dataclass(frozen=True)
class PurgeView:
    """The `etl-craft/purge/1` document: rows removed (or, dry, that would be) per table."""

    dry_run: bool
    cutoffs: dict[str, str | None]
    removed: dict[str, int]
    transactions: int
    action_id: int | None
    log_files: int
    archive_to: str | None  # the folder the removed rows were written to
    message: str = field(default="")

    def lines(self) -> list[str]:
        verb = "would remove" if self.dry_run else "removed"
        out = [f"{table}: {verb} {count} row(s)" for table, count in self.removed.items()]
        return [*out, self.message]


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
    """One purge's progress: the counts so far, the transactions it has committed, and the log files
    of removed attempts, which go once their rows' transaction has committed (never before: a rolled
    back batch keeps its attempts, and so their logs)."""

    def __init__(
        self, db: EngineDb, conn: sa.Connection | None, archive: PurgeArchive | None, store: str | None
    ) -> None:
        self.db = db
        self.conn = conn  # the dry run's single transaction; None: one transaction per batch
        self.archive = archive
        self.store = open_store(store)
        self.removed: dict[str, int] = {}
        self.transactions = 0
        self.log_files = 0
        self._pending_logs: list[str] = []

    def _run(self, work: Callable[[sa.Connection], Any]) -> Any:
        if self.conn is not None:
            return work(self.conn)
        with self.db.write() as conn:
            self.transactions += 1
            result = work(conn)
        self._remove_logs()
        return result

    def _remove_logs(self) -> None:
        paths, self._pending_logs = self._pending_logs, []
        for path in paths:
            Path(path).unlink(missing_ok=True)
        if self.store is not None and paths:
            self.store.delete(paths)

    def _took(self, table: str, rows: Sequence[sa.RowMapping]) -> None:
        """Inside the batch's transaction: count, archive (a failed write rolls the batch back), and
        note the log files of removed attempts."""
        self.removed[table] = self.removed.get(table, 0) + len(rows)
        if self.archive is not None:
            self.archive.write(table, rows)
        if table == "AUD_TASK_ATTEMPTS":
            paths = [row["log_path"] for row in rows if row["log_path"]]
            self.log_files += len(paths)
            if self.conn is None:
                self._pending_logs.extend(paths)

    def rows(self, table: str, stage: _Stage, cutoff: datetime | None) -> None:
        self.removed.setdefault(table, 0)
        if cutoff is None:
            return

        def one_batch(after: int, conn: sa.Connection) -> retention.Batch:
            batch = stage(conn, cutoff, after)
            self._took(table, batch.rows)
            return batch

        after = 0
        while True:
            batch = self._run(partial(one_batch, after))
            if batch.removed < retention.BATCH_ROWS:
                return
            after = batch.last_id

    def runs(self, cutoff: datetime | None) -> None:
        self.removed.setdefault("AUD_PIPELINES_RUN_LOG", 0)
        if cutoff is None:
            return

        def one_batch(conn: sa.Connection) -> int:
            ids = retention.purgeable_runs(conn, cutoff)
            for table, rows in retention.delete_runs(conn, ids).items():
                self._took(table, rows)
            return len(ids)

        # Removing a run can free an older run only it referenced, so batches go on until none is left.
        while self._run(one_batch):
            pass


@dataclass(frozen=True)
class PurgeCounts:
    removed: dict[str, int]  # rows per table
    transactions: int
    log_files: int  # attempt log files removed (from Log_dir and Logs.Store)


def purge(
    db: EngineDb,
    settings: RetentionSettings,
    now: datetime,
    *,
    dry_run: bool = False,
    archive: PurgeArchive | None = None,
    store: str | None = None,
) -> PurgeCounts:
    """Remove (or count) everything past retention, archiving each batch first when asked."""
    cutoffs = _cutoffs(settings, now)

    def stages(job: _Purge) -> PurgeCounts:
        job.rows("AUD_TASK_ATTEMPTS", retention.delete_attempts, cutoffs["attempts"])
        job.rows("AUD_DEPENDENCY_CONSUMPTION", retention.delete_consumption, cutoffs["consumption"])
        job.rows("AUD_RUN_INTERVENTIONS", retention.delete_interventions, cutoffs["interventions"])
        job.runs(cutoffs["runs"])
        job.rows("AUD_UI_SESSIONS", retention.delete_sessions, now)  # dead sessions have no retention
        return PurgeCounts(job.removed, job.transactions or 1, job.log_files)

    with writing_for("retention"):
        if not dry_run:
            return stages(_Purge(db, None, archive, store))
        try:
            with db.write() as conn:
                counts = stages(_Purge(db, conn, None, store))
                raise _DryRun
        except _DryRun:
            return counts


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
    """`etl-craft purge`: what the Retention section says is past keeping leaves the Engine DB, with
    its attempts' log files; `archive_to` gets a copy of every removed row first."""
    started_at = utc_now()
    cutoffs = {name: iso(value) for name, value in _cutoffs(ctx.config.retention, started_at).items()}
    archive = None if archive_to is None else PurgeArchive(archive_to, started_at)
    if dry_run:
        archive = None  # the address was checked; a dry run writes nothing
    if archive is not None:
        archive.open({"started_at": iso(started_at), "cutoffs": cutoffs, "actor": ctx.actor.name})
    counts = purge(
        ctx.db,
        ctx.config.retention,
        started_at,
        dry_run=dry_run,
        archive=archive,
        store=ctx.config.logs.store,
    )
    arguments: dict[str, Any] = {
        "dry_run": dry_run, "cutoffs": cutoffs, "removed": counts.removed, "log_files": counts.log_files,
    }  # fmt: skip
    if archive is not None:
        arguments["archive_to"] = archive.location
    action_id = None if dry_run else record_purge(ctx.db, ctx.actor, started_at, arguments)
    total = sum(counts.removed.values())
    if dry_run:
        message = (
            f"dry run: a purge would remove {total} row(s) and {counts.log_files} log file(s) now; nothing was removed"
        )
    else:
        message = (
            f"purge removed {total} row(s) and {counts.log_files} log file(s) in {counts.transactions}"
            f" transaction(s) (AUD_ACTIONS action_id={action_id})"
        )
        if archive is not None:
            message += f"; the rows are archived under {archive.location}"
    return PurgeView(
        dry_run, cutoffs, counts.removed, counts.transactions, action_id, counts.log_files,
        archive.location if archive else None, message,
    )  # fmt: skip
