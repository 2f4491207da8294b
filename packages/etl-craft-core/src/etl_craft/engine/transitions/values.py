"""Values written with an attempt's outcome: its counts and the offset a script returned."""

from __future__ import annotations

from dataclasses import dataclass

from etl_craft.core.enums import OffsetType


@dataclass(frozen=True)
class StoredOffset:
    """An ingestion offset as the Engine DB keeps it: its declared type and its text."""

    type: OffsetType
    value: str | None


@dataclass(frozen=True)
class Counts:
    """What a task read and wrote. ROWS_WRITTEN (read by HAS_DATA) is inserts + updates + deletes."""

    source: int | None = None
    target: int | None = None
    inserted: int | None = None
    updated: int | None = None
    deleted: int | None = None

    @property
    def rows_written(self) -> int | None:
        parts = [n for n in (self.inserted, self.updated, self.deleted) if n is not None]
        return sum(parts) if parts else None


@dataclass(frozen=True)
class AttemptOutcome:
    """How an attempt ended, as finish_attempt and time_out_attempt record it."""

    status: str  # an AttemptStatus value: SUCCESS, FAILED or TIMED_OUT
    counts: Counts = Counts()
    error_message: str | None = None
    task_log: str | None = None
    exit_code: int | None = None
    retryable: bool = True
    offset: StoredOffset | None = None  # stored only with SUCCESS


@dataclass(frozen=True)
class QueuedAttempt:
    task_run_id: int
    attempt_id: int
    attempt_number: int
