"""`log --attempt-id N`: an attempt's whole log, from wherever it lives, while it runs and after.

Logs are files under Orchestration.Log_dir on the host that ran the attempt (LOG_PATH holds the
path); this is the one function that reads them, so the CLI and the API answer the same.
"""

from __future__ import annotations

from dataclasses import dataclass

from etl_craft.core.errors import ResourceNotFoundError
from etl_craft.engine import reads
from etl_craft.services.context import OperationContext


@dataclass(frozen=True)
class AttemptLogView:
    """The `etl-craft/attempt-log/1` document."""

    attempt_id: int
    status: str
    log_path: str
    text: str


def read_attempt_log(ctx: OperationContext, attempt_id: int) -> AttemptLogView:
    with ctx.db.read() as conn:
        attempt = reads.attempt(conn, attempt_id)
    if attempt is None:
        raise ResourceNotFoundError(
            f"attempt {attempt_id}",
            found="no attempt with this id in the Engine DB",
            expected="the ATTEMPT_ID of an attempt (etl-craft history --pipeline_code P lists them)",
            remedy="check the id; a purge removes attempts older than Retention.Attempt_log_days",
        )
    if attempt.log_path is None:
        raise ResourceNotFoundError(
            f"attempt {attempt_id}",
            found=f"no log: the attempt is {attempt.status} and its task process never started",
            expected="an attempt whose task process started (it has a LOG_PATH)",
            remedy="see its ERROR_MESSAGE with etl-craft explain",
        )
    try:
        with open(attempt.log_path, encoding="utf-8", errors="replace") as log:
            text = log.read()
    except OSError as error:
        raise ResourceNotFoundError(
            f"the log of attempt {attempt_id}",
            found=f"{attempt.log_path}: {error.strerror or error}",
            expected=f"the file the attempt wrote on {attempt.host or 'its host'}",
            remedy="run the command on the host that ran the attempt, with the same Orchestration.Log_dir;"
            " TASK_LOG (etl-craft explain) keeps its last Logs.Tail_bytes",
        ) from None
    return AttemptLogView(attempt_id, attempt.status, attempt.log_path, text)
