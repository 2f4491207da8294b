"""Alert channels (S7.D): a real HTTP receiver that verifies the HMAC of every delivery, through the real CLI."""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta

import pytest

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import AlertEvent
from etl_craft.engine.schema import tables as t
from etl_craft.execution.alert_channels import notify, webhooks
from tests.fixtures.harness import Harness, TaskSpec, cross_dependency, pipeline_dependency, pipeline_sql

KEY = "hmac-key-for-tests-91x"


def use_webhooks(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, url: str, extra: str = "", minutes: int = 30
) -> None:
    monkeypatch.setenv("WEBHOOK_URL", url)
    monkeypatch.setenv("WEBHOOK_KEY", KEY)
    harness.project.orchestration = (
        "  Mode: local\n"
        "  Gate_wait_minutes: 1\n"  # a short budget: a waiting gate looks again every few seconds
        "  Alerts:\n"
        f"    Gate_wait_alert_minutes: {minutes}\n"
        "    Webhooks:\n"
        "      - name: ops\n"
        "        url: WEBHOOK_URL\n"
        "        secret: WEBHOOK_KEY\n" + extra
    )
    harness.project.write_config()


def deliveries(harness: Harness) -> list:
    return harness.rows(t.aud_alert_deliveries, order_by=t.aud_alert_deliveries.c.alert_delivery_id)


def test_a_failed_run_is_posted_signed_and_retried_after_a_500(harness: Harness, start_receiver, monkeypatch):
    receiver = start_receiver(KEY, answers=[500])
    use_webhooks(harness, monkeypatch, receiver.url)
    harness.pipeline("sales", [TaskSpec("load", {"fail": "warehouse unreachable"}), TaskSpec("other")])
    result = harness.cli("run", "--pipeline_code", "sales")
    assert result.returncode == 1, str(result)
    run = harness.runs()[-1]
    # The command waited for its alert: both tries happened before it exited.
    assert len(receiver.deliveries) == 2
    assert all(d.valid_signature for d in receiver.deliveries)
    first, second = receiver.deliveries
    assert first.body == second.body
    assert first.headers["X-Etl-Craft-Delivery"] == second.headers["X-Etl-Craft-Delivery"]
    assert first.headers["X-Etl-Craft-Event"] == "run_failed"
    assert (
        first.headers["X-Etl-Craft-Signature"]
        == "sha256=" + hmac.new(KEY.encode(), first.body, hashlib.sha256).hexdigest()
    )
    doc = first.json
    assert doc["schema"] == "etl-craft/alert/1"
    assert doc["event"] == "run_failed"
    assert doc["pipeline"] == {"pipeline_code": "sales"}
    assert doc["run"]["pipeline_run_id"] == run.pipeline_run_id
    assert doc["run"]["run_key"] == run.run_key
    assert doc["run"]["status"] == "FAILED"
    load_error = harness.task_runs()["load"].error_message
    assert doc["failed_tasks"] == [{"task_code": "load", "status": "FAILED", "error": load_error}]
    assert doc["error"] == "1 task(s) did not succeed: load (FAILED)"
    assert doc["links"]["status"] == f"etl-craft status --pipeline_code sales --run-id {run.pipeline_run_id}"
    [row] = deliveries(harness)
    assert (row.pipeline_run_id, row.attempt_id, row.channel, row.event) == (
        run.pipeline_run_id,
        None,
        "webhook:ops",
        "run_failed",
    )
    assert (row.status, row.tries, row.http_status, row.error_message) == ("DELIVERED", 2, 200, None)
    assert "T0KEN-in-path" not in result.stdout + result.stderr  # the URL carries a token: never logged


def test_a_refused_delivery_is_recorded_failed_and_changes_nothing(harness: Harness, start_receiver, monkeypatch):
    receiver = start_receiver(KEY, answers=[403])
    use_webhooks(harness, monkeypatch, receiver.url)
    harness.pipeline("sales", [TaskSpec("load", {"fail": "boom"})])
    result = harness.cli("run", "--pipeline_code", "sales")
    assert result.returncode == 1
    assert harness.runs()[-1].status == "FAILED"
    assert len(receiver.deliveries) == 1  # a 4xx other than 408/425/429 is not retried
    [row] = deliveries(harness)
    assert (row.status, row.tries, row.http_status) == ("FAILED", 1, 403)
    assert row.error_message == "127.0.0.1 answered HTTP 403 Forbidden"
    assert (
        "alert run_failed to webhook:ops failed after 1 tries: 127.0.0.1 answered HTTP 403 Forbidden" in result.stderr
    )


