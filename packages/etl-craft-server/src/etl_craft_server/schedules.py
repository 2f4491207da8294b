"""Scheduled runs: every due tick of a pipeline's RUN_SCHEDULE becomes exactly one run (S4.C).

A tick's run has RUN_KEY `schedule:<tick in UTC>`, TRIGGER_KIND SCHEDULE and RUN_DATE the tick's
date in the schedule's time zone; the unique (PIPELINE_ID, RUN_KEY) index makes creating it
idempotent across restarts. The ticks after the pipeline's latest scheduled run (else after
SCHEDULE_START_DATE, else after the pipeline was created) are due. Ticks that came due while no
overseer was running follow the catch-up rule: the latest one (CATCHUP 'N') or the latest
MAX_CATCHUP_RUNS (CATCHUP 'Y') become runs, oldest first, and the older ones are recorded SKIPPED.
A tick while another run of the pipeline is unfinished follows OVERLAP_POLICY: SKIP records it
SKIPPED, QUEUE keeps it QUEUED until the pipeline's earlier runs end. A paused pipeline's ticks are
recorded SKIPPED too, so every tick keeps exactly one run and nothing floods in on resume.

Only the in-memory next tick of each scheduled pipeline is looked at every loop; the Engine DB is
read and written only when a tick is due.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, time, timedelta
from zoneinfo import ZoneInfo

import sqlalchemy as sa

from etl_craft.core import cron
from etl_craft.core.actor import Actor
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import TriggerKind
from etl_craft.core.errors import StaleTransitionError
from etl_craft.engine import reads, transitions
from etl_craft.engine.database import EngineDb
from etl_craft.engine.reads import PauseRow, PipelineRow
from etl_craft.engine.schema import tables as t

log = logging.getLogger("etl_craft.server.schedules")

KEY_PREFIX = "schedule:"
MISSED = "missed while no overseer was running"
OVERLAPPING = "previous run still active"
# Missed ticks recorded SKIPPED per pipeline and catch-up; older ones are logged, not recorded, so a
# per-minute schedule after a month offline doesn't write 40,000 rows.
MAX_SKIPPED_RECORDS = 1000


def tick_key(tick: datetime) -> str:
    return f"{KEY_PREFIX}{tick.astimezone(UTC):%Y-%m-%dT%H:%M:%SZ}"


def tick_of(run_key: str) -> datetime | None:
    if not run_key.startswith(KEY_PREFIX):
        return None
    try:
        return datetime.strptime(run_key.removeprefix(KEY_PREFIX), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def ticks_between(schedule: cron.Schedule, zone: ZoneInfo, after: datetime, until: datetime) -> Iterator[datetime]:
    """The ticks in (after, until], in order."""
    tick = cron.next_after(schedule, after, zone)
    while tick <= until:
        yield tick
        tick = cron.next_after(schedule, tick, zone)


@dataclass
class ScheduledPipeline:
    pipeline: PipelineRow
    schedule: cron.Schedule
    zone: ZoneInfo
    after: datetime  # ticks strictly after this instant are due
    next_tick: datetime


@dataclass(frozen=True)
class Tick:
    pipeline_code: str
    at: datetime
    pipeline_run_id: int
    status: str
    reason: str | None = None


class Schedules:
    def __init__(self, db: EngineDb, default_timezone: str, online_since: datetime, actor: Actor) -> None:
        """`online_since` is when this overseer started, on the schedule clock: ticks up to it came due
        while no overseer was running."""
        self.db, self.default_timezone, self.online_since, self.actor = db, default_timezone, online_since, actor
        self.pipelines: dict[int, ScheduledPipeline] = {}

    def load(self, conn: sa.Connection, pipelines: list[PipelineRow]) -> None:
        """Take the scheduled ones of the active pipelines and read where their ticks resume (after a
        metadata change too)."""
        rows = [p for p in pipelines if p.run_schedule]
        latest = _latest_tick_keys(conn, [p.pipeline_id for p in rows])
        created = _creation_times(conn, [p.pipeline_id for p in rows])
        self.pipelines = {}
        for pipeline in rows:
            assert pipeline.run_schedule is not None
            try:
                schedule = cron.parse(pipeline.run_schedule)
                zone = ZoneInfo(pipeline.schedule_timezone or self.default_timezone)
            except (cron.CronError, ValueError, KeyError) as error:
                log.error("%s: no scheduled runs: %s (etl-craft validate names the fix)", pipeline.pipeline_code, error)
                continue
            after = _resume_after(pipeline, zone, latest.get(pipeline.pipeline_id), created[pipeline.pipeline_id])
            self.pipelines[pipeline.pipeline_id] = ScheduledPipeline(
                pipeline, schedule, zone, after, cron.next_after(schedule, after, zone)
            )

    def next_due(self) -> datetime | None:
        return min((p.next_tick for p in self.pipelines.values()), default=None)

    def create_due(self, now: datetime) -> list[Tick]:
        """Record a run for every tick due at `now` (the schedule clock), all in one transaction. When
        many pipelines share a schedule, their pauses and unfinished runs are read in one query each and
        their QUEUED runs inserted in one statement."""
        due = [p for p in self.pipelines.values() if p.next_tick <= now]
        if not due:
            return []
        with self.db.write() as conn:
            pauses = reads.open_pauses(conn)
            busy = reads.pipelines_with_unfinished_runs(conn, [p.pipeline.pipeline_id for p in due])
            plans = [
                (p, self._plan(p, now, pauses.get(p.pipeline.pipeline_id), p.pipeline.pipeline_id in busy)) for p in due
            ]
            recorded = self._record(conn, plans)
        # Only once committed: after a failed transaction the same ticks are due at the next pass.
        for scheduled, ticks in recorded:
            if ticks:
                scheduled.after = ticks[-1].at
            scheduled.next_tick = cron.next_after(scheduled.schedule, scheduled.after, scheduled.zone)
        return [tick for _, ticks in recorded for tick in ticks if tick.pipeline_run_id]

    def _plan(
        self, scheduled: ScheduledPipeline, now: datetime, pause: PauseRow | None, busy: bool
    ) -> list[tuple[datetime, str | None]]:
        """The pipeline's due ticks, oldest first, each with why it is SKIPPED (None: it runs)."""
        code = scheduled.pipeline.pipeline_code
        keep = scheduled.pipeline.max_catchup_runs if scheduled.pipeline.catchup == "Y" else 1
        missed, passed_over = _latest_ticks(scheduled, min(now, self.online_since), keep + MAX_SKIPPED_RECORDS)
        on_time = list(ticks_between(scheduled.schedule, scheduled.zone, max(scheduled.after, self.online_since), now))
        older, caught_up = missed[:-keep], missed[-keep:]
        skipped = older[-MAX_SKIPPED_RECORDS:]
        if passed_over or len(older) > len(skipped):
            first = (skipped or caught_up)[0]
            log.warning("%s: ticks before %s came due while no overseer ran; they are not recorded", code, first)
        reason: str | None = None
        if pause is not None:
            reason = f"the pipeline is paused by {pause.paused_by} ({pause.reason})"
        elif busy and scheduled.pipeline.overlap_policy == "SKIP":
            # Only a run from before this pass overlaps: caught-up ticks queue behind each other.
            reason = OVERLAPPING
        return [(tick, MISSED) for tick in skipped] + [(tick, reason) for tick in [*caught_up, *on_time]]

    def _record(
        self, conn: sa.Connection, plans: list[tuple[ScheduledPipeline, list[tuple[datetime, str | None]]]]
    ) -> list[tuple[ScheduledPipeline, list[Tick]]]:
        """Every planned tick's run: SKIPPED ones one by one (rare), QUEUED ones in one INSERT per
        round, where round n holds each pipeline's n-th QUEUED tick, so a pipeline's older tick always
        gets the lower run id (admission takes a pipeline's runs in id order)."""
        ticks: dict[int, list[Tick]] = {}
        rounds: list[dict[tuple[int, str], tuple[ScheduledPipeline, datetime]]] = []
        for scheduled, plan in plans:
            pipeline_id = scheduled.pipeline.pipeline_id
            ticks[pipeline_id] = [self._record_skipped(conn, scheduled, at, why) for at, why in plan if why is not None]
            for number, at in enumerate(at for at, why in plan if why is None):
                if number == len(rounds):
                    rounds.append({})
                rounds[number][(pipeline_id, tick_key(at))] = (scheduled, at)
        for queued in rounds:
            created = transitions.queue_scheduled_runs(
                conn,
                [(key[0], key[1], at.astimezone(s.zone).date()) for key, (s, at) in queued.items()],
                actor=self.actor,
                now=utc_now(),
            )
            for key, (scheduled, at) in queued.items():
                ticks[key[0]].append(_queued(scheduled, at, created.get(key)))
        return [
            (scheduled, sorted(ticks[scheduled.pipeline.pipeline_id], key=lambda k: k.at)) for scheduled, _ in plans
        ]

    def _record_skipped(self, conn: sa.Connection, scheduled: ScheduledPipeline, tick: datetime, reason: str) -> Tick:
        """The tick's SKIPPED run, with the reason on each of its tasks."""
        code, key = scheduled.pipeline.pipeline_code, tick_key(tick)
        try:
            with conn.begin_nested():
                run_id = transitions.record_skipped_tick(
                    conn,
                    pipeline_id=scheduled.pipeline.pipeline_id,
                    run_key=key,
                    run_date=tick.astimezone(scheduled.zone).date(),
                    reason=reason,
                    actor=self.actor,
                    now=utc_now(),
                )
        except StaleTransitionError as clash:
            log.info("%s: tick %s already has a run (%s)", code, key, clash.found)
            return Tick(code, tick, 0, "EXISTS")
        log.info("%s: pipeline_run_id=%s SKIPPED for %s: %s", code, run_id, key, reason)
        return Tick(code, tick, run_id, "SKIPPED", reason)


