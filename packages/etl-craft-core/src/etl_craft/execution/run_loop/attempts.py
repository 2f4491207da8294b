"""The task processes of one run's attempts: claiming and starting them, noticing how they end,
time limits, and stopping them.

Every outcome this side records (a process that died without one, a timeout, a stop) goes through the
transitions module fenced by the owner id, so a child that recorded its own outcome first wins.
"""

from __future__ import annotations

import logging
import signal
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.actor import Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import OWNED_ATTEMPT
from etl_craft.core.errors import EtlCraftError, StaleTransitionError
from etl_craft.core.faults import fault_point
from etl_craft.core.redaction import redact_file
from etl_craft.engine import reads, transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads import AttemptRow, AttemptSubject, RunRow, RunState
from etl_craft.engine.records import gate_records
from etl_craft.engine.transitions.values import AttemptOutcome
from etl_craft.execution.graph import Graph, TaskNode
from etl_craft.execution.pools.choice import Pools
from etl_craft.execution.pools.interface import AttemptSpec, ExecutionHandle, HandleState, Pool
from etl_craft.execution.processes.identity import OwnerId
from etl_craft.execution.processes.log_store import ship_log
from etl_craft.execution.processes.task_log import attempt_log_path, owner_task_log
from etl_craft.execution.processes.task_process import ChildSpec
from etl_craft.execution.run_loop.leases import LEASE_SECONDS, lease_until
from etl_craft.execution.settings import task_settings

log = logging.getLogger("etl_craft.supervisor")

STOP_GRACE_SECONDS = 10.0


@dataclass
class RunningChild:
    """An attempt this supervisor submitted to its pool, until its end is reported."""

    spec: AttemptSpec
    handle: ExecutionHandle
    started_monotonic: float
    deadline: float | None = None  # monotonic time after which the attempt is timed out

    @property
    def task_id(self) -> int:
        return self.spec.task_id

    @property
    def timeout_seconds(self) -> int:
        return self.spec.timeout_seconds

    @property
    def log_path(self) -> str:
        return self.spec.child.log_path

    @property
    def pid(self) -> int | None:
        return self.handle.pid


