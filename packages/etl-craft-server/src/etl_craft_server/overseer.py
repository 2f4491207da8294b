"""The overseer loop: schedules, admits and supervises every local run of the Engine DB (S4.B, S4.D).

Each pass, at least every second and at once when a task process ends, a signal arrives or (on
PostgreSQL) a transition NOTIFYs: fence expired leases; create the runs of due ticks; admit the
oldest QUEUED run of each pipeline with no run in progress: those of pipelines without pipeline
gates all in one statement, the others through their gates one look at a time (a waiting run holds
no thread and no slot); take over IN-PROGRESS runs nobody holds; and step the supervisor of every
run it holds that has something to do, which starts ready tasks within one pool of
Orchestration.Max_parallel_tasks task processes for all runs, applies completions, retries,
timeouts, cancellations and SLA checks, and ends settled runs. The same RunSupervisor runs
`etl-craft run --pipeline_code` in the foreground.

Only unfinished runs and their graphs are in memory (metadata_cache.py); a restart rebuilds
everything from the Engine DB.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.actor import Actor, host_name
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import UNFINISHED_RUN, ActorKind, AlertEvent, Handler
from etl_craft.core.errors import LockTimeoutError, StaleTransitionError
from etl_craft.engine import locks, reads, transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads import PipelineRow
from etl_craft.engine.retry import TRANSIENT, first_line
from etl_craft.engine.schema import tables as t
from etl_craft.engine.transitions import EVENTS_CHANNEL
from etl_craft.execution.alert_channels import notify
from etl_craft.execution.alert_channels.notify import gate_wait_hook
from etl_craft.execution.gates.admission import PipelineAdmission, admit_lock
from etl_craft.execution.pools.choice import Pools
from etl_craft.execution.pools.interface import SlotKind
from etl_craft.execution.pools.local import local_pool
from etl_craft.execution.processes.identity import OwnerId
from etl_craft.execution.run_loop.leases import lease_until
from etl_craft.execution.run_loop.reconcile import LostAttempt, reconcile
from etl_craft.execution.run_loop.signals import StopSignals
from etl_craft.execution.run_loop.supervisor import RunSupervisor
from etl_craft_server.daily_purge import DailyPurge
from etl_craft_server.events import Events
from etl_craft_server.metadata_cache import MetadataCache
from etl_craft_server.metrics import observe_admission
from etl_craft_server.schedule_clock import ScheduleClock
from etl_craft_server.scheduled_clone import ScheduledClone
from etl_craft_server.schedules import Schedules

log = logging.getLogger("etl_craft.server")

LOOP_SECONDS = 1.0
RECONCILE_SECONDS = 5.0
OUTAGE_RETRY_SECONDS = 2.0  # between passes while the Engine DB does not answer
# The runs an overseer admits and takes over. Orchestrator runs belong to their external
# orchestrator, backfills to the command that resumes them.
OVERSEEN_KINDS = ("SCHEDULE", "MANUAL")


@dataclass
class _Held:
    """A QUEUED run this overseer holds while its pipeline gates are judged."""

    next_look: datetime


@dataclass
class _Supervised:
    supervisor: RunSupervisor
    pipeline_id: int
    wake_at: float = 0.0  # monotonic
    starved_since: float | None = None  # monotonic: since when ready work waits for a free process
    starved_kinds: frozenset[SlotKind] = frozenset()  # the slot kinds it waits for


@dataclass(frozen=True)
class _ActiveRun:
    pipeline_run_id: int
    pipeline_id: int
    status: str
    owner_id: str | None
    lease_expires_at: datetime | None
    trigger_kind: str
    start_date: datetime  # when the QUEUED run was created: admission latency counts from here


class Overseer:
    def __init__(
        self,
        db: EngineDb,
        config: ConnectorConfig,
        owner: OwnerId,
        clock: ScheduleClock,
        signals: StopSignals,
        log_level: str,
    ) -> None:
        self.db, self.config, self.owner, self.clock, self.signals = db, config, owner, clock, signals
        self.log_level = log_level
        self.actor = Actor(f"etl-craft server@{host_name()}", ActorKind.SYSTEM)
        self.schedules = Schedules(
            db,
            config.orchestration.timezone,
            clock.now(),
            Actor(f"etl-craft server@{host_name()}", ActorKind.SCHEDULE),
        )
        self.listener = db.dialect.listener(db, EVENTS_CHANNEL)
        self.sweep_seconds = db.dialect.sweep_seconds
        self.metadata = MetadataCache(db, self.schedules)
        # One pool for every run; its fork server preloads every handler, whatever runs first.
        self.pool = local_pool(config, db.dialect, Handler)
        self.pools = Pools(db, self.pool)  # and the queue pools its tasks' POOL parameters name
        self.daily_purge = DailyPurge(db, config, self.actor, clock.now())
        self.clone = ScheduledClone(db, config, self.actor, clock.now())
        self.held: dict[int, _Held] = {}
        self.supervised: dict[int, _Supervised] = {}
        self._last_reconcile = float("-inf")
        self._stop_at: float | None = None
        self._outage_since: float | None = None  # monotonic: since when the Engine DB has not answered

    # --- the loop ----------------------------------------------------------------------------------

    def serve(self) -> None:
        """Until a signal stops it: every pass, then a wait for the next thing to do."""
        try:
            while True:
                if self.signals.reason is not None and self._stop_at is None:
                    self._begin_shutdown()
                if self._stop_at is not None and self._shutdown_finished():
                    return
                try:
                    self.step()
                except TRANSIENT as error:
                    self._ride_out(error)
                    continue
                self._wait()
        finally:
            if self.listener is not None:
                self.listener.close()

    def _ride_out(self, error: Exception) -> None:
        """The Engine DB did not answer during a pass. Nothing is half done: a pass commits whole
        transactions and moves what it holds in memory only after a commit, task processes keep
        running, and leases last a minute. So the server waits a little and passes again; if the
        session holding the overseer lock went too, the heartbeat stops the server (exit 12)."""
        if self._outage_since is None:
            self._outage_since = time.monotonic()
            log.warning(
                "the Engine DB did not answer (%s); the server keeps its runs and tries again every %s s",
                first_line(error),
                OUTAGE_RETRY_SECONDS,
            )
        self.signals.sleep(OUTAGE_RETRY_SECONDS)

    def _answered(self) -> None:
        if self._outage_since is not None:
            log.info("the Engine DB answers again after %.0f s", time.monotonic() - self._outage_since)
            self._outage_since = None

    def step(self) -> None:
        events = Events.parse(self.listener.drain()) if self.listener is not None else Events()
        if self._stop_at is None:
            if time.monotonic() - self._last_reconcile >= RECONCILE_SECONDS:
                self._reconcile()
            self.metadata.refresh()
            self._answered()  # the metadata version was read: the Engine DB answers
            now = self.clock.now()
            self.schedules.create_due(now)
            self.daily_purge.start_if_due(now)
            self.clone.start_if_due(now)
            self._admit_and_take_over(events)
        self._supervise(events)

    def _wait(self) -> None:
        now = time.monotonic()
        timeout = LOOP_SECONDS
        for supervised in self.supervised.values():
            timeout = min(timeout, supervised.wake_at - now)
        if any(self._has_room_for(s) for s in self.supervised.values()):
            timeout = 0.0  # processes freed up after the waiting runs had their turn: serve them now
        wall = utc_now()
        for held in self.held.values():
            timeout = min(timeout, (held.next_look - wall).total_seconds())
        due = self.schedules.next_due()
        if due is not None and self.clock.real:
            timeout = min(timeout, (due - wall).total_seconds())
        extra = [self.signals.wake_fd]
        listening = self.listener.fileno() if self.listener is not None else None
        if listening is not None:
            extra.append(listening)
        self.pool.wait(extra, max(0.0, timeout))
        self.signals.drain()

    # --- what the Engine DB holds -------------------------------------------------------------------

    def _reconcile(self) -> None:
        self._last_reconcile = time.monotonic()
        report = reconcile(self.db)
        for lost in report.lost:
            log.warning("attempt_id=%s LOST: %s", lost.attempt_id, lost.message)
            self._announce_lost(lost)
        for run_id in report.released_runs:
            log.info("pipeline_run_id=%s released: its owner is gone", run_id)

    def _announce_lost(self, lost: LostAttempt) -> None:
        """Tell the alert channels (attempt_lost), as a foreground run's supervisor would."""
        runs, task_runs = t.aud_pipelines_run_log, t.aud_task_run_log
        with self.db.read() as conn:
            pipeline_id = conn.execute(
                sa.select(runs.c.pipeline_id)
                .join(task_runs, task_runs.c.pipeline_run_id == runs.c.pipeline_run_id)
                .where(task_runs.c.task_run_id == lost.task_run_id)
            ).scalar_one()
        pipeline = self.metadata.pipelines.get(pipeline_id)
        code = pipeline.pipeline_code if pipeline else f"pipeline {pipeline_id}"
        notify.announce(
            self.db,
            self.config,
            AlertEvent.ATTEMPT_LOST,
            pipeline_code=code,
            attempt_id=lost.attempt_id,
            error=lost.message,
        )

    def _active_runs(self) -> tuple[list[_ActiveRun], set[int]]:
        """Every QUEUED and IN-PROGRESS run (one query on the partial index), and the paused pipelines."""
        runs = t.aud_pipelines_run_log
        with self.db.read() as conn:
            rows = conn.execute(
                sa.select(
                    runs.c.pipeline_run_id,
                    runs.c.pipeline_id,
                    runs.c.status,
                    runs.c.owner_id,
                    runs.c.lease_expires_at,
                    runs.c.trigger_kind,
                    runs.c.start_date,
                )
                .where(runs.c.status.in_(UNFINISHED_RUN))
                .order_by(runs.c.pipeline_run_id)
            ).all()
            paused = set(reads.open_pauses(conn))
        return [_ActiveRun(*row) for row in rows], paused

    def _free(self, run: _ActiveRun, now: datetime) -> bool:
        return (
            run.owner_id is None
            or run.owner_id == str(self.owner)
            or (run.lease_expires_at is not None and run.lease_expires_at < now)
        )

    # --- admission and take-over --------------------------------------------------------------------

    def _admit_and_take_over(self, events: Events) -> None:
        active, paused = self._active_runs()
        now = utc_now()
        still_queued = {r.pipeline_run_id for r in active if r.status == "QUEUED"}
        for run_id in set(self.held) - still_queued:
            del self.held[run_id]  # cancelled or ended by an operator while it waited
        by_pipeline: dict[int, list[_ActiveRun]] = defaultdict(list)
        for run in active:
            by_pipeline[run.pipeline_id].append(run)
        due: list[tuple[PipelineRow, _ActiveRun]] = []
        for pipeline_id, runs in by_pipeline.items():
            pipeline = self.metadata.pipelines.get(pipeline_id)
            if pipeline is None:
                continue  # a retired pipeline: its unfinished runs are left to an operator
            in_progress = [r for r in runs if r.status == "IN-PROGRESS"]
            for run in in_progress:
                overseen = run.pipeline_run_id not in self.supervised and run.trigger_kind in OVERSEEN_KINDS
                if overseen and self._free(run, now):
                    self._take_over(pipeline, run.pipeline_run_id)
            if in_progress or pipeline_id in paused:
                continue
            queued = [r for r in runs if r.status == "QUEUED"]
            if queued and queued[0].trigger_kind in OVERSEEN_KINDS:
                due.append((pipeline, queued[0]))
        admitted = self._admit_ungated(due, now)
        for pipeline, run in due:
            if run.pipeline_run_id not in admitted:
                self._admit(pipeline, run, events, now)

    def _admit_ungated(self, due: list[tuple[PipelineRow, _ActiveRun]], now: datetime) -> set[int]:
        """Admit at once every due run without pipeline gates (after a tick, often most of them); the
        rest, and all of them when another admitter interferes, go through `_admit` one at a time."""
        self.metadata.load_graphs([pipeline for pipeline, _run in due])
        candidates = {
            run.pipeline_run_id: pipeline
            for pipeline, run in due
            if run.pipeline_run_id not in self.held
            and self._free(run, now)
            and self.metadata.graph(pipeline) is not None
        }
        if len(candidates) < 2:
            return set()
        try:
            with self.db.write() as conn:
                admitted = transitions.admit_ungated_runs(
                    conn, list(candidates), owner_id=str(self.owner), lease_until=lease_until(now), now=now
                )
        except StaleTransitionError as busy:
            log.debug("admitting %s run(s) at once was refused: %s", len(candidates), busy.message)
            return set()
        created = {run.pipeline_run_id: run.start_date for _pipeline, run in due}
        for run_id in admitted:
            observe_admission(created[run_id])
            log.info("%s: pipeline_run_id=%s admitted", candidates[run_id].pipeline_code, run_id)
            self._supervise_run(candidates[run_id], run_id)
        return set(admitted)

    def _admit(self, pipeline: PipelineRow, run: _ActiveRun, events: Events, now: datetime) -> None:
        """One look at the pipeline gates of the pipeline's oldest QUEUED run, when one is due."""
        run_id = run.pipeline_run_id
        held = self.held.get(run_id)
        if held is not None and held.next_look > now and run_id not in events.runs:
            return
        if self.metadata.graph(pipeline) is None:
            return
        if held is None:
            if not self._free(run, now):
                return  # a foreground `etl-craft run` is admitting it
            try:
                with self.db.write() as conn:
                    transitions.hold_run(conn, run_id, owner_id=str(self.owner), lease_until=lease_until(now), now=now)
            except StaleTransitionError:
                return
            held = self.held[run_id] = _Held(now)
        admission = PipelineAdmission(
            self.db,
            self.config.orchestration,
            pipeline,
            str(self.owner),
            self.actor,
            log.info,
            self.signals.sleep,
            gate_wait_hook(self.db, self.config, pipeline.pipeline_code, run_id),
        )
        try:
            with locks.hold(self.db, admit_lock(pipeline.pipeline_id), timeout=0):
                admitted = admission.admit_once(run_id)
        except (LockTimeoutError, StaleTransitionError) as busy:
            # Another process is admitting a run of this pipeline, or one got in first: look again soon.
            log.debug("%s: pipeline_run_id=%s not admitted yet: %s", pipeline.pipeline_code, run_id, busy.message)
            held.next_look = utc_now()
            return
        if admitted.status == "QUEUED":
            held.next_look = admitted.next_check_at or utc_now()
            return
        del self.held[run_id]
        if admitted.status == "IN-PROGRESS":
            observe_admission(run.start_date)
            log.info("%s: pipeline_run_id=%s admitted", pipeline.pipeline_code, run_id)
            self._supervise_run(pipeline, run_id)
        else:
            log.info("%s: pipeline_run_id=%s %s: %s", pipeline.pipeline_code, run_id, admitted.status, admitted.reason)

    def _take_over(self, pipeline: PipelineRow, run_id: int) -> None:
        """An IN-PROGRESS run nobody holds (its overseer or foreground run stopped) is resumed here."""
        if self.metadata.graph(pipeline) is None:
            return
        now = utc_now()
        try:
            with self.db.write() as conn:
                transitions.start_run(conn, run_id, owner_id=str(self.owner), lease_until=lease_until(now), now=now)
        except StaleTransitionError:
            return
        log.info("%s: pipeline_run_id=%s taken over and resumed", pipeline.pipeline_code, run_id)
        self._supervise_run(pipeline, run_id)

    def _supervise_run(self, pipeline: PipelineRow, run_id: int) -> None:
        graph = self.metadata.graphs[pipeline.pipeline_id]
        supervisor = RunSupervisor(
            db=self.db,
            config=self.config,
            graph=graph,
            run_id=run_id,
            owner=self.owner,
            actor=self.actor,
            signals=self.signals,
            pools=self.pools,
            progress=log.info,
            log_level=self.log_level,
            fences_lost_attempts=False,  # _reconcile does it for every run at once
        )
        self.supervised[run_id] = _Supervised(supervisor, pipeline.pipeline_id)

    # --- supervision --------------------------------------------------------------------------------

    def _pool_free(self) -> int:
        """Attempts the pool may still start, all slot kinds together (each start checks its kind)."""
        return sum(self.pool.capacity().free.values())

    def _has_room_for(self, supervised: _Supervised) -> bool:
        """Whether a run waiting for the pool could start something now: a slot of a kind it waits for is free."""
        if supervised.starved_since is None:
            return False
        free = self.pool.capacity()
        return any(free.has_room(kind) for kind in supervised.starved_kinds)

    def _supervise(self, events: Events) -> None:
        """Step every run with something to do, then give free processes to the runs waiting longest.

        A run stepped in the first part starts tasks only while no other run waits for a process;
        otherwise it joins the end of the queue, so the pool goes to tasks in the order they became
        ready to start.
        """
        dispatch = self._stop_at is None
        free = self._pool_free()
        queued = any(s.starved_since is not None for s in self.supervised.values())
        for run_id, supervised in list(self.supervised.items()):
            woken = events.wake(run_id, supervised.pipeline_id, supervised.supervisor.processes.local_attempts())
            # A run waiting for a process has nothing to do until its turn comes (below) or it is
            # woken, unless every process is taken: then sweeps find the attempts that ended unseen.
            swept = time.monotonic() >= supervised.wake_at and (supervised.starved_since is None or free <= 0)
            if woken or supervised.supervisor.processes.ended() or swept:
                self._step_run(run_id, supervised, dispatch, 0 if queued else free)
                free = self._pool_free()
                queued = queued or supervised.starved_since is not None
        # Runs waiting for the local pool go by pipeline PRIORITY (higher first), then by wait (S5.E).
        starved = [(run_id, s) for run_id, s in self.supervised.items() if s.starved_since is not None]
        waiting = sorted((-s.supervisor.graph.pipeline.priority, s.starved_since, run_id) for run_id, s in starved)
        for _priority, _since, run_id in waiting:
            free = self._pool_free()
            if free <= 0:
                break
            if self._has_room_for(self.supervised[run_id]):
                self._step_run(run_id, self.supervised[run_id], dispatch, free)

    def _step_run(self, run_id: int, supervised: _Supervised, dispatch: bool, pool_free: int) -> None:
        """Step one run, starting at most `pool_free` attempts."""
        supervisor = supervised.supervisor
        ended = supervisor.step(dispatch=dispatch, pool_free=max(0, pool_free))
        if ended is not None:
            del self.supervised[run_id]
            log.info("%s: pipeline_run_id=%s %s %s", supervisor.graph.code, run_id, ended.run_status, ended.message)
            return
        if not supervisor.pool_starved:
            supervised.starved_since = None
        elif supervised.starved_since is None:
            supervised.starved_since = time.monotonic()
        supervised.starved_kinds = frozenset(supervisor.starved_kinds)
        supervised.wake_at = time.monotonic() + supervisor.next_wake(self.sweep_seconds)

    # --- shutdown -----------------------------------------------------------------------------------

    def _begin_shutdown(self) -> None:
        grace = self.config.orchestration.shutdown_grace_seconds
        self._stop_at = time.monotonic() + grace
        running = sum(len(s.supervisor.processes.children) for s in self.supervised.values())
        log.info(
            "%s: no new run or task starts; waiting up to %s s (Orchestration.Shutdown_grace_seconds) "
            "for %s running attempt(s)",
            self.signals.reason,
            grace,
            running,
        )
        for run_id in list(self.held):
            try:
                with self.db.write() as conn:
                    transitions.release_run(conn, run_id, owner_id=str(self.owner))
            except StaleTransitionError:
                pass
            except TRANSIENT as error:
                log.warning(
                    "pipeline_run_id=%s stays held until its lease ends: the Engine DB did not answer (%s)",
                    run_id,
                    first_line(error),
                )
            del self.held[run_id]

    def _shutdown_finished(self) -> bool:
        """True once every run is left: after its attempts ended, or the grace ran out (or a second signal)."""
        assert self._stop_at is not None
        busy = any(s.supervisor.busy for s in self.supervised.values())
        if busy and time.monotonic() < self._stop_at and self.signals.received < 2:
            return False
        reason = self.signals.reason or "stopped"
        for run_id, supervised in list(self.supervised.items()):
            try:
                supervised.supervisor.stop(reason)
            except TRANSIENT as error:
                # The processes stop all the same. Their attempts stay recorded under this server,
                # whose exit the next one (or `etl-craft reconcile`) sees: they become LOST.
                supervised.supervisor.processes.abandon()
                log.warning(
                    "pipeline_run_id=%s: its task processes were stopped, but the Engine DB did not answer to "
                    "record it (%s); the next server records their attempts LOST",
                    run_id,
                    first_line(error),
                )
            del self.supervised[run_id]
        return True
