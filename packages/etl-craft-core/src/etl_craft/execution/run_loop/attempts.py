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
from pathlib import Path

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.actor import Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import OWNED_ATTEMPT
from etl_craft.core.errors import EtlCraftError, StaleTransitionError
from etl_craft.core.faults import fault_point
from etl_craft.core.redaction import SecretMask, redact_file
from etl_craft.engine import reads, transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads import AttemptRow, AttemptSubject, RunRow, RunState
from etl_craft.engine.records import gate_records
from etl_craft.engine.transitions.values import AttemptOutcome
from etl_craft.execution.graph import Graph, TaskNode
from etl_craft.execution.processes.identity import OwnerId, signal_group
from etl_craft.execution.processes.local_provider import LocalProvider, RunningChild
from etl_craft.execution.processes.task_log import log_tail
from etl_craft.execution.processes.task_process import ChildSpec
from etl_craft.execution.run_loop.leases import lease_until
from etl_craft.execution.settings import task_settings

log = logging.getLogger("etl_craft.supervisor")

STOP_GRACE_SECONDS = 10.0


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
        *,
        force: bool = False,
        rerun: bool = False,
    ) -> None:
        self.db, self.config, self.graph, self.run_id = db, config, graph, run_id
        self.owner, self.actor, self.progress, self.log_level = owner, actor, progress, log_level
        self.force, self.rerun = force, rerun
        self.provider = LocalProvider(config.path, db.dialect, (t.handler for t in graph.tasks.values()))
        self.children: dict[int, RunningChild] = {}
        self.stopping: dict[int, tuple[RunningChild, float]] = {}
        self.exited: list[tuple[RunningChild, int]] = []  # reaped, with exit status; ends not yet reported

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
        start its process."""
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
                if decisions:
                    # Judged for this attempt: recorded in the transaction that claims it (S3.E).
                    gate_records.record_decisions(conn, self.run_id, decisions, now, attempt_id)
                    gate_records.settle_wait(conn, self.run_id, node.task_id)
        except StaleTransitionError as stale:
            log.info("%s.%s not started here: %s", self.graph.code, node.code, stale.message)
            return False
        fault_point("after_claim")
        child = None
        try:
            settings = task_settings(node, self.config.orchestration)
            log_path = self.log_path(node, number)
            log_path.parent.mkdir(parents=True, exist_ok=True)
            fault_point("after_mkdir")
            spec = ChildSpec(
                attempt_id=attempt_id,
                owner_id=str(self.owner),
                config_path=str(self.config.path),
                log_path=str(log_path),
                actor_name=self.actor.name,
                actor_kind=self.actor.kind.value,
                force=self.force,
                rerun=self.rerun,
                log_level=self.log_level,
                subject=self._subject(node, run, attempt_id, number, task_run_id, decisions or []),
                parameters=dict(node.parameters),
            )
            child = self.provider.start(spec, node.task_id, time.monotonic(), settings.timeout_seconds or None)
            fault_point("after_spawn")
        except Exception as error:  # anything after the claim is recorded on the attempt
            message = error.message if isinstance(error, EtlCraftError) else f"{type(error).__name__}: {error}"
            self.record_outcome(
                attempt_id, f"could not start the task process: {message}", retryable=getattr(error, "retryable", True)
            )
            if child is not None:
                child.stop(STOP_GRACE_SECONDS)
            self.progress(f"{self.graph.code}.{node.code}: FAILED, could not start: {message}")
            return True
        self.children[attempt_id] = child
        self.progress(f"{self.graph.code}.{node.code}: attempt {number} started (pid {child.pid})")
        return True

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
        root = self.config.orchestration.log_dir
        if not root.is_absolute():
            root = self.config.project_dir / root
        return root / self.graph.code / f"run-{self.run_id}" / f"{node.code}.attempt-{number}.log"

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
        tail = (
            SecretMask(self.hidden(task_id)).redact(log_tail(log_path, self.config.logs.tail_bytes)) if log_path else ""
        )
        outcome = AttemptOutcome(
            "TIMED_OUT" if timed_out else "FAILED",
            error_message=message,
            task_log=(f"--- end of {log_path} ---\n{tail}" if tail else None),
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
            status = child.exit_status()
            if status is None:
                continue
            del self.children[attempt_id]
            fault_point("after_child_exit")
            self.exited.append((child, status))

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
            redact_file(child.spec.log_path, self.hidden(child.task_id))
            how = (
                f"was killed by signal {signal.Signals(-status).name}" if status < 0 else f"exited with status {status}"
            )
            self.record_outcome(
                child.spec.attempt_id,
                f"the task process {how} before recording an outcome",
                exit_code=status,
                log_path=child.spec.log_path,
                task_id=child.task_id,
            )
            found = True
        return found

    def report_ends(self, state: RunState) -> None:
        for child, _status in self.exited:
            self._report_end(state.attempt(child.spec.attempt_id), child)
        self.exited.clear()

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
                log_path=child.spec.log_path,
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
            signal_group(child.pid, child.start, signal.SIGTERM)
            self.stopping[attempt_id] = (child, now + STOP_GRACE_SECONDS)
        for attempt_id, (child, kill_at) in list(self.stopping.items()):
            if not child.process.is_alive():
                del self.stopping[attempt_id]
            elif now >= kill_at:
                child.stop(0)
                del self.stopping[attempt_id]

    def stop_all(self, reason: str) -> None:
        """Record every running attempt FAILED with the reason, then stop the processes."""
        for attempt_id, child in list(self.children.items()):
            self.record_outcome(attempt_id, reason, exit_code=None, log_path=child.spec.log_path, task_id=child.task_id)
        self.abandon()

    def abandon(self) -> None:
        """Stop every process (their attempts were ended by someone else, e.g. a cancel)."""
        for child in list(self.children.values()) + [c for c, _ in self.stopping.values()]:
            child.stop(STOP_GRACE_SECONDS)
        self.children.clear()
        self.stopping.clear()

    def ended(self) -> bool:
        """Whether a task process ended whose end was not reported yet."""
        return bool(self.exited) or any(not child.process.is_alive() for child in self.children.values())

    def seconds_to_deadline(self) -> float | None:
        """Seconds until a time limit (or a stop's grace) is due, if any runs."""
        due = [c.deadline for c in self.children.values() if c.deadline is not None]
        due += [kill_at for _, kill_at in self.stopping.values()]
        return min(due) - time.monotonic() if due else None

    def wait(self, extra: Sequence[int], timeout: float) -> None:
        """Until a process ends, an extra descriptor is readable, a time limit is due, or `timeout`."""
        deadline = self.seconds_to_deadline()
        self.provider.wait(list(self.children.values()), extra, timeout if deadline is None else min(timeout, deadline))
