"""Webhook deliveries: the documents (generic JSON or Slack's shape), their HMAC signature, the POST.

Plain urllib is enough for one POST with a timeout: HTTPS certificates are verified by Python's
default context, proxy variables are honoured, and the engine keeps no HTTP client library that
would log URLs. Nothing here shows a webhook's URL, since URLs carry their token.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from etl_craft.config.model import Webhook
from etl_craft.core.enums import AlertEvent
from etl_craft.core.redaction import SecretMask
from etl_craft.core.text import one_line

SCHEMA = "etl-craft/alert/1"
SIGNATURE_HEADER = "X-Etl-Craft-Signature"
RETRY_DELAYS_SECONDS: Sequence[float] = (1.0, 2.0, 4.0)  # between the tries: four tries in all
TIMEOUT_SECONDS = 5.0
_RETRIED_STATUSES = frozenset({408, 425, 429})


@dataclass(frozen=True)
class Outcome:
    status: str  # DELIVERED | FAILED
    tries: int
    http_status: int | None = None
    error: str | None = None


@dataclass(frozen=True)
class Facts:
    """What a document says, read from the Engine DB by the delivering thread."""

    event: AlertEvent
    pipeline_code: str
    run_id: int
    run_key: str | None = None
    run_status: str | None = None
    sla_status: str | None = None
    run_date: str | None = None
    task_code: str | None = None
    attempt_id: int | None = None
    attempt_number: int | None = None
    error: str | None = None
    tasks: tuple[dict[str, Any], ...] = field(default_factory=tuple)


_SUMMARIES = {
    AlertEvent.RUN_FAILED: "run FAILED",
    AlertEvent.SLA_BREACHED: "run breached its SLA",
    AlertEvent.ATTEMPT_LOST: "attempt LOST",
    AlertEvent.GATE_WAITING: "waiting for another pipeline",
}


def summary(facts: Facts) -> str:
    where = f"{facts.pipeline_code}.{facts.task_code}" if facts.task_code else facts.pipeline_code
    text = f"{where}: pipeline_run_id={facts.run_id} {_SUMMARIES[facts.event]}"
    if facts.error:
        text += f": {one_line(facts.error, 300)}"
    return text


def links(facts: Facts) -> dict[str, str]:
    """Commands that show more, for an operator reading the alert."""
    found = {
        "status": f"etl-craft status --pipeline_code {facts.pipeline_code} --run-id {facts.run_id}",
        "history": f"etl-craft history --pipeline_code {facts.pipeline_code}",
    }
    if facts.task_code:
        found["explain"] = (
            f"etl-craft explain --pipeline_code {facts.pipeline_code} --task_code {facts.task_code} "
            f"--run-id {facts.run_id}"
        )
    return found


def document(facts: Facts, now: datetime) -> dict[str, Any]:
    """The generic JSON document (schema etl-craft/alert/1)."""
    task = None
    if facts.task_code:
        task = {"task_code": facts.task_code, "attempt_id": facts.attempt_id, "attempt_number": facts.attempt_number}
    return {
        "schema": SCHEMA,
        "event": facts.event.value,
        "summary": summary(facts),
        "pipeline": {"pipeline_code": facts.pipeline_code},
        "run": {
            "pipeline_run_id": facts.run_id,
            "run_key": facts.run_key,
            "status": facts.run_status,
            "sla_status": facts.sla_status,
            "run_date": facts.run_date,
        },
        "task": task,
        "error": facts.error,
        "failed_tasks": list(facts.tasks),
        "links": links(facts),
        "sent_at": now.isoformat(),
    }


def slack_document(facts: Facts) -> dict[str, Any]:
    """Slack's incoming-webhook shape: one text with the summary and the commands to look further."""
    lines = [summary(facts)]
    lines += [f"• {t['task_code']} {t['status']}: {one_line(t['error'] or '', 300)}" for t in facts.tasks]
    lines += [f"`{command}`" for command in links(facts).values()]
    return {"text": "\n".join(lines)}


def body_of(hook: Webhook, facts: Facts, mask: SecretMask, now: datetime) -> bytes:
    doc = slack_document(facts) if hook.format == "slack" else document(facts, now)
    return mask.redact(json.dumps(doc, default=str, ensure_ascii=False)).encode("utf-8")


def signature(key: str, body: bytes) -> str:
    """`sha256=<hex HMAC-SHA256 of the body>`, the value of X-Etl-Craft-Signature."""
    return "sha256=" + hmac.new(key.encode("utf-8"), body, hashlib.sha256).hexdigest()


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect answers the POST as an error: urllib would follow it with a GET and drop the body."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirects)


def post(
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    delays: Sequence[float] = RETRY_DELAYS_SECONDS,
    timeout: float = TIMEOUT_SECONDS,
) -> Outcome:
    """POST until a 2xx answer; retries after network errors, 5xx, 408, 425 and 429, with the delays
    between tries. An error never shows the URL (webhook URLs carry their token)."""
    host = urlsplit(url).hostname or "the webhook"
    tries, status, error = 0, None, None
    for delay in (*delays, None):
        tries += 1
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        retry = True
        try:
            with _OPENER.open(request, timeout=timeout) as answer:
                status = answer.status
            if 200 <= status < 300:
                return Outcome("DELIVERED", tries, status)
            error = f"{host} answered HTTP {status}"
        except urllib.error.HTTPError as refused:
            status = refused.code
            error = f"{host} answered HTTP {refused.code} {refused.reason}"
            retry = refused.code >= 500 or refused.code in _RETRIED_STATUSES
        except (urllib.error.URLError, OSError) as failed:
            status = None
            reason = getattr(failed, "reason", failed)
            error = f"could not reach {host}: {reason}"
        if not retry or delay is None:
            break
        time.sleep(delay)
    return Outcome("FAILED", tries, status, error)
