"""Alert channels (S7.D): webhooks told about failed runs, SLA breaches, lost attempts and long gate waits.

`announce` is the one entry point. It returns at once: the document is built and POSTed from a
background thread, retried with backoff, and every outcome is recorded in AUD_ALERT_DELIVERIES. A
delivery never changes a run, and its failure is only logged and recorded. The threads are not
daemons, so a command that ends right after a run waits for its alerts before the process exits.
The documents and the POST itself are in webhooks.py.
"""

from __future__ import annotations

import contextvars
import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from etl_craft import __version__
from etl_craft.config.model import ConnectorConfig, Webhook
from etl_craft.core.clock import utc_now
from etl_craft.core.enums import AlertEvent
from etl_craft.core.redaction import SecretMask
from etl_craft.engine import reads
from etl_craft.engine.database import EngineDb
from etl_craft.engine.records import alert_deliveries
from etl_craft.execution.alert_channels.webhooks import SIGNATURE_HEADER, Facts, Outcome, body_of, post, signature

log = logging.getLogger("etl_craft.alerts")

GateWaitHook = Callable[[datetime, str], None]

_threads: list[threading.Thread] = []
_told_gate_waits: set[tuple[str, int]] = set()  # (Engine DB, run) gate waits this process announced
_lock = threading.Lock()


def _gather(
    db: EngineDb,
    event: AlertEvent,
    pipeline_code: str,
    run_id: int | None,
    attempt_id: int | None,
    task_code: str | None,
    error: str | None,
) -> Facts | None:
    with db.read() as conn:
        attempt_number = None
        if attempt_id is not None:
            attempt = reads.attempt(conn, attempt_id)
            task_run = reads.task_run(conn, attempt.task_run_id) if attempt else None
            if attempt is None or task_run is None:
                return None
            attempt_number = attempt.attempt_number
            run_id = task_run.pipeline_run_id
            task = reads.task(conn, task_run.task_id)
            task_code = task.task_code if task else task_code
        if run_id is None:
            return None
        run = reads.run(conn, run_id)
        if run is None:
            return None
        failed: tuple[dict[str, Any], ...] = ()
        if event is AlertEvent.RUN_FAILED:
            task_runs = [r for r in reads.task_runs_of(conn, run_id).values() if r.status in ("FAILED", "CANCELLED")]
            codes = reads.task_codes(conn, [r.task_id for r in task_runs])
            failed = tuple(
                {"task_code": codes[r.task_id][1], "status": r.status, "error": r.error_message}
                for r in sorted(task_runs, key=lambda r: r.task_run_id)
                if r.task_id in codes
            )
            error = error or next((t["error"] for t in failed if t["error"]), None)
    return Facts(
        event=event,
        pipeline_code=pipeline_code,
        run_id=run_id,
        run_key=run.run_key,
        run_status=run.status,
        sla_status=run.sla_status,
        run_date=run.run_date.isoformat() if run.run_date else None,
        task_code=task_code,
        attempt_id=attempt_id,
        attempt_number=attempt_number,
        error=error,
        tasks=failed,
    )


def _deliver(db: EngineDb, config: ConnectorConfig, hooks: list[Webhook], request: dict[str, Any]) -> None:
    event: AlertEvent = request["event"]
    try:
        facts = _gather(db, **request)
        if facts is None:
            log.warning("alert %s not sent: its run or attempt is not in the Engine DB", event.value)
            return
        if event is AlertEvent.GATE_WAITING:
            with db.read() as conn:
                told = alert_deliveries.channels_told(conn, facts.run_id, event.value)
            hooks = [h for h in hooks if f"webhook:{h.name}" not in told]
        mask = SecretMask(config.resolved_secrets())
    except Exception:
        log.warning("alert %s not sent: its facts could not be read", event.value, exc_info=True)
        return
    for hook in hooks:
        now = utc_now()
        body = body_of(hook, facts, mask, now)
        headers = {
            "Content-Type": "application/json",
            "User-Agent": f"etl-craft/{__version__}",
            "X-Etl-Craft-Event": event.value,
            "X-Etl-Craft-Delivery": str(uuid.uuid4()),  # the same on every try: receivers can drop repeats
        }
        try:
            if hook.secret_var:
                headers[SIGNATURE_HEADER] = signature(config.secret(hook.secret_var), body)
            outcome = post(config.secret(hook.url_var), body, headers)
        except Exception as unexpected:  # a delivery never breaks anything else
            outcome = Outcome("FAILED", 1, None, f"{type(unexpected).__name__}: {unexpected}")
        channel = f"webhook:{hook.name}"
        if outcome.status == "DELIVERED":
            log.info("alert %s for %s delivered to %s", event.value, facts.pipeline_code, channel)
        else:
            log.warning("alert %s to %s failed after %s tries: %s", event.value, channel, outcome.tries, outcome.error)
        record = alert_deliveries.Delivery(
            pipeline_run_id=facts.run_id,
            attempt_id=facts.attempt_id,
            channel=channel,
            event=event.value,
            status=outcome.status,
            tries=outcome.tries,
            http_status=outcome.http_status,
            error_message=mask.redact(outcome.error) if outcome.error else None,
        )
        try:
            with db.write() as conn:
                alert_deliveries.record_delivery(conn, record, utc_now())
        except Exception:
            log.warning("the delivery of alert %s to %s was not recorded", event.value, channel, exc_info=True)


