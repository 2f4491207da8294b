"""One task run, one attempt, and an attempt's log read from a byte offset, by id:
from the local file while it exists, else from Logs.Store.

`etl-craft task-run`, `attempt`, `attempt-log` and their HTTP endpoints call these functions, so a log
read over HTTP and at a terminal is the same bytes. The log file was masked as it was written (the
task process replaces every secret the engine resolved with ***), so it is returned as stored.
"""

from __future__ import annotations

import codecs
import os
from dataclasses import dataclass

from etl_craft.core.enums import ENDED_ATTEMPT
from etl_craft.core.errors import ResourceNotFoundError, UsageError
from etl_craft.engine import reads
from etl_craft.execution.processes.log_store import open_store
from etl_craft.services.context import OperationContext
from etl_craft.services.views import AttemptView, RunView, TaskRunView

LOG_CHUNK_LIMIT = 1024 * 1024  # bytes one read returns at most; read on from next_offset


@dataclass(frozen=True)
class TaskRunDetail:
    pipeline_code: str
    run: RunView
    task: TaskRunView  # with every attempt, oldest first
    task_log: str | None  # the counts and the log tail the last attempt stored


@dataclass(frozen=True)
class AttemptDetail:
    pipeline_code: str
    pipeline_run_id: int
    task_code: str
    attempt: AttemptView


@dataclass(frozen=True)
class LogChunk:
    attempt_id: int
    log_path: str | None
    offset: int  # the byte the text starts at
    next_offset: int  # where the next read starts (the text never ends inside a UTF-8 character)
    size: int  # the file's size when it was read
    attempt_ended: bool  # with next_offset == size: the log is complete
    text: str


def _unknown(what: str, ident: int, listing: str) -> ResourceNotFoundError:
    return ResourceNotFoundError(
        f"{what} {ident}",
        found="no such id in the Engine DB",
        expected=f"the id of an existing {what}",
        remedy=f"find it in {listing}",
    )


def task_run_detail(ctx: OperationContext, task_run_id: int) -> TaskRunDetail:
    with ctx.db.snapshot() as conn:
        row = reads.task_run(conn, task_run_id)
        if row is None:
            raise _unknown("task run", task_run_id, "etl-craft status --format json (tasks[].task_run_id)")
        run = reads.run(conn, row.pipeline_run_id)
        assert run is not None  # a task run's run is a foreign key
        pipeline_code, task_code, _active = reads.task_codes(conn, [row.task_id])[row.task_id]
        attempts = tuple(AttemptView.of(a) for a in reads.attempts_of_task_run(conn, task_run_id))
    return TaskRunDetail(
        pipeline_code=pipeline_code,
        run=RunView.of(run, pipeline_code),
        task=TaskRunView.of(row.task_id, task_code, row, attempts),
        task_log=row.task_log,
    )


def attempt_detail(ctx: OperationContext, attempt_id: int) -> AttemptDetail:
    with ctx.db.snapshot() as conn:
        row = reads.attempt(conn, attempt_id)
        subject = reads.attempt_subject(conn, attempt_id) if row else None
    if row is None or subject is None:
        raise _unknown("attempt", attempt_id, "etl-craft task-run --format json (task.attempts[].attempt_id)")
    return AttemptDetail(subject.pipeline_code, subject.pipeline_run_id, subject.task_code, AttemptView.of(row))


def _read(path: str, offset: int, limit: int) -> tuple[bytes, int] | None:
    """Up to `limit` bytes from `offset`, and the file's size; None when the file is not on this host."""
    try:
        with open(path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            if offset > size:
                return b"", size
            fh.seek(offset)
            return fh.read(limit), size
    except FileNotFoundError:
        return None


def attempt_log(ctx: OperationContext, attempt_id: int, offset: int = 0, limit: int = LOG_CHUNK_LIMIT) -> LogChunk:
    """The attempt's log text from byte `offset`: poll with next_offset to follow a running attempt.
    An offset past the end of the file is refused (it names the size), never answered empty."""
    with ctx.db.snapshot() as conn:
        row = reads.attempt(conn, attempt_id)
    if row is None:
        raise _unknown("attempt", attempt_id, "etl-craft task-run --format json (task.attempts[].attempt_id)")
    read = _read(row.log_path, offset, limit) if row.log_path else None
    store = open_store(ctx.config.logs.store)
    if read is None and row.log_path and store is not None:
        # The local file is gone (another host, or a lost Log_dir): the store has it once the attempt ended.
        read = store.read(row.log_path, offset, limit)
    if read is None and row.log_path and row.status in ENDED_ATTEMPT:
        where = f" nor {store.location(row.log_path)}" if store is not None else ""
        raise ResourceNotFoundError(
            f"the log of attempt {attempt_id}",
            found=f"no file {row.log_path} on this host{where}",
            expected=f"the file the attempt wrote on {row.host or 'its host'}",
            remedy="read it on the host that ran the attempt, with the same Orchestration.Log_dir; TASK_LOG"
            " (etl-craft task-run --task-run-id N) keeps its last Logs.Tail_bytes",
        )
    # No file yet: the task process has not started, or not written its first line.
    data, size = read if read is not None else (b"", 0)
    if offset > size:
        raise UsageError(
            f"the log of attempt {attempt_id}",
            found=f"offset {offset}",
            expected=f"an offset from 0 to the log's size, {size} bytes",
            remedy="read from offset 0, or from the next_offset an earlier read returned",
        )
    at_end = offset + len(data) >= size
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    text = decoder.decode(data, final=at_end)
    held_back = len(decoder.getstate()[0])  # a character cut by the chunk's end starts the next read
    return LogChunk(
        attempt_id=attempt_id,
        log_path=row.log_path,
        offset=offset,
        next_offset=offset + len(data) - held_back,
        size=size,
        attempt_ended=row.status in ENDED_ATTEMPT,
        text=text,
    )
