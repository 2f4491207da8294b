"""The foreground overseer of one run: ready-set dispatch, leases, retries, timeouts, signals, ending.

After every completion every ready task starts at once, within the pipeline's MAX_PARALLEL_TASKS. Each
attempt is claimed before its process starts and every outcome goes through the transitions module,
fenced by this supervisor's owner id. The loop wakes when a child ends, on a signal, and at least every
second to notice operators. A `Scope` narrows it to some tasks (`run --task_code`, `--with-downstream`).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from datetime import datetime

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.actor import Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import ENDED_TASK, OWNED_ATTEMPT, AlertEvent, RunStatus
from etl_craft.core.errors import EtlCraftError, StaleTransitionError
from etl_craft.core.faults import fault_point
from etl_craft.core.sla import sla_verdict
from etl_craft.engine import reads, transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads import AttemptRow, RunState
from etl_craft.engine.records import gate_records
from etl_craft.engine.retry import TRANSIENT, first_line
from etl_craft.execution.alert_channels import notify
from etl_craft.execution.gates.judge import Answer
from etl_craft.execution.gates.tasks import TaskGates
from etl_craft.execution.graph import Graph, TaskNode
from etl_craft.execution.pools.choice import Pools
from etl_craft.execution.pools.interface import SlotKind, slot_kind
from etl_craft.execution.processes.identity import OwnerId
from etl_craft.execution.readiness import Decision, Phase, TaskState, decide
from etl_craft.execution.run_loop.attempts import AttemptProcesses
from etl_craft.execution.run_loop.leases import RENEW_SECONDS, Heartbeat
from etl_craft.execution.run_loop.outcome import settle
from etl_craft.execution.run_loop.reconcile import reconcile
from etl_craft.execution.run_loop.retries import retry_time
from etl_craft.execution.run_loop.scope import Ending, Scope, Supervised
from etl_craft.execution.run_loop.signals import StopSignals

log = logging.getLogger("etl_craft.supervisor")

POLL_SECONDS = 1.0
STOP_GRACE_SECONDS = 10.0


class RunSupervisor:
    def __init__(
        self,
        *,
        db: EngineDb,
        config: ConnectorConfig,
        graph: Graph,
        run_id: int,
        owner: OwnerId,
        actor: Actor,
        scope: Scope = Scope(),
        signals: StopSignals,
        pools: Pools,
        progress: Callable[[str], None] = lambda _line: None,
        log_level: str = "INFO",
        fences_lost_attempts: bool = True,
    ) -> None:
        """`fences_lost_attempts`: reconcile the pipeline's attempts whose owners died every
        RENEW_SECONDS. A foreground run is its own overseer and does; under `etl-craft server`, the
        server reconciles every run at once and its supervisors don't repeat it."""
        self.db, self.config, self.graph, self.run_id = db, config, graph, run_id
        self.fences_lost_attempts = fences_lost_attempts
        self.owner, self.actor, self.scope, self.progress = owner, actor, scope, progress
        self.log_level = log_level
        self.processes = AttemptProcesses(
            db, config, graph, run_id, owner, actor, progress, log_level, pools, force=scope.force, rerun=scope.rerun
        )
        self.pools = pools
        self.skip_reasons: dict[int, str] = {}
        self._again = set(scope.again)
        self._handled_failures: set[int] = set()
        self.signals = signals
        self._last_reconcile = 0.0
        self._started_since_read = 0
        # An overseer shares one pool among its runs: how many attempts this step may start (None:
        # as many as the pool has room for, as in the foreground), and the slot kinds ready work
        # waited for in this step (the pool had no room of that kind, or the share was used up).
        self._pool_free: int | None = None
        self._launched = 0  # attempts started in this step
        self.starved_kinds: set[SlotKind] = set()
        self._queue_room: dict[str, dict[SlotKind, int]] = {}  # free slots of queue pools, this step
        self._first = True
        self.gates = TaskGates(db, config.orchestration)
        self.alerts = notify.RunAlerts(db, config, graph.code, run_id)  # webhooks (S7.D); returns at once
        self._wake_at: dict[int, datetime] = {}  # by task id: its gate's next look; by -task id: its retry
        self._outage_since: float | None = None  # monotonic: since when the Engine DB has not answered

    def supervise(self) -> Supervised:
        """Run in the foreground until the scoped tasks are done, the run ends, or a signal stops it."""
        heartbeat = Heartbeat(self.db, str(self.owner), self.run_id if self.scope.own_run else None, self.signals.wake)
        heartbeat.start()
        try:
            while True:
                if self.signals.reason:
                    return self.stop(self.signals.reason)
                done = self.step(lease_lost=heartbeat.lost is not None)
                if done:
                    return done
                self._sleep()
        finally:
            heartbeat.stop()

    def step(
        self, *, dispatch: bool = True, lease_lost: bool = False, pool_free: int | None = None
    ) -> Supervised | None:
        """One pass, never blocking: collect ended attempts, fence dead owners, read the run, start
        what is ready (unless `dispatch` is False, as while an overseer shuts down), at most
        `pool_free` of them when an overseer shares the pool among runs (`starved_kinds` then says
        which slot kinds ready work was left waiting for). Returns how the supervision ended, or None to be called
        again."""
        self._pool_free, self._launched = pool_free, 0
        self.starved_kinds = set()
        self._queue_room = {}
        try:
            ended = self._step(dispatch, lease_lost)
        except TRANSIENT as error:
            # An Engine DB outage: task processes keep running and leases last a minute, so look
            # again later instead of abandoning the run (B27). One warning per outage, not per look.
            if self._outage_since is None:
                self._outage_since = time.monotonic()
                log.warning(
                    "the Engine DB did not answer (%s); supervising again every %s s", first_line(error), POLL_SECONDS
                )
            return None
        if self._outage_since is not None:
            log.info("the Engine DB answers again after %.0f s", time.monotonic() - self._outage_since)
            self._outage_since = None
        return ended

    @property
    def pool_starved(self) -> bool:
        return bool(self.starved_kinds)

    @property
    def busy(self) -> bool:
        return self.processes.busy

    def stop(self, reason: str) -> Supervised:
        """Record every running attempt FAILED with the reason, stop the processes, leave the run."""
        self.processes.stop_all(reason)
        self.progress(f"{self.graph.code}: {reason}")
        return self._leave(Ending.STOPPED, reason)

    def _step(self, dispatch: bool, lease_lost: bool) -> Supervised | None:
        first = self._first
        self._first = False
        self.processes.reap()
        self.processes.enforce_timeouts()
        self._reconcile_foreign()
        snap = self._read()  # after the reap: an outcome a reaped process recorded is in it
        if self.processes.record_silent_ends(snap):
            snap = self._read()
        self.processes.report_ends(snap)
        ended = self._ended_elsewhere(snap, lease_lost)
        if ended:
            return ended
        self._watch_sla(snap)
        if self._plan_retries(snap, first):
            snap = self._read()  # the new attempts change what is ready
        states = self._states(snap)
        decision = self._decide(snap, states)
        self._record_skips(decision, states)
        if dispatch and not snap.paused:
            self._start_due_retries(snap)
            self._start_ready(snap, decision, states)
        if self.pool_starved:
            return None  # ready work waits for the overseer's pool: the run is not finished
        return self._finished(snap, states, decision)

    def _read(self) -> RunState:
        self._started_since_read = 0
        with self.db.read() as conn:
            snap = reads.run_state(conn, self.run_id)
        assert snap is not None
        return snap

    def _ended_elsewhere(self, snap: RunState, lease_lost: bool) -> Supervised | None:
        run = snap.run
        if not self.scope.own_run and not self.processes.busy and run.status != "IN-PROGRESS":
            # A task run on its own: the run may end meanwhile (its supervisor finalized it once this
            # task ended); what this call did is the task's outcome.
            states = self._states(snap)
            if all(states.get(t, TaskState(Phase.NOT_RUN)).phase.settled for t in self.scope.tasks or ()):
                return Supervised(Ending.SETTLED, run.status, "", states)
        if run.status == "CANCELLED":
            self.processes.abandon()
            return Supervised(Ending.CANCELLED, run.status, f"cancelled by {run.ended_by}")
        if run.status != "IN-PROGRESS" or (self.scope.own_run and (run.owner_id != str(self.owner) or lease_lost)):
            self.processes.abandon()
            who = run.ended_by or run.owner_id or "another process"
            return Supervised(Ending.TAKEN, run.status, f"the run is now {run.status}, changed by {who}")
        return None

    def _watch_sla(self, snap: RunState) -> None:
        """A run past its SLA is marked BREACHED as soon as it is (decided once, never re-measured)."""
        hours = self.graph.pipeline.sla_in_hours
        if hours is None or snap.run.sla_status is not None or not self.scope.own_run:
            return
        if sla_verdict(hours, snap.run.start_date, utc_now()) == "BREACHED":
            with self.db.write() as conn:
                decided = transitions.record_sla(conn, self.run_id, sla_status="BREACHED")
            if decided:
                self.progress(f"{self.graph.code}: pipeline_run_id={self.run_id} breached its SLA of {hours} hour(s)")
                self.alerts(AlertEvent.SLA_BREACHED)

    def _states(self, snap: RunState) -> dict[int, TaskState]:
        states = {}
        for task_id, task_run in snap.task_runs.items():
            if task_id in self._again and task_run.status != "IN-PROGRESS":
                continue  # to run again: it counts as not run yet
            states[task_id] = TaskState(Phase(task_run.status), task_run.rows_written)
        return states

    def _decide(self, snap: RunState, states: dict[int, TaskState]) -> Decision:
        decision = decide(self.graph, states)
        active = any(s.phase is Phase.ACTIVE for s in states.values())
        startable = [t for t in decision.ready if self.scope.includes(t)]
        if not active and not startable and not self.processes.busy:
            # Nothing else can start: a FAILED upstream is now final (its waiters skip, alerts run).
            decision = decide(self.graph, states, failure_final=True)
        return decision

    def _record_skips(self, decision: Decision, states: dict[int, TaskState]) -> None:
        for task_id, reason in decision.skipped.items():
            if not self.scope.includes(task_id) or task_id in self.skip_reasons:
                continue
            if not self.scope.check_dependencies and task_id in (self.scope.tasks or ()):
                continue
            try:
                with self.db.write() as conn:
                    transitions.skip_task(
                        conn, pipeline_run_id=self.run_id, task_id=task_id, reason=reason, now=utc_now()
                    )
            except StaleTransitionError:
                continue
            self.skip_reasons[task_id] = reason
            states[task_id] = TaskState(Phase.SKIPPED)
            self.progress(f"{self.graph.code}.{self.graph.tasks[task_id].code}: SKIPPED, {reason}")

    # --- starting attempts -------------------------------------------------------------------------

    def _own_room(self, snap: RunState) -> bool:
        """Whether the run's live attempts are below MAX_PARALLEL_TASKS (as a queue claim counts it)."""
        owned = sum(1 for rows in snap.attempts.values() for a in rows if a.status in OWNED_ATTEMPT)
        live = max(owned + self._started_since_read, len(self.processes.children))
        return (self.graph.pipeline.max_parallel_tasks or self.config.orchestration.max_parallel_tasks) > live

    def _pool_room(self, node: TaskNode) -> bool:
        """Whether the task's pool has a slot of its kind in this step (a full local pool's kind starves)."""
        kind = slot_kind(node.handler)
        try:
            pool = self.pools.for_task(node)
        except EtlCraftError:
            return True  # a POOL that cannot be used: the start records why on the attempt
        if not pool.owner_claims:
            # A queue pool's room: its workers' free slots, read once a step and counted down as it
            # queues; a full pool is looked at again when a worker's NOTIFY wakes the run.
            if pool.name not in self._queue_room:
                self._queue_room[pool.name] = dict(pool.capacity().free)
            room = self._queue_room[pool.name]
            if room.get(kind, 0) <= 0:
                return False
            room[kind] -= 1
            return True
        share_left = self._pool_free is None or self._pool_free - self._launched > 0
        if share_left and pool.capacity().has_room(kind):
            return True
        self.starved_kinds.add(kind)
        return False

    def _start_ready(self, snap: RunState, decision: Decision, states: dict[int, TaskState]) -> None:
        ready = [t for t in decision.ready if self.scope.includes(t)]
        if not self.scope.check_dependencies:
            ready += [t for t in (self.scope.tasks or ()) if t not in snap.task_runs and t not in ready]
        ready += [t for t in sorted(self._again) if t not in ready and self._again_is_ready(t, snap, decision)]
        for task_id in ready:
            if not self._own_room(snap):
                return
            node = self.graph.tasks[task_id]
            if not self._pool_room(node):
                continue
            decisions = self._admit_across_pipelines(snap, node, states)
            if decisions is None:
                continue
            again_from = ENDED_TASK if task_id in self._again else ("FAILED",)
            task_run = snap.task_runs.get(task_id)
            so_far = task_run.attempt_count if task_run else None
            if self._launch(node, snap, again_from=again_from, attempts_so_far=so_far, decisions=decisions):
                self._again.discard(task_id)

    def _launch(
        self,
        node: TaskNode,
        snap: RunState,
        *,
        again_from: tuple[str, ...] = ("FAILED",),
        queued: AttemptRow | None = None,
        attempts_so_far: int | None = None,
        decisions: list[gate_records.Decision] | None = None,
    ) -> bool:
        """Claim and start an attempt (False: someone else claimed it). It counts against the limits
        only once its process started: a start that failed is recorded FAILED and holds nothing."""
        before = len(self.processes.children)
        claimed = self.processes.launch(
            node, snap.run, again_from=again_from, queued=queued, attempts_so_far=attempts_so_far, decisions=decisions
        )
        started = len(self.processes.children) - before
        self._started_since_read += started
        self._launched += started
        return claimed

    def _admit_across_pipelines(
        self, snap: RunState, node: TaskNode, states: dict[int, TaskState]
    ) -> list[gate_records.Decision] | None:
        """The gate decisions to record with the attempt, or None when the task must not start now
        (it waits for another pipeline without holding a slot, or it was recorded SKIPPED)."""
        if not any(e.cross_pipeline for e in node.edges):
            return []
        bypass = None if self.scope.check_dependencies else self.scope.bypass_reason or "dependencies not checked"
        admission = self.gates.admit(
            self.graph,
            node,
            states,
            self.run_id,
            utc_now(),
            backfill=snap.run.trigger_kind == "BACKFILL",
            bypass_reason=bypass,
        )
        if admission.answer is Answer.SATISFIED:
            return admission.decisions
        if admission.answer is Answer.WAIT:
            self._wake_at[node.task_id] = admission.next_check_at or utc_now()
            self.alerts.gate_waiting(node.code, admission.waiting_since, admission.reason)
            return None
        try:
            with self.db.write() as conn:
                now = utc_now()
                transitions.skip_task(
                    conn, pipeline_run_id=self.run_id, task_id=node.task_id, reason=admission.reason, now=now
                )
                gate_records.record_decisions(conn, self.run_id, admission.decisions, now)
                gate_records.settle_wait(conn, self.run_id, node.task_id)
        except StaleTransitionError:
            return None
        self.skip_reasons[node.task_id] = admission.reason
        self.progress(f"{self.graph.code}.{node.code}: SKIPPED, {admission.reason}")
        return None

    def _again_is_ready(self, task_id: int, snap: RunState, decision: Decision) -> bool:
        task_run = snap.task_runs.get(task_id)
        if task_run is not None and task_run.status == "IN-PROGRESS":
            return False
        return not self.scope.check_dependencies or task_id in decision.ready or task_id in self.scope.again

    def _start_due_retries(self, snap: RunState) -> None:
        now = utc_now()
        for task_id, _task_run in snap.task_runs.items():
            latest = snap.latest_attempt(task_id)
            if latest is None or latest.status != "QUEUED" or not self.scope.includes(task_id):
                continue
            if latest.not_before and latest.not_before > now:
                self._wake_at[-task_id] = latest.not_before  # negative keys: retries
                continue
            if not self._own_room(snap):
                return
            node = self.graph.tasks[task_id]
            if self._pool_room(node):
                self._launch(node, snap, queued=latest)

    def _plan_retries(self, snap: RunState, first: bool) -> bool:
        """FAILED tasks found when the run resumes start again; in-session failures follow RETRIES.
        Returns whether any attempt was queued."""
        queued_any = False
        for task_id, task_run in snap.task_runs.items():
            if task_run.status != "FAILED" or not self.scope.includes(task_id) or task_id in self._again:
                continue
            latest = snap.latest_attempt(task_id)
            key = latest.attempt_id if latest else -task_run.task_run_id
            if key in self._handled_failures:
                continue
            self._handled_failures.add(key)
            node = self.graph.tasks[task_id]
            not_before: datetime | None = None  # a resumed run gives every failed task a new attempt now
            if not (first and self.scope.resume_failed):
                not_before = retry_time(node, latest, self.config.orchestration)
                if not_before is None:
                    continue
            try:
                with self.db.write() as conn:
                    queued = transitions.queue_attempt(
                        conn,
                        pipeline_run_id=self.run_id,
                        task_id=task_id,
                        actor=self.actor,
                        now=utc_now(),
                        not_before=not_before,
                    )
            except StaleTransitionError:
                continue
            when = f" at {not_before:%H:%M:%S}Z" if not_before else " now"
            self.progress(f"{self.graph.code}.{node.code}: attempt {queued.attempt_number} queued{when}")
            queued_any = True
        return queued_any

    def _reconcile_foreign(self) -> None:
        """Attempts of this run held by processes that died are fenced, so the run can go on."""
        now = time.monotonic()
        if not self.fences_lost_attempts or now - self._last_reconcile < RENEW_SECONDS:
            return
        self._last_reconcile = now
        report = reconcile(self.db, pipeline_id=self.graph.pipeline.pipeline_id)
        for lost in report.lost:
            self.progress(f"{self._lost_task(lost.task_run_id)}: {lost.message}")
            self.alerts(AlertEvent.ATTEMPT_LOST, attempt_id=lost.attempt_id, error=lost.message)

    def _lost_task(self, task_run_id: int) -> str:
        """`PIPE.task` of a lost attempt for its progress line, with its run when it is not this one."""
        with self.db.read() as conn:
            row = reads.task_run(conn, task_run_id)
        if row is None or row.task_id not in self.graph.tasks:
            return self.graph.code
        label = f"{self.graph.code}.{self.graph.tasks[row.task_id].code}"
        return label if row.pipeline_run_id == self.run_id else f"{label} (run {row.pipeline_run_id})"

    # --- ending ----------------------------------------------------------------------------------

    def _finished(self, snap: RunState, states: dict[int, TaskState], decision: Decision) -> Supervised | None:
        if self.processes.busy:
            return None
        scoped = [t for t in self.graph.tasks if self.scope.includes(t)]
        fresh = self._read()
        states = self._states(fresh)
        unsettled = [t for t in scoped if not states.get(t, TaskState(Phase.NOT_RUN)).phase.settled or t in self._again]
        if any(states.get(t, TaskState(Phase.NOT_RUN)).phase is Phase.ACTIVE for t in self.graph.tasks):
            return None  # another process's attempt, or a retry waiting for its time
        if unsettled:
            if fresh.paused:
                return self._leave(Ending.PAUSED, "the pipeline is paused: no new task starts until it is resumed")
            waiting = [t for t in unsettled if t not in decision.ready]
            if waiting and len(waiting) == len(unsettled):
                names = ", ".join(self.graph.tasks[t].code for t in waiting)
                return self._leave(Ending.WAITING, f"dependencies not met yet: {names}")
            return None
        if not self.scope.finalize:
            return Supervised(Ending.SETTLED, fresh.run.status, "", states)
        left = [t for t in self.graph.tasks if not states.get(t, TaskState(Phase.NOT_RUN)).phase.settled]
        if left:
            names = ", ".join(self.graph.tasks[t].code for t in left)
            return Supervised(
                Ending.SETTLED,
                fresh.run.status,
                f"{len(left)} other task(s) still need to run: {names}; "
                f"etl-craft run --pipeline_code {self.graph.code} resumes them",
                states,
            )
        fault_point("before_finalize")
        owner = str(self.owner) if self.scope.own_run else None
        verdict = settle(self.db, self.graph, self.run_id, owner_id=owner, extra_skip_reasons=self.skip_reasons)
        if verdict is None:
            return None
        if verdict.status is RunStatus.FAILED:
            self.alerts(AlertEvent.RUN_FAILED, error=verdict.message)
        return Supervised(Ending.FINISHED, verdict.status.value, verdict.message, states)

    def _all_skip_reasons(self, snap: RunState) -> dict[int, str]:
        reasons = {t: r.error_message or "" for t, r in snap.task_runs.items() if r.status == "SKIPPED"}
        reasons.update(self.skip_reasons)
        return reasons

    def _leave(self, ending: Ending, message: str) -> Supervised:
        if self.scope.own_run:
            with contextlib.suppress(StaleTransitionError), self.db.write() as conn:
                transitions.release_run(conn, self.run_id, owner_id=str(self.owner))
        return Supervised(ending, "IN-PROGRESS", message)

    def next_wake(self, at_most: float = POLL_SECONDS) -> float:
        """Seconds until a gate's next look, a retry's time or a task's time limit, at most `at_most`."""
        timeout = at_most
        deadline = self.processes.seconds_to_deadline()
        if deadline is not None:
            timeout = min(timeout, max(0.0, deadline))
        if self._wake_at:
            soonest = min(self._wake_at.values())
            timeout = min(timeout, max(0.0, (soonest - utc_now()).total_seconds()))
            self._wake_at.clear()
        return timeout

    def _sleep(self) -> None:
        self.processes.wait([self.signals.wake_fd], self.next_wake())
        self.signals.drain()