class AttemptProcesses:
    def __init__(
        self,
        db: EngineDb,
        config: ConnectorConfig,
        graph: Graph,
        run_id: int,
        owner: OwnerId,
        actor: Actor,
        progress: Callable[[str], None],
        log_level: str,
        pools: Pools,
        *,
        force: bool = False,
        rerun: bool = False,
    ) -> None:
        self.db, self.config, self.graph, self.run_id = db, config, graph, run_id
        self.owner, self.actor, self.progress, self.log_level = owner, actor, progress, log_level
        self.force, self.rerun = force, rerun
        self.pools = pools
        self.children: dict[int, RunningChild] = {}
        self.stopping: dict[int, RunningChild] = {}  # timed out, stopped, their ends not reported
        self.exited: list[tuple[RunningChild, int]] = []  # reaped, with exit status; ends not yet reported

    def local_attempts(self) -> set[int]:
        """The attempts whose task processes run on this host (their exits wake the supervisor)."""
        return {a for a, c in self.children.items() if self.pools.of(c.handle).owner_claims}

    @property
    def busy(self) -> bool:
        return bool(self.children or self.stopping)

    def launch(
        self,
        node: TaskNode,
        run: RunRow,
        *,
        again_from: tuple[str, ...] = ("FAILED",),
        queued: AttemptRow | None = None,
        attempts_so_far: int | None = None,
        decisions: list[gate_records.Decision] | None = None,
    ) -> bool:
        """Claim an attempt of `run` (as last read), a new one (the task run's ATTEMPT_COUNT as last
        read is `attempts_so_far`, None without a task run) unless a retry is `queued` already, then
        start its process; or, for a task whose POOL is a queue pool, queue it there for the pool's
        workers to claim."""
        if queued is not None and queued.attempt_id in self.children:
            return True  # offered to its pool already: it waits for a worker
        refused: EtlCraftError | None = None
        try:
            pool = self.pools.for_task(node)
        except EtlCraftError as error:  # recorded on a claimed attempt below, as any start failure
            pool, refused = self.pools.local, error
        if not pool.owner_claims:
            return self._queue(node, run, pool, again_from=again_from, queued=queued, decisions=decisions)
        now = utc_now()
        owner, host = str(self.owner), socket.gethostname()
        try:
            with self.db.write() as conn:
                if queued is None:
                    attempt = transitions.queue_and_claim_attempt(
                        conn,
                        pipeline_run_id=self.run_id,
                        task_id=node.task_id,
                        attempts_so_far=attempts_so_far,
                        actor=self.actor,
                        owner_id=owner,
                        lease_until=lease_until(now),
                        host=host,
                        now=now,
                        again_from=again_from,
                    )
                    attempt_id, number, task_run_id = attempt.attempt_id, attempt.attempt_number, attempt.task_run_id
                else:
                    attempt_id, number, task_run_id = queued.attempt_id, queued.attempt_number, queued.task_run_id
                    transitions.claim_attempt(
                        conn, attempt_id, owner_id=owner, lease_until=lease_until(now), host=host, now=now
                    )
                self._record_decisions(conn, node, decisions, now, attempt_id)
        except StaleTransitionError as stale:
            log.info("%s.%s not started here: %s", self.graph.code, node.code, stale.message)
            return False
        fault_point("after_claim")
        child = None
        try:
            if refused is not None:
                raise refused
            settings = task_settings(node, self.config.orchestration)
            log_path = self.log_path(node, number)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            fault_point("after_mkdir")
            submitted = self._attempt_spec(
                node, run, (attempt_id, number, task_run_id), decisions or [], settings.timeout_seconds or 0
            )
            handle = pool.submit(submitted)
            now_monotonic = time.monotonic()
            timeout = settings.timeout_seconds
            child = RunningChild(submitted, handle, now_monotonic, now_monotonic + timeout if timeout else None)
            fault_point("after_spawn")
        except Exception as error:  # anything after the claim is recorded on the attempt
            message = error.message if isinstance(error, EtlCraftError) else f"{type(error).__name__}: {error}"
            self.record_outcome(
                attempt_id, f"could not start the task process: {message}", retryable=getattr(error, "retryable", True)
            )
            if child is not None:
                pool.cancel(child.handle, STOP_GRACE_SECONDS)
            self.progress(f"{self.graph.code}.{node.code}: FAILED, could not start: {message}")
            return True
        self.children[attempt_id] = child
        self.progress(f"{self.graph.code}.{node.code}: attempt {number} started (pid {child.pid})")
        return True

    def _queue(
        self,
        node: TaskNode,
        run: RunRow,
        pool: Pool,
        *,
        again_from: tuple[str, ...],
        queued: AttemptRow | None,
        decisions: list[gate_records.Decision] | None,
    ) -> bool:
        """Queue an attempt (or take the retry `queued` already) and offer it to a queue pool."""
        now = utc_now()
        try:
            with self.db.write() as conn:
                if queued is None:
                    attempt = transitions.queue_attempt(
                        conn,
                        pipeline_run_id=self.run_id,
                        task_id=node.task_id,
                        actor=self.actor,
                        now=now,
                        again_from=again_from,
                    )
                    attempt_id, number, task_run_id = attempt.attempt_id, attempt.attempt_number, attempt.task_run_id
                else:
                    attempt_id, number, task_run_id = queued.attempt_id, queued.attempt_number, queued.task_run_id
                self._record_decisions(conn, node, decisions, now, attempt_id)
        except StaleTransitionError as stale:
            log.info("%s.%s not queued here: %s", self.graph.code, node.code, stale.message)
            return False
        # Its worker enforces TASK_TIMEOUT_SECONDS: this side sets no deadline of its own.
        submitted = self._attempt_spec(node, run, (attempt_id, number, task_run_id), decisions or [], 0)
        handle = pool.submit(submitted)
        self.children[attempt_id] = RunningChild(submitted, handle, time.monotonic())
        self.progress(f"{self.graph.code}.{node.code}: attempt {number} queued in pool {pool.name}")
        return True

    def _record_decisions(
        self,
        conn: sa.Connection,
        node: TaskNode,
        decisions: list[gate_records.Decision] | None,
        now: datetime,
        attempt_id: int,
    ) -> None:
        """Gate decisions judged for this attempt: recorded in the transaction that claims or queues it (S3.E)."""
        if decisions:
            gate_records.record_decisions(conn, self.run_id, decisions, now, attempt_id)
            gate_records.settle_wait(conn, self.run_id, node.task_id)

    def _attempt_spec(
        self,
        node: TaskNode,
        run: RunRow,
        ids: tuple[int, int, int],  # attempt id, attempt number, task run id
        decisions: list[gate_records.Decision],
        timeout_seconds: int,
    ) -> AttemptSpec:
        attempt_id, number, task_run_id = ids
        child = ChildSpec(
            attempt_id=attempt_id,
            owner_id=str(self.owner),
            config_path=str(self.config.path),
            log_path=str(self.log_path(node, number)),
            actor_name=self.actor.name,
            actor_kind=self.actor.kind.value,
            force=self.force,
            rerun=self.rerun,
            log_level=self.log_level,
            subject=self._subject(node, run, attempt_id, number, task_run_id, decisions),
            parameters=dict(node.parameters),
        )
        return AttemptSpec(
            attempt_id=attempt_id,
            task_run_id=task_run_id,
            pipeline_run_id=self.run_id,
            task_id=node.task_id,
            pipeline_code=self.graph.code,
            task_code=node.code,
            handler=node.handler.value,
            timeout_seconds=timeout_seconds,
            lease_seconds=LEASE_SECONDS,
            child=child,
        )

    def _subject(
        self,
        node: TaskNode,
        run: RunRow,
        attempt_id: int,
        number: int,
        task_run_id: int,
        decisions: list[gate_records.Decision],
    ) -> AttemptSubject:
        """What the task process would otherwise read about its attempt, from what this side holds."""
        pipeline = self.graph.pipeline
        return AttemptSubject(
            attempt_id=attempt_id,
            attempt_number=number,
            task_run_id=task_run_id,
            pipeline_run_id=self.run_id,
            run_key=run.run_key,
            run_date=run.run_date,
            start_date=run.start_date,
            trigger_kind=run.trigger_kind,
            task_id=node.task_id,
            task_code=node.code,
            task_type=node.task_type,
            handler=node.handler.value,
            pipeline_id=pipeline.pipeline_id,
            pipeline_code=pipeline.pipeline_code,
            refresh_type=pipeline.refresh_type,
            # Its success consumes the SATISFIED decisions recorded with its claim (just above).
            consumes=any(d.result == "SATISFIED" and d.selected_pipeline_run_id is not None for d in decisions),
        )

    def log_path(self, node: TaskNode, number: int) -> Path:
        return attempt_log_path(self.config, self.graph.code, self.run_id, node.code, number)

    def record_outcome(
        self,
        attempt_id: int,
        message: str,
        *,
        retryable: bool = True,
        exit_code: int | None = None,
        log_path: str | None = None,
        timed_out: bool = False,
        task_id: int | None = None,
    ) -> bool:
        """Record an outcome on the child's behalf; False when the child (or anyone) recorded one first."""
        outcome = AttemptOutcome(
            "TIMED_OUT" if timed_out else "FAILED",
            error_message=message,
            task_log=owner_task_log(log_path, self.config.logs.tail_bytes, self.hidden(task_id)),
            exit_code=exit_code,
            retryable=retryable,
        )
        try:
            with self.db.write() as conn:
                if timed_out:
                    transitions.time_out_attempt(
                        conn, attempt_id, owner_id=str(self.owner), outcome=outcome, now=utc_now()
                    )
                else:
                    transitions.finish_attempt(
                        conn, attempt_id, owner_id=str(self.owner), outcome=outcome, now=utc_now()
                    )
        except StaleTransitionError:
            return False
        return True

    def hidden(self, task_id: int | None) -> frozenset[str]:
        """What a task's log must not show: the secrets resolved here and its sensitive parameters' values."""
        node = self.graph.tasks.get(task_id) if task_id is not None else None
        sensitive = self.config.redaction.values(node.handler.value, node.parameters) if node else frozenset()
        return self.config.resolved_secrets() | sensitive

    def reap(self) -> None:
        """Move the processes that ended to `exited`, where they stay until their ends are reported
        (an Engine DB outage in between leaves them for the next step)."""
        for attempt_id, child in list(self.children.items()):
            status = self.pools.of(child.handle).status(child.handle)
            if status.state is HandleState.RUNNING:
                continue
            del self.children[attempt_id]
            fault_point("after_child_exit")
            self.exited.append((child, status.exit_code if status.exit_code is not None else -signal.SIGKILL))

    def record_silent_ends(self, state: RunState) -> bool:
        """Record an outcome for each reaped process whose attempt, read after the reap, is still ours and
        live: it ended without recording one. Returns whether there was any (the state is then stale,
        whoever's outcome won)."""
        found = False
        for child, status in self.exited:
            row = state.attempt(child.spec.attempt_id)
            if row is None or row.status not in OWNED_ATTEMPT or row.owner_id != str(self.owner):
                continue
            # Mask its log file here: its own masking thread may have died with it.
            redact_file(child.log_path, self.hidden(child.task_id))
            how = (
                f"was killed by signal {signal.Signals(-status).name}" if status < 0 else f"exited with status {status}"
            )
            self.record_outcome(
                child.spec.attempt_id,
                f"the task process {how} before recording an outcome",
                exit_code=status,
                log_path=child.log_path,
                task_id=child.task_id,
            )
            found = True
        return found

    def report_ends(self, state: RunState) -> None:
        for child, _status in self.exited:
            self._ship_log(child)
            self._report_end(state.attempt(child.spec.attempt_id), child)
        self.exited.clear()

    def _ship_log(self, child: RunningChild) -> None:
        # Only this host's processes: a queue pool's worker copies the logs of the processes it ran.
        if self.pools.of(child.handle).owner_claims:
            ship_log(self.config.logs.store, child.log_path)

    def attempt(self, attempt_id: int) -> AttemptRow | None:
        with self.db.read() as conn:
            return reads.attempt(conn, attempt_id)

    def _report_end(self, row: AttemptRow | None, child: RunningChild) -> None:
        if row is None:
            return
        task = self.graph.tasks[child.task_id]
        took = time.monotonic() - child.started_monotonic
        detail = f"{self.graph.code}.{task.code}: attempt {row.attempt_number} {row.status} after {took:.1f}s"
        if row.error_message and row.status != "SUCCESS":
            detail += f": {row.error_message.splitlines()[0]}"
        self.progress(detail)

    def enforce_timeouts(self) -> None:
        now = time.monotonic()
        for attempt_id, child in list(self.children.items()):
            if child.deadline is None or now < child.deadline or attempt_id in self.stopping:
                continue
            seconds = child.timeout_seconds
            # The limit counts from when the task process acknowledged its attempt (RUNNING), not
            # from the spawn: a slow start on a loaded host does not eat into the task's time.
            row = self.attempt(attempt_id)
            if row is not None and row.status == "CLAIMED":
                child.deadline = now + 0.5
                continue
            if row is not None and row.status == "RUNNING" and row.started_at is not None:
                left = seconds - (utc_now() - row.started_at).total_seconds()
                if left > 0:
                    child.deadline = now + left
                    continue
            recorded = self.record_outcome(
                attempt_id,
                f"timed out after {seconds} s (TASK_TIMEOUT_SECONDS); the task process was stopped",
                log_path=child.log_path,
                timed_out=True,
                task_id=child.task_id,
            )
            if recorded:
                number = row.attempt_number if row is not None else "?"
                task = self.graph.tasks[child.task_id].code
                self.progress(
                    f"{self.graph.code}.{task}: attempt {number} TIMED_OUT after {seconds} s (TASK_TIMEOUT_SECONDS); "
                    "stopping its task process"
                )
            self.pools.of(child.handle).cancel(child.handle, STOP_GRACE_SECONDS)
            del self.children[attempt_id]
            self.stopping[attempt_id] = child
        for attempt_id, child in list(self.stopping.items()):
            if self.pools.of(child.handle).status(child.handle).state is not HandleState.RUNNING:
                del self.stopping[attempt_id]
                self._ship_log(child)

    def stop_all(self, reason: str) -> None:
        """Record every running attempt FAILED with the reason, then stop the processes."""
        for attempt_id, child in list(self.children.items()):
            self.record_outcome(attempt_id, reason, exit_code=None, log_path=child.log_path, task_id=child.task_id)
        self.abandon()

    def abandon(self) -> None:
        """Stop every process (their attempts were ended by someone else, e.g. a cancel) and wait
        for them to end, SIGKILLed after the grace."""
        children = list(self.children.values()) + list(self.stopping.values())
        for child in children:
            self.pools.of(child.handle).cancel(child.handle, STOP_GRACE_SECONDS)
        until = time.monotonic() + STOP_GRACE_SECONDS + 5
        while time.monotonic() < until:
            if all(self.pools.of(c.handle).status(c.handle).state is not HandleState.RUNNING for c in children):
                break
            self.pools.local.wait((), 0.05)
        self.children.clear()
        self.stopping.clear()

    def ended(self) -> bool:
        """Whether a task process ended whose end was not reported yet."""
        return bool(self.exited) or any(
            self.pools.of(child.handle).status(child.handle).state is not HandleState.RUNNING
            for child in self.children.values()
        )

    def seconds_to_deadline(self) -> float | None:
        """Seconds until a time limit (or a stop's grace) is due, if any runs."""
        due = [c.deadline for c in self.children.values() if c.deadline is not None]
        return min(due) - time.monotonic() if due else None

    def wait(self, extra: Sequence[int], timeout: float) -> None:
        """Until a process ends, an extra descriptor is readable, a time limit is due, or `timeout`."""
        deadline = self.seconds_to_deadline()
        self.pools.local.wait(extra, timeout if deadline is None else min(timeout, deadline))
