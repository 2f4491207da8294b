"""The worker loop (S5.C): claim attempts of one pool from the PostgreSQL queue and run each in its
own task process, exactly as the local provider does (the fork server, fencing, logs).

Each pass: note the task processes that ended (recording FAILED for one that died without an
outcome); every heartbeat interval renew the worker and all its leases in one statement and stop
the processes of attempts that are no longer its own (cancelled, marked, fenced); while a slot of a
kind is free, claim the pool's next attempt of that kind (`FOR UPDATE SKIP LOCKED`) and start it.
It sleeps until a task process ends, a signal arrives, a NOTIFY wakes it, or the poll interval
passes (the fallback when a notification is missed).

SIGTERM drains: the worker is DRAINING, claims nothing new and waits up to --drain-seconds for what
it holds; then it records the rest FAILED ("worker drained"), stops them, and is GONE. A worker that
finds itself GONE (it missed three heartbeats, say in a network partition) stops its processes at
once: the overseer has fenced its attempts LOST.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.actor import Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import OWNED_ATTEMPT, ActorKind, Handler, RunCondition
from etl_craft.core.errors import EtlCraftError, StaleTransitionError
from etl_craft.core.faults import fault_point
from etl_craft.core.redaction import redact_file
from etl_craft.engine import reads, transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.transitions import EVENTS_CHANNEL
from etl_craft.engine.transitions.values import AttemptOutcome
from etl_craft.execution.graph import TaskNode
from etl_craft.execution.pools.interface import AttemptSpec, ExecutionHandle, HandleState, SlotKind, slot_kind
from etl_craft.execution.pools.local import LocalPool
from etl_craft.execution.processes.identity import OwnerId
from etl_craft.execution.processes.log_store import ship_log
from etl_craft.execution.processes.task_log import attempt_log_path, owner_task_log
from etl_craft.execution.processes.task_process import ChildSpec
from etl_craft.execution.run_loop.leases import LEASE_SECONDS, lease_until
from etl_craft.execution.run_loop.reconcile import WORKER_HEARTBEAT_SECONDS
from etl_craft.execution.run_loop.signals import StopSignals
from etl_craft.execution.settings import task_settings

log = logging.getLogger("etl_craft.worker")

POLL_SECONDS = 2.0  # the floor when no notification wakes it
STOP_GRACE_SECONDS = 10.0


@dataclass(frozen=True)
class WorkerSettings:
    pool: str
    slots: dict[SlotKind, int]
    drain_seconds: float
    log_level: str


@dataclass
class _Held:
    handle: ExecutionHandle
    label: str  # PIPE.task attempt N
    log_path: str
    timeout_seconds: int  # TASK_TIMEOUT_SECONDS (0: none), counted from RUNNING
    started_monotonic: float
    hidden: frozenset[str]  # what its log must not show: resolved secrets, sensitive parameter values
    timed_out: bool = False
    cancelling: bool = False  # a cancel asked for its stop; the process was sent SIGTERM


class Worker:
    def __init__(
        self, db: EngineDb, config: ConnectorConfig, owner: OwnerId, settings: WorkerSettings, signals: StopSignals
    ) -> None:
        self.db, self.config, self.owner, self.settings, self.signals = db, config, owner, settings, signals
        self.actor = Actor(f"etl-craft worker@{socket.gethostname()}", ActorKind.WORKER)
        self.pool = LocalPool(config.path, db.dialect, settings.slots, Handler)
        self.held: dict[int, _Held] = {}
        warehouse = config.warehouse
        self.limits = transitions.ClaimLimits(
            config.orchestration.max_parallel_tasks, warehouse.max_queries if warehouse is not None else None
        )
        self.listener = db.dialect.listener(db, EVENTS_CHANNEL)
        self._next_beat = 0.0
        self._drain_until: float | None = None
        self.gone = False

    # --- the loop ----------------------------------------------------------------------------------

    def serve(self) -> None:
        try:
            while True:
                if self.signals.reason is not None and self._drain_until is None:
                    self._begin_drain()
                self._reap()
                if time.monotonic() >= self._next_beat:
                    self._beat()
                    if self.gone:
                        return
                if self._drain_until is None:
                    self._claim_while_free()
                elif not self.held or time.monotonic() >= self._drain_until or self.signals.received >= 2:
                    self._finish_drain()
                    return
                self._wait()
        finally:
            if self.listener is not None:
                self.listener.close()

    def _wait(self) -> None:
        extra = [self.signals.wake_fd]
        if self.listener is not None and self.listener.fileno() is not None:
            extra.append(self.listener.fileno())  # type: ignore[arg-type]
        timeout = min(POLL_SECONDS, max(0.0, self._next_beat - time.monotonic()))
        for held in self.held.values():
            if held.timeout_seconds and not held.timed_out:
                timeout = min(timeout, max(0.0, held.started_monotonic + held.timeout_seconds - time.monotonic()))
        if self._drain_until is not None:
            timeout = min(timeout, max(0.0, self._drain_until - time.monotonic()))
        self.pool.wait(extra, timeout)
        self.signals.drain()
        if self.listener is not None:
            self.listener.drain()  # any payload is a reason to look: a pass costs one claim per free kind

    # --- claiming ----------------------------------------------------------------------------------

    def _claim_while_free(self) -> None:
        while True:
            free = self.pool.capacity()
            kinds = [k.value for k in SlotKind if free.has_room(k)]
            if not kinds:
                return
            now = utc_now()
            with self.db.write() as conn:
                attempt_id = transitions.claim_next(
                    conn,
                    pool=self.settings.pool,
                    kinds=kinds,
                    owner_id=str(self.owner),
                    host=socket.gethostname(),
                    lease_until=lease_until(now),
                    now=now,
                    limits=self.limits,
                )
                subject = reads.attempt_subject(conn, attempt_id) if attempt_id is not None else None
                parameters = reads.task_parameters(conn, [subject.task_id]) if subject is not None else {}
            if attempt_id is None:
                return
            if subject is not None:
                self._start(attempt_id, subject, parameters.get(subject.task_id, {}))

    def _timeout(self, subject: reads.AttemptSubject, parameters: Mapping[str, str]) -> int:
        node = TaskNode(
            subject.task_id,
            subject.task_code,
            Handler(subject.handler),
            subject.task_type,
            RunCondition.ALL,
            None,
            parameters=parameters,
        )
        return task_settings(node, self.config.orchestration).timeout_seconds

    def _start(self, attempt_id: int, subject: reads.AttemptSubject, parameters: Mapping[str, str]) -> None:
        label = f"{subject.pipeline_code}.{subject.task_code} attempt {subject.attempt_number}"
        log_path = attempt_log_path(
            self.config, subject.pipeline_code, subject.pipeline_run_id, subject.task_code, subject.attempt_number
        )
        try:
            timeout = self._timeout(subject, parameters)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            child = ChildSpec(
                attempt_id=attempt_id,
                owner_id=str(self.owner),
                config_path=str(self.config.path),
                log_path=str(log_path),
                actor_name=self.actor.name,
                actor_kind=self.actor.kind.value,
                log_level=self.settings.log_level,
                subject=subject,
            )
            handle = self.pool.submit(
                AttemptSpec(
                    attempt_id=attempt_id,
                    task_run_id=subject.task_run_id,
                    pipeline_run_id=subject.pipeline_run_id,
                    task_id=subject.task_id,
                    pipeline_code=subject.pipeline_code,
                    task_code=subject.task_code,
                    handler=subject.handler,
                    timeout_seconds=timeout,
                    lease_seconds=LEASE_SECONDS,
                    child=child,
                )
            )
        except Exception as error:  # anything after the claim is recorded on the attempt
            message = error.message if isinstance(error, EtlCraftError) else f"{type(error).__name__}: {error}"
            self._fail(attempt_id, f"the worker could not start the task process: {message}")
            return
        hidden = self.config.resolved_secrets() | self.config.redaction.values(subject.handler, parameters)
        self.held[attempt_id] = _Held(handle, label, str(log_path), timeout, time.monotonic(), hidden)
        log.info("%s claimed and started (pid %s, %s slot)", label, handle.pid, slot_kind(subject.handler))

    # --- ends, heartbeats, cancellations -----------------------------------------------------------

    def _enforce_timeouts(self) -> None:
        """An attempt past its TASK_TIMEOUT_SECONDS (counted from RUNNING) is recorded TIMED_OUT,
        fenced by this worker, and its process group stopped (SIGTERM, SIGKILL after the grace)."""
        now = time.monotonic()
        for attempt_id, held in self.held.items():
            if held.timed_out or not held.timeout_seconds or now - held.started_monotonic < held.timeout_seconds:
                continue
            with self.db.read() as conn:
                row = reads.attempt(conn, attempt_id)
            if row is None or row.status != "RUNNING" or row.started_at is None:
                continue
            if (utc_now() - row.started_at).total_seconds() < held.timeout_seconds:
                continue
            outcome = AttemptOutcome(
                "TIMED_OUT",
                error_message=f"timed out after {held.timeout_seconds} s (TASK_TIMEOUT_SECONDS); the task process "
                "was stopped",
            )
            try:
                with self.db.write() as conn:
                    transitions.time_out_attempt(
                        conn, attempt_id, owner_id=str(self.owner), outcome=outcome, now=utc_now()
                    )
            except StaleTransitionError:
                continue
            held.timed_out = True
            log.info("%s TIMED_OUT after %s s; stopping its task process", held.label, held.timeout_seconds)
            self.pool.cancel(held.handle, STOP_GRACE_SECONDS)

    def _reap(self) -> None:
        self._enforce_timeouts()
        for attempt_id, held in list(self.held.items()):
            status = self.pool.status(held.handle)
            if status.state is HandleState.RUNNING:
                continue
            del self.held[attempt_id]
            with self.db.read() as conn:
                row = reads.attempt(conn, attempt_id)
            if row is not None and row.status in OWNED_ATTEMPT and row.owner_id == str(self.owner):
                # Mask its log file here: its own masking thread may have died with it.
                redact_file(held.log_path, held.hidden)
                if row.cancel_requested_at is not None:
                    self._acknowledge_cancel(attempt_id, held, status.exit_code)
                    continue
                self._fail(
                    attempt_id,
                    f"the task process exited with status {status.exit_code} before recording an outcome",
                    exit_code=status.exit_code,
                    held=held,
                )
                row = None
            ship_log(self.config.logs.store, held.log_path)
            log.info("%s ended%s", held.label, f": {row.status}" if row is not None else "")

    def _fail(self, attempt_id: int, message: str, *, exit_code: int | None = None, held: _Held | None = None) -> bool:
        outcome = AttemptOutcome(
            "FAILED",
            error_message=message,
            task_log=owner_task_log(held.log_path, self.config.logs.tail_bytes, held.hidden) if held else None,
            exit_code=exit_code,
            retryable=True,
        )
        try:
            with self.db.write() as conn:
                transitions.finish_attempt(conn, attempt_id, owner_id=str(self.owner), outcome=outcome, now=utc_now())
        except StaleTransitionError:
            return False
        return True

    def _acknowledge_cancel(self, attempt_id: int, held: _Held, exit_code: int | None) -> None:
        """The process of an attempt whose stop was requested has ended: record CANCELLED with the
        acknowledgement (S5.D). Its own outcome was fenced (an asked-to-stop attempt ends only so)."""
        # Lost acknowledgement (S5.J): a worker dying here leaves the attempt RUNNING, asked to stop;
        # once the worker is GONE the reconciler fences it LOST, and the cancelled run retries nothing.
        fault_point("worker_before_cancel_ack")
        outcome = AttemptOutcome(
            "CANCELLED",
            error_message=f"cancelled: worker {self.owner} stopped the task process (exit status {exit_code})",
            task_log=owner_task_log(held.log_path, self.config.logs.tail_bytes, held.hidden),
            exit_code=exit_code,
            retryable=False,
        )
        try:
            with self.db.write() as conn:
                transitions.acknowledge_cancel(
                    conn, attempt_id, owner_id=str(self.owner), outcome=outcome, now=utc_now()
                )
        except StaleTransitionError as stale:
            log.warning("%s: the cancel was not acknowledged: %s", held.label, stale.message)
            return
        log.info("%s CANCELLED: its stop was acknowledged", held.label)

    def _beat(self) -> None:
        self._next_beat = time.monotonic() + WORKER_HEARTBEAT_SECONDS
        now = utc_now()
        with self.db.write() as conn:
            renewal = transitions.renew_worker(conn, owner_id=str(self.owner), lease_until=lease_until(now), now=now)
        if renewal.worker_status is None:
            log.error(
                "worker %s is GONE in the Engine DB (it missed heartbeats); its attempts were fenced LOST: "
                "stopping its task processes",
                self.owner,
            )
            self._stop_all()
            self.gone = True
            return
        for attempt_id in renewal.cancel_requested:
            held = self.held.get(attempt_id)
            if held is not None and not held.cancelling:
                held.cancelling = True
                log.info("%s: a cancel asked for its stop; stopping its task process", held.label)
                self.pool.cancel(held.handle, STOP_GRACE_SECONDS)
        for attempt_id, held in self.held.items():
            if attempt_id not in renewal.attempts and self.pool.status(held.handle).state is HandleState.RUNNING:
                # Ended by someone else (a cancel of its run, a mark, reconciliation): its writes are
                # fenced already; stop the process so it holds nothing for nothing.
                log.info("%s is no longer this worker's; stopping its task process", held.label)
                self.pool.cancel(held.handle, STOP_GRACE_SECONDS)

    # --- draining ----------------------------------------------------------------------------------

    def _begin_drain(self) -> None:
        self._drain_until = time.monotonic() + self.settings.drain_seconds
        with self.db.write() as conn:
            try:
                transitions.drain_worker(conn, owner_id=str(self.owner), now=utc_now())
            except StaleTransitionError as stale:
                log.warning("%s", stale.message)
        log.info(
            "%s: DRAINING: claiming nothing new; waiting up to %s s (--drain-seconds) for %s attempt(s)",
            self.signals.reason,
            self.settings.drain_seconds,
            len(self.held),
        )

    def _finish_drain(self) -> None:
        for attempt_id, held in list(self.held.items()):
            if self._fail(attempt_id, "worker drained: its --drain-seconds passed before the attempt ended", held=held):
                log.info("%s: FAILED, worker drained", held.label)
        self._stop_all()
        with self.db.write() as conn:
            transitions.worker_gone(conn, owner_id=str(self.owner), reason="drained", now=utc_now())
        log.info("worker %s is GONE (drained)", self.owner)

    def _stop_all(self) -> None:
        handles = [h.handle for h in self.held.values()]
        for handle in handles:
            self.pool.cancel(handle, STOP_GRACE_SECONDS)
        until = time.monotonic() + STOP_GRACE_SECONDS + 5
        while time.monotonic() < until and any(self.pool.status(h).state is HandleState.RUNNING for h in handles):
            self.pool.wait((), 0.05)
        self.held.clear()
