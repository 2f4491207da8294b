"""The task process: one attempt of one task, in its own process and session.

It is started (forked from the local provider's fork server, or as `python -m
etl_craft.execution.processes.task_process`) with the attempt id and the owner id the supervisor claimed it
with. Every write it makes is fenced by both, so a zombie process changes nothing. Output goes to
the attempt's log file; the process exits with os._exit as soon as its outcome is recorded. Output
reaches the log file through a pipe and a thread that masks the secrets the process resolved
(log_pump.py); TASK_LOG and the error message are masked the same way before they are stored.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import threading
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import FrameType

from etl_craft.config.loader import load_config
from etl_craft.config.model import ConnectorConfig
from etl_craft.config.secrets import SecretSource
from etl_craft.core.actor import Actor, acting_as
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ActorKind, Handler, OffsetType, TriggerKind
from etl_craft.core.errors import EtlCraftError, StaleTransitionError
from etl_craft.core.faults import fault_point
from etl_craft.core.redaction import SecretMask, quiet_url_loggers
from etl_craft.engine import reads, transitions
from etl_craft.engine.database import EngineDb, open_engine_db
from etl_craft.engine.reads import AttemptSubject
from etl_craft.engine.retry import retrying
from etl_craft.engine.transitions.values import AttemptOutcome
from etl_craft.execution.processes import warm_start
from etl_craft.execution.processes.identity import process_start
from etl_craft.execution.processes.log_pump import LogPump, start_pump
from etl_craft.execution.processes.task_log import compose_task_log
from etl_craft.handlers import dispatch
from etl_craft.handlers.context import HandlerResult, StoredOffset, TaskContext

EXIT_STALE = 20


@dataclass(frozen=True)
class ChildSpec:
    """Everything the task process needs that isn't in the Engine DB, and what its supervisor already
    knows of the attempt: its subject and its task's parameters, as in the graph the supervisor runs
    (so every attempt of a run sees the parameters its supervisor decided with). Without them, as
    when started cold, the task process reads both."""

    attempt_id: int
    owner_id: str
    config_path: str
    log_path: str
    actor_name: str
    actor_kind: str
    force: bool = False
    rerun: bool = False
    log_level: str = "INFO"
    subject: AttemptSubject | None = None
    parameters: Mapping[str, str] | None = None


class _Stopped(BaseException):
    """SIGTERM reached the task process (its supervisor stopped it)."""


def _on_sigterm(_signum: int, _frame: FrameType | None) -> None:
    sys.stdout.flush()
    sys.stderr.flush()
    # A warehouse statement outlives the process that sent it: cancel it first (S5.D). Looked up,
    # not imported: a task that never opened a warehouse session has nothing running.
    _stop_notes.append("stopped: the task process received SIGTERM")
    session = sys.modules.get("etl_craft.warehouse.session")
    if session is not None:
        _stop_notes.extend(session.cancel_running_statements())
    raise _Stopped()


# Set by SIGTERM, then what stopping did to running warehouse statements, for the attempt log. A
# driver may turn _Stopped into its own error (DuckDB raises "interrupted"): this still says why.
_stop_notes: list[str] = []


@dataclass
class _Output:
    """The log pump of this task process, the secret source whose resolved values it masks, and the
    values of the task's sensitive parameters (Redaction.Sensitive_patterns), masked the same way."""

    pump: LogPump | None = None
    source: SecretSource | None = None
    parameters: frozenset[str] = frozenset()

    def secrets(self) -> frozenset[str]:
        resolved = self.source.resolved_values() if self.source is not None else frozenset()
        return resolved | self.parameters

    def sync(self) -> None:
        """Everything written to fds 1 and 2 so far is in the log file once this returns."""
        sys.stdout.flush()
        sys.stderr.flush()
        if self.pump is not None:
            self.pump.sync()

    def mask(self, text: str) -> str:
        return SecretMask(self.secrets()).redact(text)


_output = _Output()


def _task_log(result: HandlerResult, log_path: str, tail_bytes: int) -> str:
    _output.sync()
    return _output.mask(compose_task_log(result, log_path, tail_bytes))


def _redirect_output(log_path: str) -> None:
    _output.pump = start_pump(log_path, _output.secrets)
    sys.stdout = open(1, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)  # noqa: SIM115


