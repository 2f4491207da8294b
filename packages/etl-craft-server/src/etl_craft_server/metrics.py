"""`GET /metrics` (S6.F): what monitoring scrapes, in Prometheus text format (prometheus-client).

The run, attempt, queue, gate and purge families are read from the Engine DB at each scrape with one
grouped query per family, so every server (and a restarted one) reports the same numbers and nothing
is lost with a process. Engine DB statement latency (through SQLAlchemy's cursor events on this
process's engines) and admission latency (timed by the overseer) are histograms of this process.
Worker families (slots, children, active workers) wait for the cluster.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import OWNED_ATTEMPT, AttemptStatus
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t

# Until pools exist (the cluster), every attempt waits in the server's one local pool for a task slot.
LOCAL_POOL, TASK_SLOT = "local", "task"

STATEMENT_SECONDS = Histogram(
    "etl_craft_engine_db_statement_seconds",
    "Time of each Engine DB statement this process ran, from execute to result",
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
    registry=None,
)


ADMISSION_SECONDS = Histogram(
    "etl_craft_admission_seconds",
    "From a run's creation (QUEUED) to its admission (IN-PROGRESS) by this server, gates included",
    buckets=(0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0, 1800.0, 3600.0),
    registry=None,
)


def observe_admission(created: datetime) -> None:
    ADMISSION_SECONDS.observe(max(0.0, (utc_now() - created).total_seconds()))


def observe_statements(engine: sa.Engine) -> None:
    """Time every statement `engine` runs into STATEMENT_SECONDS."""

    def before(conn: sa.Connection, _cursor: Any, _statement: str, _params: Any, context: Any, _many: bool) -> None:
        context._etl_craft_started = time.perf_counter()

    def after(conn: sa.Connection, _cursor: Any, _statement: str, _params: Any, context: Any, _many: bool) -> None:
        started = getattr(context, "_etl_craft_started", None)
        if started is not None:
            STATEMENT_SECONDS.observe(time.perf_counter() - started)

    sa.event.listen(engine, "before_cursor_execute", before)
    sa.event.listen(engine, "after_cursor_execute", after)


class EngineDbCollector(Collector):
    """The families read from the Engine DB, one read transaction per scrape."""

    def __init__(self, db: EngineDb) -> None:
        self.db = db

    def collect(self) -> Iterator[Metric]:
        runs, pipes, attempts = t.aud_pipelines_run_log, t.cfg_pipelines, t.aud_task_attempts
        now = utc_now()
        with self.db.read() as conn:
            run_counts = conn.execute(
                sa.select(pipes.c.pipeline_code, runs.c.status, sa.func.count())
                .join(pipes, pipes.c.pipeline_id == runs.c.pipeline_id)
                .group_by(pipes.c.pipeline_code, runs.c.status)
            ).all()
            attempt_counts = dict(
                conn.execute(sa.select(attempts.c.status, sa.func.count()).group_by(attempts.c.status)).tuples().all()
            )
            retries = conn.execute(
                sa.select(sa.func.count()).select_from(attempts).where(attempts.c.attempt_number > 1)
            ).scalar_one()
            oldest_queued = conn.execute(
                sa.select(sa.func.min(attempts.c.queued_at)).where(attempts.c.status == AttemptStatus.QUEUED.value)
            ).scalar_one()
            expired = conn.execute(
                sa.select(sa.func.count())
                .select_from(attempts)
                .where(attempts.c.status.in_([s.value for s in OWNED_ATTEMPT]), attempts.c.lease_expires_at < now)
            ).scalar_one()
            gate_waits = conn.execute(sa.select(sa.func.count()).select_from(t.aud_gate_waits)).scalar_one()
            heartbeat = conn.execute(
                sa.select(sa.func.max(t.aud_overseers.c.heartbeat_at)).where(t.aud_overseers.c.stopped_at.is_(None))
            ).scalar_one()
            last_purge = conn.execute(
                sa.select(t.aud_actions.c.arguments, t.aud_actions.c.ended_at)
                .where(t.aud_actions.c.command == "purge")
                .order_by(t.aud_actions.c.action_id.desc())
                .limit(1)
            ).first()

        family = GaugeMetricFamily(
            "etl_craft_runs", "Runs the Engine DB holds, by pipeline and status", labels=["pipeline", "status"]
        )
        for code, status, count in run_counts:
            family.add_metric([code, status], count)
        yield family
        family = GaugeMetricFamily("etl_craft_attempts", "Attempts the Engine DB holds, by status", labels=["status"])
        for status in AttemptStatus:
            family.add_metric([status.value], attempt_counts.get(status.value, 0))
        yield family
        yield GaugeMetricFamily(
            "etl_craft_lost_attempts", "Attempts fenced as LOST (their owner stopped renewing the lease)",
            value=attempt_counts.get(AttemptStatus.LOST.value, 0),
        )  # fmt: skip
        yield GaugeMetricFamily("etl_craft_retries", "Attempts after a task's first (retries)", value=retries)
        family = GaugeMetricFamily("etl_craft_queue_depth", "Queued attempts", labels=["pool", "slot_kind"])
        family.add_metric([LOCAL_POOL, TASK_SLOT], attempt_counts.get(AttemptStatus.QUEUED.value, 0))
        yield family
        family = GaugeMetricFamily(
            "etl_craft_queue_oldest_age_seconds", "Age of the oldest queued attempt (0: none queued)",
            labels=["pool", "slot_kind"],
        )  # fmt: skip
        age = 0.0 if oldest_queued is None else max(0.0, (now - oldest_queued).total_seconds())
        family.add_metric([LOCAL_POOL, TASK_SLOT], age)
        yield family
        yield GaugeMetricFamily(
            "etl_craft_expired_leases", "Claimed or running attempts whose lease expired (reconcile makes them LOST)",
            value=expired,
        )  # fmt: skip
        yield GaugeMetricFamily("etl_craft_gate_waits", "Runs and tasks waiting on a dependency gate", value=gate_waits)
        yield GaugeMetricFamily(
            "etl_craft_overseer_heartbeat_timestamp_seconds",
            "Unix time of the leading overseer's last heartbeat (0: no overseer running)",
            value=0.0 if heartbeat is None else heartbeat.timestamp(),
        )
        family = GaugeMetricFamily(
            "etl_craft_purge_removed_rows", "Rows the last purge removed, by table", labels=["table"]
        )
        for table, count in (last_purge.arguments["removed"] if last_purge is not None else {}).items():
            family.add_metric([table], count)
        yield family
        yield GaugeMetricFamily(
            "etl_craft_purge_last_timestamp_seconds", "Unix time the last purge ended (0: never)",
            value=0.0 if last_purge is None else last_purge.ended_at.timestamp(),
        )  # fmt: skip


def metrics_registry(db: EngineDb) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(EngineDbCollector(db))
    registry.register(STATEMENT_SECONDS)
    registry.register(ADMISSION_SECONDS)
    return registry