def test_a_successful_run_and_other_pipelines_are_not_announced(harness: Harness, start_receiver, monkeypatch):
    receiver = start_receiver(KEY)
    use_webhooks(harness, monkeypatch, receiver.url, extra="        pipelines: [other]\n")
    harness.pipeline("ok", [TaskSpec("load")])
    harness.pipeline("sales", [TaskSpec("load", {"fail": "boom"})])
    assert harness.cli("run", "--pipeline_code", "ok").returncode == 0
    assert harness.cli("run", "--pipeline_code", "sales").returncode == 1
    assert receiver.deliveries == []
    assert deliveries(harness) == []


def test_the_slack_shape_is_one_text(harness: Harness, start_receiver, monkeypatch):
    receiver = start_receiver(KEY)
    use_webhooks(harness, monkeypatch, receiver.url, extra="        format: slack\n")
    harness.pipeline("sales", [TaskSpec("load", {"fail": "boom"})])
    harness.cli("run", "--pipeline_code", "sales")
    run_id = harness.runs()[-1].pipeline_run_id
    [delivery] = receiver.deliveries
    assert delivery.valid_signature
    assert list(delivery.json) == ["text"]
    text = delivery.json["text"]
    assert text.startswith(f"sales: pipeline_run_id={run_id} run FAILED: 1 task(s) did not succeed: load (FAILED)\n")
    assert "• load FAILED: ingestion script task.py: found RuntimeError raised in run: boom" in text
    assert f"`etl-craft status --pipeline_code sales --run-id {run_id}`" in text


def test_an_sla_breach_is_announced_once_while_the_run_goes_on(harness: Harness, start_receiver, monkeypatch):
    receiver = start_receiver(KEY)
    use_webhooks(harness, monkeypatch, receiver.url, extra="        events: [sla_breached]\n")
    harness.migrate(pipeline_sql("slow", [TaskSpec("wait", {"sleep": 3})], [], sla_hours="0.0002"))
    assert harness.cli("run", "--pipeline_code", "slow").returncode == 0
    run = harness.runs()[-1]
    assert (run.status, run.sla_status) == ("SUCCESS", "BREACHED")
    [delivery] = receiver.deliveries
    assert delivery.json["event"] == "sla_breached"
    assert delivery.json["run"]["sla_status"] == "BREACHED"
    assert [(r.event, r.status) for r in deliveries(harness)] == [("sla_breached", "DELIVERED")]


HELD_SCRIPT = """\
import time
from pathlib import Path

from etl_craft.scripting import ScriptResult


def run(task):
    release = Path(task.input_params["release"])
    deadline = time.monotonic() + 120
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    return ScriptResult(row_count=1)
"""


@pytest.mark.parametrize("gate", ["task", "pipeline"])
def test_a_gate_waiting_past_the_threshold_is_announced_once(harness: Harness, start_receiver, monkeypatch, gate):
    receiver = start_receiver(KEY)
    use_webhooks(harness, monkeypatch, receiver.url, minutes=0)
    release = harness.root / "release-upstream"
    (harness.root / "ingestion_scripts" / "held.py").write_text(HELD_SCRIPT)
    harness.pipeline("up", [TaskSpec("load", {"release": str(release)}, parameters={"SCRIPT_NAME": "held.py"})])
    harness.pipeline("down", [TaskSpec("use")])
    harness.migrate(
        cross_dependency("down", "use", "up", "load") if gate == "task" else pipeline_dependency("down", "up")
    )
    upstream = harness.start("run", "--pipeline_code", "up")
    harness.wait_for_attempt("load")
    downstream = harness.start("run", "--pipeline_code", "down")
    # The upstream runs until the alert about the downstream's wait has been recorded.
    harness.wait_until(lambda: deliveries(harness), timeout=120, what="a gate_waiting delivery")
    release.write_text("go")
    assert upstream.wait().returncode == 0
    result = downstream.wait()
    assert result.returncode == 0, str(result)
    down = next(r for r in harness.runs() if r.pipeline_id != harness.runs()[0].pipeline_id)
    waits = [d for d in receiver.deliveries if d.json["event"] == "gate_waiting"]
    assert len(waits) == 1 and waits[0].valid_signature
    doc = waits[0].json
    assert doc["run"]["pipeline_run_id"] == down.pipeline_run_id
    assert doc["task"] == ({"task_code": "use", "attempt_id": None, "attempt_number": None} if gate == "task" else None)
    assert doc["error"].startswith("waited 0 minute(s) so far; waiting for up")
    assert [(r.pipeline_run_id, r.event) for r in deliveries(harness)] == [(down.pipeline_run_id, "gate_waiting")]


