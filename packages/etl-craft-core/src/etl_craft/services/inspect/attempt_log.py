"""An attempt's log from a byte offset: the file the task process writes while it runs, else the
text stored on the attempt when it ended (an attempt run on another host). Read in chunks, so a
page that follows a running attempt asks only for what is new."""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from pathlib import Path

from etl_craft.core.enums import AttemptStatus
from etl_craft.core.errors import ResourceNotFoundError, UsageError
from etl_craft.core.text import BIGINT_MAX
from etl_craft.engine import reads
from etl_craft.services.context import OperationContext
from etl_craft.services.views import AttemptView

LOG_CHUNK = 64 * 1024  # bytes per read


@dataclass(frozen=True)
class AttemptLogView:
    pipeline_code: str
    pipeline_run_id: int
    task_code: str
    attempt: AttemptView
    offset: int
    next_offset: int  # ask from here for what follows
    text: str
    finished: bool  # the attempt has ended: nothing more will be written


def _chunk(path: Path, offset: int) -> bytes | None:
    try:
        with path.open("rb") as log:
            log.seek(offset)
            return log.read(LOG_CHUNK)
    except OSError:
        return None


def attempt_log(ctx: OperationContext, attempt_id: int, offset: int = 0) -> AttemptLogView:
    if not 0 <= offset <= BIGINT_MAX:
        raise UsageError("offset", found=str(offset), expected="a byte offset of 0 or more", remedy="start from 0")
    with ctx.db.snapshot() as conn:
        row = reads.attempt(conn, attempt_id)
        subject = reads.attempt_subject(conn, attempt_id)
        stored = reads.stored_attempt_log(conn, attempt_id)
    if row is None or subject is None:
        raise ResourceNotFoundError(
            f"attempt {attempt_id}", found="no attempt with this id", remedy="open the attempt from its run's page"
        )
    finished = AttemptStatus(row.status).terminal
    data = _chunk(Path(row.log_path), offset) if row.log_path else None
    if data is None:
        data = (stored or "").encode("utf-8")[offset : offset + LOG_CHUNK]
    # A chunk may end inside a character: the decoder holds its first bytes back for the next read.
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(data)
    used = len(data) - len(decoder.getstate()[0])
    return AttemptLogView(
        subject.pipeline_code,
        subject.pipeline_run_id,
        subject.task_code,
        AttemptView.of(row),
        offset,
        offset + used,
        text,
        finished,
    )