def _queued(scheduled: ScheduledPipeline, tick: datetime, run_id: int | None) -> Tick:
    code, key = scheduled.pipeline.pipeline_code, tick_key(tick)
    if run_id is None:
        log.info("%s: tick %s already has a run", code, key)
        return Tick(code, tick, 0, "EXISTS")
    log.info("%s: pipeline_run_id=%s QUEUED for %s", code, run_id, key)
    return Tick(code, tick, run_id, "QUEUED")


def _latest_ticks(scheduled: ScheduledPipeline, until: datetime, limit: int) -> tuple[list[datetime], bool]:
    """The latest `limit` ticks in (after, until], and whether older ones were left out.

    The window looked at grows from a day, so a long outage doesn't enumerate every missed minute.
    """
    if until <= scheduled.after:
        return [], False
    window = timedelta(days=1)
    while True:
        start = max(scheduled.after, until - window)
        ticks = list(ticks_between(scheduled.schedule, scheduled.zone, start, until))
        if len(ticks) >= limit or start == scheduled.after:
            return ticks[-limit:], start > scheduled.after or len(ticks) > limit
        window *= 4


def _resume_after(pipeline: PipelineRow, zone: ZoneInfo, latest_key: str | None, created: datetime) -> datetime:
    latest = tick_of(latest_key) if latest_key else None
    if latest is not None:
        return latest
    if pipeline.schedule_start_date is not None:
        # Inclusive: a tick at local midnight of the start date is due.
        return cron.fire_instant(datetime.combine(pipeline.schedule_start_date, time()), zone) - timedelta(seconds=1)
    return created


def _latest_tick_keys(conn: sa.Connection, pipeline_ids: list[int]) -> dict[int, str]:
    runs = t.aud_pipelines_run_log
    rows = conn.execute(
        sa.select(runs.c.pipeline_id, sa.func.max(runs.c.run_key))
        .where(
            runs.c.pipeline_id.in_(pipeline_ids),
            runs.c.trigger_kind == TriggerKind.SCHEDULE.value,
            runs.c.run_key.startswith(KEY_PREFIX),
        )
        .group_by(runs.c.pipeline_id)
    )
    return {pipeline_id: key for pipeline_id, key in rows}


def _creation_times(conn: sa.Connection, pipeline_ids: list[int]) -> dict[int, datetime]:
    pipelines = t.cfg_pipelines
    rows = conn.execute(
        sa.select(pipelines.c.pipeline_id, pipelines.c.create_date).where(pipelines.c.pipeline_id.in_(pipeline_ids))
    )
    return {pipeline_id: created for pipeline_id, created in rows}