def announce(
    db: EngineDb,
    config: ConnectorConfig,
    event: AlertEvent,
    *,
    pipeline_code: str,
    run_id: int | None = None,
    attempt_id: int | None = None,
    task_code: str | None = None,
    error: str | None = None,
) -> None:
    """Tell every webhook that wants `event` for this pipeline, from a background thread.

    Give the run (or, for a lost attempt, the attempt: its run is read from it). Returns at once;
    does nothing when no channel wants the event.
    """
    hooks = [h for h in config.orchestration.alerts.webhooks if h.wants(event.value, pipeline_code)]
    if not hooks:
        return
    request = {
        "event": event,
        "pipeline_code": pipeline_code,
        "run_id": run_id,
        "attempt_id": attempt_id,
        "task_code": task_code,
        "error": error,
    }
    context = contextvars.copy_context()  # the acting identity goes with the delivery's Engine DB write
    thread = threading.Thread(
        target=context.run, args=(_deliver, db, config, hooks, request), name=f"etl-craft-alert-{event.value}"
    )
    with _lock:
        _threads[:] = [t for t in _threads if t.is_alive()]
        _threads.append(thread)
    thread.start()


def announce_gate_wait(
    db: EngineDb,
    config: ConnectorConfig,
    *,
    pipeline_code: str,
    run_id: int,
    waiting_since: datetime | None,
    task_code: str | None = None,
    waiting_for: str = "",
) -> None:
    """Announce a gate wait once it passes Orchestration.Alerts.Gate_wait_alert_minutes: once per run
    and channel (this process remembers it; the deliveries table covers a restart)."""
    alerts = config.orchestration.alerts
    key = (db.display_url, run_id)
    if waiting_since is None or not alerts.webhooks or key in _told_gate_waits:
        return
    waited = utc_now() - waiting_since
    if waited < timedelta(minutes=alerts.gate_wait_alert_minutes):
        return
    with _lock:
        if key in _told_gate_waits:
            return
        _told_gate_waits.add(key)
    minutes = int(waited.total_seconds() // 60)
    detail = f"waited {minutes} minute(s) so far" + (f"; {waiting_for}" if waiting_for else "")
    announce(
        db,
        config,
        AlertEvent.GATE_WAITING,
        pipeline_code=pipeline_code,
        run_id=run_id,
        task_code=task_code,
        error=detail,
    )


@dataclass(frozen=True)
class RunAlerts:
    """`announce` bound to one run, so each of a supervisor's hooks is one line."""

    db: EngineDb
    config: ConnectorConfig
    pipeline_code: str
    run_id: int

    def __call__(self, event: AlertEvent, *, attempt_id: int | None = None, error: str | None = None) -> None:
        # A lost attempt may belong to an older run of the pipeline: its run is read from the attempt.
        run_id = None if attempt_id is not None else self.run_id
        announce(
            self.db,
            self.config,
            event,
            pipeline_code=self.pipeline_code,
            run_id=run_id,
            attempt_id=attempt_id,
            error=error,
        )

    def gate_waiting(self, task_code: str | None, since: datetime | None, waiting_for: str = "") -> None:
        announce_gate_wait(
            self.db,
            self.config,
            pipeline_code=self.pipeline_code,
            run_id=self.run_id,
            task_code=task_code,
            waiting_since=since,
            waiting_for=waiting_for,
        )


def gate_wait_hook(db: EngineDb, config: ConnectorConfig, pipeline_code: str, run_id: int) -> GateWaitHook:
    """For a run's pipeline gates: called with when the wait began and what the run waits for."""
    run_alerts = RunAlerts(db, config, pipeline_code, run_id)
    return lambda since, waiting_for: run_alerts.gate_waiting(None, since, waiting_for)


def drain(timeout: float) -> bool:
    """Wait for the deliveries in flight; False when some are still running after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    with _lock:
        pending = list(_threads)
    for thread in pending:
        thread.join(max(0.0, deadline - time.monotonic()))
    return not any(t.is_alive() for t in pending)