def test_lost_attempts_and_gate_waits_through_the_one_entry_point(harness: Harness, start_receiver, monkeypatch):
    """announce() as the supervisor calls it: a LOST attempt is read back from the attempt itself."""
    receiver = start_receiver(KEY)
    use_webhooks(harness, monkeypatch, receiver.url)
    harness.pipeline("p", [TaskSpec("load")])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    attempt = harness.attempts("load")[0]
    run_id = harness.runs()[-1].pipeline_run_id
    config = harness.project.load()
    run_alerts = notify.RunAlerts(harness.db, config, "p", run_id + 1000)  # another run: the attempt says which
    run_alerts(AlertEvent.ATTEMPT_LOST, attempt_id=attempt.attempt_id, error="attempt 1 was lost: owner x stopped")
    gates = notify.RunAlerts(harness.db, config, "p", run_id)
    gates.gate_waiting("load", utc_now() - timedelta(minutes=5), "waiting for up.load")  # under 30 minutes
    gates.gate_waiting("load", utc_now() - timedelta(minutes=31), "waiting for up.load")
    gates.gate_waiting("load", utc_now() - timedelta(minutes=45), "waiting for up.load")  # told once per run
    assert notify.drain(30)
    docs = sorted((d.json for d in receiver.deliveries), key=lambda d: d["event"])
    assert [d["event"] for d in docs] == ["attempt_lost", "gate_waiting"]
    lost, waiting = docs
    assert lost["task"] == {"task_code": "load", "attempt_id": attempt.attempt_id, "attempt_number": 1}
    assert lost["run"]["pipeline_run_id"] == run_id
    assert lost["error"] == "attempt 1 was lost: owner x stopped"
    assert lost["links"]["explain"] == f"etl-craft explain --pipeline_code p --task_code load --run-id {run_id}"
    assert waiting["error"] == "waited 31 minute(s) so far; waiting for up.load"
    rows = sorted((r.event, r.attempt_id, r.pipeline_run_id, r.status) for r in deliveries(harness))
    assert rows == [
        ("attempt_lost", attempt.attempt_id, run_id, "DELIVERED"),
        ("gate_waiting", None, run_id, "DELIVERED"),
    ]


def test_delivery_rows_are_append_only(harness: Harness, start_receiver, monkeypatch):
    receiver = start_receiver(KEY)
    use_webhooks(harness, monkeypatch, receiver.url)
    harness.pipeline("sales", [TaskSpec("load", {"fail": "boom"})])
    harness.cli("run", "--pipeline_code", "sales")
    with pytest.raises(Exception, match="AUD_ALERT_DELIVERIES is append-only"), harness.db.write() as conn:
        conn.execute(t.aud_alert_deliveries.update().values(status="FAILED"))
    assert [r.status for r in deliveries(harness)] == ["DELIVERED"]


def test_post_tries_four_times_then_gives_up_and_never_follows_a_redirect(start_receiver):
    receiver = start_receiver(KEY, answers=[500, 503, 502, 500, 302])
    outcome = webhooks.post(receiver.url, b"{}", {"Content-Type": "application/json"}, delays=(0, 0, 0))
    assert outcome == webhooks.Outcome("FAILED", 4, 500, "127.0.0.1 answered HTTP 500 Internal Server Error")
    assert len(receiver.deliveries) == 4
    redirected = webhooks.post(receiver.url, b"{}", {}, delays=(0, 0, 0))
    assert (redirected.status, redirected.tries, redirected.http_status) == ("FAILED", 1, 302)
    assert len(receiver.deliveries) == 5


def test_post_names_the_host_it_could_not_reach_without_the_url():
    from tests.fixtures.relays import free_port

    url = f"http://127.0.0.1:{free_port()}/hooks/T0KEN"
    outcome = webhooks.post(url, b"{}", {}, delays=(0, 0, 0))
    assert (outcome.status, outcome.tries, outcome.http_status) == ("FAILED", 4, None)
    assert outcome.error is not None and outcome.error.startswith("could not reach 127.0.0.1: ")
    assert "T0KEN" not in outcome.error
