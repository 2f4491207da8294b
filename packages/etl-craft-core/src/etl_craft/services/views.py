"""Frozen views of runs, task runs and attempts, shared by every operation's JSON document."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime

from etl_craft.engine.reads import AttemptRow, PipelineRow, RunRow, TaskRunRow


@dataclass(frozen=True)
class RunView:
    pipeline_run_id: int
    pipeline_id: int
    pipeline_code: str
    run_key: str
    trigger_kind: str
    run_date: date | None
    status: str
    start_date: datetime
    end_date: datetime | None
    sla_status: str | None
    output_revision: int
    repair_pending: bool
    owner_id: str | None
    started_by: str | None
    started_by_kind: str | None
    ended_by: str | None
    ended_by_kind: str | None

    @classmethod
    def of(cls, run: RunRow, pipeline_code: str) -> RunView:
        return cls(
            pipeline_run_id=run.pipeline_run_id,
            pipeline_id=run.pipeline_id,
            pipeline_code=pipeline_code,
            run_key=run.run_key,
            trigger_kind=run.trigger_kind,
            run_date=run.run_date,
            status=run.status,
            start_date=run.start_date,
            end_date=run.end_date,
            sla_status=run.sla_status,
            output_revision=run.output_revision,
            repair_pending=run.repair_pending == "Y",
            owner_id=run.owner_id,
            started_by=run.started_by,
            started_by_kind=run.started_by_kind,
            ended_by=run.ended_by,
            ended_by_kind=run.ended_by_kind,
        )

    @property
    def duration_seconds(self) -> float | None:
        if self.end_date is None:
            return None
        return round((self.end_date - self.start_date).total_seconds(), 3)


@dataclass(frozen=True)
class AttemptView:
    attempt_id: int
    task_run_id: int
    attempt_number: int
    status: str
    owner_id: str | None
    queued_at: datetime | None
    claimed_at: datetime | None
    started_at: datetime | None
    ended_at: datetime | None
    not_before: datetime | None
    host: str | None
    pid: int | None
    exit_code: int | None
    error_message: str | None
    retryable: bool
    log_path: str | None

    @classmethod
    def of(cls, row: AttemptRow) -> AttemptView:
        return cls(
            attempt_id=row.attempt_id,
            task_run_id=row.task_run_id,
            attempt_number=row.attempt_number,
            status=row.status,
            owner_id=row.owner_id,
            queued_at=row.queued_at,
            claimed_at=row.claimed_at,
            started_at=row.started_at,
            ended_at=row.ended_at,
            not_before=row.not_before,
            host=row.host,
            pid=row.pid,
            exit_code=row.exit_code,
            error_message=row.error_message,
            retryable=row.retryable,
            log_path=row.log_path,
        )


@dataclass(frozen=True)
class TaskRunView:
    task_id: int
    task_code: str
    pipeline_run_id: int | None
    task_run_id: int | None
    status: str  # NOT RUN when the task has no row under the run
    attempt_count: int
    source_count: int | None
    target_count: int | None
    insert_count: int | None
    update_count: int | None
    delete_count: int | None
    rows_written: int | None
    start_date: datetime | None
    end_date: datetime | None
    error_message: str | None
    attempts: tuple[AttemptView, ...] = ()

    @classmethod
    def of(
        cls, task_id: int, task_code: str, row: TaskRunRow | None, attempts: tuple[AttemptView, ...] = ()
    ) -> TaskRunView:
        if row is None:
            return cls(
                task_id=task_id,
                task_code=task_code,
                pipeline_run_id=None,
                task_run_id=None,
                status="NOT RUN",
                attempt_count=0,
                source_count=None,
                target_count=None,
                insert_count=None,
                update_count=None,
                delete_count=None,
                rows_written=None,
                start_date=None,
                end_date=None,
                error_message=None,
                attempts=attempts,
            )
        return cls(
            task_id=task_id,
            task_code=task_code,
            pipeline_run_id=row.pipeline_run_id,
            task_run_id=row.task_run_id,
            status=row.status,
            attempt_count=row.attempt_count,
            source_count=row.source_count,
            target_count=row.target_count,
            insert_count=row.insert_count,
            update_count=row.update_count,
            delete_count=row.delete_count,
            rows_written=row.rows_written,
            start_date=row.start_date,
            end_date=row.end_date,
            error_message=row.error_message,
            attempts=attempts,
        )


@dataclass(frozen=True)
class PipelineView:
    pipeline_id: int
    pipeline_code: str
    pipeline_name: str
    description: str | None
    refresh_type: str
    run_schedule: str | None
    sla_in_hours: float | None

    @classmethod
    def of(cls, row: PipelineRow) -> PipelineView:
        return cls(
            row.pipeline_id,
            row.pipeline_code,
            row.pipeline_name,
            row.description,
            row.refresh_type,
            row.run_schedule,
            float(row.sla_in_hours) if row.sla_in_hours is not None else None,
        )


@dataclass(frozen=True)
class OperationResult:
    """What a state-changing operation did. `status` is the operation's outcome (SUCCESS, FAILED,
    INCOMPLETE, WAITING, PAUSED, ...), distinct from the stored status of its run or task."""

    status: str
    message: str
    exit_code: int
    pipeline: str
    run: RunView | None = None
    task: TaskRunView | None = None