def _configure_logging(level: str, context: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"%(asctime)s %(levelname)s %(name)s [{context}]: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    numeric = logging.getLevelName(level.upper())
    root.setLevel(numeric if isinstance(numeric, int) else logging.INFO)
    quiet_url_loggers(root.level)


def _load_context(db: EngineDb, spec: ChildSpec, config: ConnectorConfig) -> tuple[TaskContext, bool]:
    """Mark the attempt RUNNING and read everything about its task; stale if it is no longer ours.
    Also returns whether the attempt's success consumes gate decisions."""
    pid = os.getpid()
    with db.write() as conn:
        # The process acknowledges its own id: CLAIMED -> RUNNING, fenced by the owner's claim.
        transitions.start_attempt(
            conn,
            spec.attempt_id,
            owner_id=spec.owner_id,
            pid=pid,
            process_start=process_start(pid) or "",
            log_path=spec.log_path,
            now=utc_now(),
        )
        if spec.subject is not None and spec.parameters is not None:
            subject, parameters = spec.subject, spec.parameters
        else:
            found = reads.attempt_subject(conn, spec.attempt_id)
            assert found is not None
            subject = found
            parameters = reads.task_parameters(conn, [subject.task_id]).get(subject.task_id, {})
        trigger = TriggerKind(subject.trigger_kind)
        # Only ingestion scripts have offsets, and a backfill never reads or moves the stored one.
        offset = None
        if trigger is not TriggerKind.BACKFILL and Handler(subject.handler) is Handler.PYTHON:
            stored = reads.stored_offset(conn, subject.task_id)
            if stored is not None:
                offset = StoredOffset(OffsetType(stored[0]), stored[1])
    context = TaskContext(
        config=config,
        engine_db=db,
        log=logging.getLogger(f"etl_craft.task.{subject.task_code}"),
        pipeline_id=subject.pipeline_id,
        pipeline_code=subject.pipeline_code,
        refresh_type=subject.refresh_type,
        pipeline_run_id=subject.pipeline_run_id,
        run_key=subject.run_key,
        run_date=subject.run_date or subject.start_date.date(),
        trigger_kind=trigger,
        task_id=subject.task_id,
        task_code=subject.task_code,
        task_type=subject.task_type,
        handler=Handler(subject.handler),
        task_run_id=subject.task_run_id,
        attempt_id=subject.attempt_id,
        attempt_number=subject.attempt_number,
        owner_id=spec.owner_id,
        parameters=parameters,
        stored_offset=offset,
        force=spec.force,
        rerun=spec.rerun,
    )
    return context, subject.consumes


def _record(db: EngineDb, spec: ChildSpec, outcome: AttemptOutcome, consumes: bool = True) -> None:
    """Record the outcome, riding out a passing Engine DB outage (the write is guarded, so a repeat
    after an unacknowledged commit is refused as stale rather than applied twice)."""
    fault_point("child_before_outcome")

    def write() -> None:
        with db.write() as conn:
            transitions.finish_attempt(
                conn, spec.attempt_id, owner_id=spec.owner_id, outcome=outcome, now=utc_now(), consumes=consumes
            )
            fault_point("child_in_outcome_transaction")

    retrying(write, f"recording the outcome of attempt {spec.attempt_id}")
    fault_point("child_after_outcome")


def rehearse(db: EngineDb) -> None:
    """Run the statements _load_context and _record run for a forked task process (one given its
    subject), for an attempt that does not exist (ids start at 1), in a transaction that is rolled
    back: their compiled forms stay in the engine's cache, and a task process forked with that engine
    compiles none of them (warm_start.py). A task process started cold has no fork server."""
    nobody = 0
    with db.engine.connect() as conn, conn.begin() as transaction:
        with contextlib.suppress(StaleTransitionError):
            transitions.start_attempt(conn, nobody, owner_id="", pid=0, process_start="", log_path="", now=utc_now())
        reads.stored_offset(conn, nobody)
        transitions.rehearse_attempt_end(conn, utc_now())
        transaction.rollback()


def run_attempt(spec: ChildSpec) -> int:
    """Run the handler and record the outcome. Returns the process exit status; never raises."""
    log = logging.getLogger("etl_craft.task")
    # The fork server's engine holds no connection, so neither it nor one made here shares a socket.
    prepared = warm_start.prepared_for(spec.config_path)
    if prepared is not None:
        config, db = prepared
    else:
        config = load_config(Path(spec.config_path))
        db = open_engine_db(config, check=False, ping=False)  # its transactions are retried (retrying)
    _output.source = config.secrets
    try:
        try:
            fault_point("child_start")
            ctx, consumes = retrying(lambda: _load_context(db, spec, config), f"starting attempt {spec.attempt_id}")
            _output.parameters = config.redaction.values(ctx.handler.value, ctx.parameters)
            log.info("attempt %s of %s.%s started", ctx.attempt_number, ctx.pipeline_code, ctx.task_code)
            result = dispatch.run(ctx)
        except StaleTransitionError as stale:
            log.warning("%s", stale.message)
            return EXIT_STALE
        except (Exception, _Stopped) as error:
            stopped = isinstance(error, _Stopped) or bool(_stop_notes)
            message = (
                "; ".join(_stop_notes)
                if stopped
                else (error.message if isinstance(error, EtlCraftError) else f"{type(error).__name__}: {error}")
            )
            message = _output.mask(message)
            # A deliberate error already says what went wrong; only an unexpected one needs its traceback.
            detail = "" if stopped or isinstance(error, EtlCraftError) else "\n" + traceback.format_exc()
            log.error("the task failed: %s%s", message, detail)
            retryable = getattr(error, "retryable", True) and not stopped
            outcome = AttemptOutcome(
                "FAILED",
                error_message=message,
                task_log=_task_log(HandlerResult(), spec.log_path, config.logs.tail_bytes),
                exit_code=1,
                retryable=bool(retryable),
            )
            try:
                _record(db, spec, outcome)
            except StaleTransitionError as stale:
                log.warning("the failure was not recorded: %s", stale.message)
                return EXIT_STALE
            return int(getattr(error, "exit_code", 1)) if not stopped else 143
        for warning in result.warnings:
            log.warning("%s", warning)
        log.info("the task succeeded")
        outcome = AttemptOutcome(
            "SUCCESS",
            counts=result.counts,
            task_log=_task_log(result, spec.log_path, config.logs.tail_bytes),
            exit_code=0,
            offset=result.offset,
        )
        try:
            _record(db, spec, outcome, consumes)
        except StaleTransitionError as stale:
            log.warning("the outcome was not recorded: %s", stale.message)
            return EXIT_STALE
        return 0
    finally:
        db.dispose()


def child_main(spec: ChildSpec) -> None:
    """Entry point in the new process: own session, output to the log file, exit right after recording."""
    os.setsid()
    _redirect_output(spec.log_path)
    os.environ["PYTHONUNBUFFERED"] = "1"
    signal.signal(signal.SIGTERM, _on_sigterm)
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    _configure_logging(spec.log_level, f"attempt_id={spec.attempt_id}")
    code = 1
    try:
        with acting_as(Actor(spec.actor_name, ActorKind(spec.actor_kind))):
            code = run_attempt(spec)
    except BaseException:  # a failure outside run_attempt's own handling: say so and exit
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        lingering = [t.name for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
        if lingering:
            logging.getLogger("etl_craft.task").warning(
                "threads still running after the outcome was recorded, stopped with the process: %s",
                ", ".join(lingering),
            )
        logging.shutdown()
        _output.sync()
        os._exit(code)


def main(argv: list[str] | None = None) -> None:
    """`python -m etl_craft.execution.processes.task_process`: the same task process, started cold."""
    parser = argparse.ArgumentParser(prog="etl_craft.execution.processes.task_process")
    parser.add_argument("--attempt-id", type=int, required=True)
    parser.add_argument("--owner-id", required=True)
    parser.add_argument("--config", required=True)
    parser.add_argument("--log-path", required=True)
    parser.add_argument("--actor", required=True)
    parser.add_argument("--actor-kind", default="SYSTEM")
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--rerun", action="store_true")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    child_main(
        ChildSpec(
            args.attempt_id,
            args.owner_id,
            args.config,
            args.log_path,
            args.actor,
            args.actor_kind,
            args.force,
            args.rerun,
            args.log_level,
        )
    )


if __name__ == "__main__":
    main()
