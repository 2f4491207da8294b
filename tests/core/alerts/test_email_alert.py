"""EMAIL_ALERT through the real CLI and a real local relay (aiosmtpd) with certificates made in the test."""

from __future__ import annotations

import email
from email import policy
from pathlib import Path

import pytest

from etl_craft.core.text import one_line
from tests.fixtures.harness import Harness, TaskSpec
from tests.fixtures.relays import RELAY_PASSWORD, RELAY_USER


@pytest.fixture(autouse=True)
def _smtp_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTP_SECRET", RELAY_PASSWORD)


def use_relay(harness: Harness, section: str) -> None:
    harness.project.orchestration = "  Mode: local\n" + section
    harness.project.write_config()


def failing_pipeline(harness: Harness, alert: dict[str, str], dependency: str = "ALWAYS", code: str = "sales") -> None:
    harness.pipeline(
        code,
        [
            TaskSpec("load", {"fail": "connection to warehouse lost"}),
            TaskSpec("other", {"rows": 3}),
            TaskSpec("notify", handler="EMAIL_ALERT", parameters=alert),
        ],
        [("notify", "load", dependency), ("notify", "other", "ALWAYS")],
    )


def task_log(harness: Harness, code: str = "notify") -> str:
    return str(harness.task_runs()[code].task_log or "")


def test_starttls_with_ca_file_delivers_a_multi_line_error_as_one_safe_subject_line(harness: Harness, start_relay):
    relay = start_relay("starttls")
    use_relay(harness, relay.email_section("starttls"))
    harness.pipeline(
        "sales",
        [
            TaskSpec("load", {"fail": "connection to warehouse lost"}),
            TaskSpec("load2", {"fail": "disk full"}),
            TaskSpec(
                "notify",
                handler="EMAIL_ALERT",
                parameters={
                    "EMAIL_TO": "data@example.com",
                    # A template with line breaks and a tab, and $$error_message holding one line per task.
                    "EMAIL_SUBJECT": "[$$pipeline_code] run $$pipeline_id\r\n$$status:\t$$error_message",
                    "EMAIL_BODY": "Alert $$task_code reports $$status.\n\n$$error_message",
                },
            ),
        ],
        [("notify", "load", "ALWAYS"), ("notify", "load2", "ALWAYS")],
    )
    result = harness.cli("run", "--pipeline_code", "sales")
    assert result.returncode == 1, str(result)  # the data tasks failed: the run is FAILED
    run_id = harness.runs()[-1].pipeline_run_id
    tasks = harness.task_runs()
    errors = f"load: {tasks['load'].error_message}\nload2: {tasks['load2'].error_message}"
    assert len(relay.received) == 1
    mail = relay.received[0]
    assert mail.recipients == ["data@example.com"]
    assert mail.sender == "etl@example.com"
    assert relay.mailbox.logins == [RELAY_USER]
    assert mail.subject == one_line(f"[sales] run {run_id} FAILED: {errors}", 200)
    assert mail.subject.startswith(f"[sales] run {run_id} FAILED: load: ingestion script task.py: found RuntimeError")
    assert len(mail.subject) == 200 and mail.subject.endswith("…")
    assert not any(ch in mail.subject for ch in "\r\n\t")
    assert str(mail.message["From"]) == "etl-craft alerts <etl@example.com>"
    body = mail.body
    assert body.startswith(f"Alert notify reports FAILED.\n\n{errors}\n")  # the body keeps every error in full
    assert "- load failed\n- load2 failed\n" in body
    assert f"etl-craft status --pipeline_code sales --run-id {run_id}" in body
    notify = tasks["notify"]
    assert notify.status == "SUCCESS"
    assert "EMAIL_OUTCOME = FAILED" in notify.task_log
    assert f"EMAIL_SUBJECT = {mail.subject}" in notify.task_log
    assert f"EMAIL_RELAY = localhost:{relay.port} (starttls)" in notify.task_log
    assert "EMAIL_SENT_TO = data@example.com" in notify.task_log


def test_implicit_tls_with_ca_file_delivers(harness: Harness, start_relay):
    relay = start_relay("ssl")
    use_relay(harness, relay.email_section("ssl"))
    harness.pipeline(
        "p",
        [
            TaskSpec("load", {"rows": 2}),
            TaskSpec(
                "notify",
                handler="EMAIL_ALERT",
                parameters={
                    "EMAIL_TO": "a@example.com",
                    "EMAIL_SUBJECT": "$$pipeline_code $$status",
                    "EMAIL_BODY": "ok",
                },
            ),
        ],
        [("notify", "load", "ALWAYS")],
    )
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 0, str(result)
    assert [m.subject for m in relay.received] == ["p SUCCESS"]
    assert f"EMAIL_RELAY = localhost:{relay.port} (ssl)" in task_log(harness)


@pytest.mark.parametrize("tls_mode", ["starttls", "ssl"])
def test_a_certificate_for_another_host_name_is_refused(harness: Harness, start_relay, tls_mode: str):
    relay = start_relay(tls_mode, host_names=["other.example"])
    use_relay(harness, relay.email_section(tls_mode))
    harness.pipeline(
        "p",
        [
            TaskSpec("load", {"rows": 2}),
            TaskSpec(
                "notify",
                handler="EMAIL_ALERT",
                parameters={"EMAIL_TO": "a@example.com", "EMAIL_SUBJECT": "s", "EMAIL_BODY": "b"},
            ),
        ],
        [("notify", "load", "ALWAYS")],
    )
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 0, str(result)  # a failed alert does not change the run's status
    assert harness.runs()[-1].status == "SUCCESS"
    assert "ERROR etl_craft.outcome: p: pipeline_run_id=1 SUCCESS, alert task(s) that failed: notify" in result.stderr
    assert relay.received == []
    notify = harness.task_runs()["notify"]
    assert notify.status == "FAILED"
    step = "start TLS" if tls_mode == "starttls" else "connect"
    assert notify.error_message.startswith(f"email relay localhost:{relay.port} ({tls_mode}): found {step} failed: ")
    assert "certificate not trusted" in notify.error_message
    assert "localhost" in notify.error_message.split("certificate not trusted", 1)[1]  # the name it was not valid for
    assert "ca_file" in notify.error_message  # the remedy
    assert harness.task_runs()["load"].status == "SUCCESS"


def test_without_ca_file_the_system_store_does_not_trust_a_private_ca(harness: Harness, start_relay):
    relay = start_relay("starttls")
    use_relay(harness, relay.email_section("starttls", ca_file=False))
    harness.pipeline(
        "p",
        [
            TaskSpec(
                "n", handler="EMAIL_ALERT", parameters={"EMAIL_TO": "a@x.org", "EMAIL_SUBJECT": "s", "EMAIL_BODY": "b"}
            )
        ],
    )
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 1  # a pipeline of alerts only judges its alerts
    assert "start TLS failed: certificate not trusted" in harness.task_runs()["n"].error_message
    assert relay.received == []


def test_one_refused_recipient_of_three_is_a_warning_and_the_two_others_get_it(harness: Harness, start_relay):
    relay = start_relay("starttls", refuse=("gone@example.com",))
    use_relay(harness, relay.email_section("starttls"))
    harness.pipeline(
        "p",
        [
            TaskSpec("load", {"rows": 1}),
            TaskSpec(
                "notify",
                handler="EMAIL_ALERT",
                parameters={
                    "EMAIL_TO": "a@example.com|gone@example.com|b@example.com",
                    "EMAIL_SUBJECT": "$$status",
                    "EMAIL_BODY": "b",
                },
            ),
        ],
        [("notify", "load", "ALWAYS")],
    )
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 0, str(result)
    assert [m.recipients for m in relay.received] == [["a@example.com", "b@example.com"]]
    notify = harness.task_runs()["notify"]
    assert notify.status == "SUCCESS"
    warning = "the relay refused 1 of 3 recipient(s): gone@example.com (550 5.1.1 mailbox unavailable)"
    assert f"EMAIL_WARNING = {warning}" in notify.task_log
    assert f"WARNING = {warning}" in notify.task_log
    assert "EMAIL_SENT_TO = a@example.com, b@example.com" in notify.task_log
    log_file = Path(harness.attempts("notify")[0].log_path).read_text()
    assert "WARNING etl_craft.task [" in log_file and warning in log_file


def test_every_recipient_refused_fails_the_alert_without_a_retry(harness: Harness, start_relay):
    relay = start_relay("starttls", refuse=("a@example.com", "b@example.com"))
    use_relay(harness, relay.email_section("starttls"))
    harness.pipeline(
        "p",
        [
            TaskSpec("load", {"rows": 1}),
            TaskSpec(
                "notify",
                handler="EMAIL_ALERT",
                parameters={
                    "EMAIL_TO": "a@example.com|b@example.com",
                    "EMAIL_SUBJECT": "s",
                    "EMAIL_BODY": "b",
                    "RETRIES": "2",
                    "RETRY_DELAY_SECONDS": "0",
                },
            ),
        ],
        [("notify", "load", "ALWAYS")],
    )
    result = harness.cli("run", "--pipeline_code", "p")
    assert result.returncode == 0, str(result)
    attempts = harness.attempts("notify")
    assert [(a.status, a.retryable) for a in attempts] == [("FAILED", False)]
    assert attempts[0].error_message == (
        f"email relay localhost:{relay.port} (starttls): found send failed: "
        "a@example.com: 550 5.1.1 mailbox unavailable; b@example.com: 550 5.1.1 mailbox unavailable. "
        "Check the recipients (EMAIL_TO) and the sender the relay accepts"
    )
    assert relay.received == []


def test_a_wrong_password_is_reported_at_the_log_in_step(harness: Harness, start_relay, monkeypatch):
    monkeypatch.setenv("SMTP_SECRET", "not-the-password")
    relay = start_relay("starttls")
    use_relay(harness, relay.email_section("starttls"))
    harness.pipeline(
        "p",
        [
            TaskSpec(
                "n", handler="EMAIL_ALERT", parameters={"EMAIL_TO": "a@x.org", "EMAIL_SUBJECT": "s", "EMAIL_BODY": "b"}
            )
        ],
    )
    harness.cli("run", "--pipeline_code", "p")
    message = harness.task_runs()["n"].error_message
    assert message.startswith(f"email relay localhost:{relay.port} (starttls): found log in failed: 535 ")
    assert "not-the-password" not in message


def test_a_relay_that_is_down_fails_the_alert_at_connect(harness: Harness):
    from tests.fixtures.relays import free_port

    port = free_port()
    use_relay(
        harness, f"  Email:\n    host: 127.0.0.1\n    port: {port}\n    tls_mode: none\n    from_address: e@x.org\n"
    )
    failing_pipeline(harness, {"EMAIL_TO": "a@x.org", "EMAIL_SUBJECT": "s", "EMAIL_BODY": "b"})
    result = harness.cli("run", "--pipeline_code", "sales")
    assert result.returncode == 1  # because load failed, not because of the alert
    assert harness.task_runs()["other"].status == "SUCCESS"  # the outage stopped no data task
    message = harness.task_runs()["notify"].error_message
    assert message.startswith(f"email relay 127.0.0.1:{port} (none): found connect failed: ConnectionRefusedError")


def test_an_outcome_outside_email_on_status_is_not_sent_and_says_why(harness: Harness, start_relay):
    relay = start_relay("starttls")
    use_relay(harness, relay.email_section("starttls"))
    harness.pipeline(
        "p",
        [
            TaskSpec("load", {"rows": 1}),
            TaskSpec(
                "notify",
                handler="EMAIL_ALERT",
                parameters={
                    "EMAIL_TO": "a@x.org",
                    "EMAIL_SUBJECT": "s",
                    "EMAIL_BODY": "b",
                    "EMAIL_ON_STATUS": "FAILED",
                },
            ),
        ],
        [("notify", "load", "ALWAYS")],
    )
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    assert relay.received == []
    notify = harness.task_runs()["notify"]
    assert notify.status == "SUCCESS"
    assert "EMAIL_NOT_SENT = not sent: the outcome SUCCESS is not in EMAIL_ON_STATUS (FAILED)" in notify.task_log


def test_a_retried_task_gives_completed_with_errors_and_its_own_subject(harness: Harness, start_relay):
    relay = start_relay("starttls")
    use_relay(harness, relay.email_section("starttls"))
    counter = harness.root / "counter"
    harness.pipeline(
        "p",
        [
            TaskSpec(
                "flaky",
                {"fail_times": 1, "counter": str(counter)},
                parameters={"RETRIES": "1", "RETRY_DELAY_SECONDS": "0"},
            ),
            TaskSpec(
                "notify",
                handler="EMAIL_ALERT",
                parameters={
                    "EMAIL_TO": "a@x.org",
                    "EMAIL_SUBJECT": "plain $$status",
                    "EMAIL_SUBJECT_COMPLETED_WITH_ERRORS": "bumpy: $$status",
                    "EMAIL_BODY": "b",
                },
            ),
        ],
        [("notify", "flaky", "ALWAYS")],
    )
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    assert [m.subject for m in relay.received] == ["bumpy: COMPLETED_WITH_ERRORS"]
    assert "- flaky needed 2 attempts" in relay.received[0].body


def test_failure_dependencies_watch_only_those_tasks(harness: Harness, start_relay):
    relay = start_relay("starttls")
    use_relay(harness, relay.email_section("starttls"))
    harness.pipeline(
        "p",
        [
            TaskSpec("load", {"fail": "boom"}),
            TaskSpec("side", {"fail": "side failure"}),
            TaskSpec(
                "on_load_failure",
                handler="EMAIL_ALERT",
                parameters={"EMAIL_TO": "a@x.org", "EMAIL_SUBJECT": "$$error_message", "EMAIL_BODY": "b"},
            ),
        ],
        [("on_load_failure", "load", "FAILURE")],
    )
    harness.cli("run", "--pipeline_code", "p")
    assert [m.subject for m in relay.received] == [one_line(f"load: {harness.task_runs()['load'].error_message}", 200)]
    assert "side" not in relay.received[0].body.split("Look further:")[0]


def test_an_unknown_token_fails_the_task_naming_it(harness: Harness):
    harness.pipeline(
        "p",
        [
            TaskSpec("load", {"rows": 1}),
            TaskSpec(
                "notify",
                handler="EMAIL_ALERT",
                parameters={"EMAIL_TO": "a@x.org", "EMAIL_SUBJECT": "s", "EMAIL_BODY": "run $$run_id", "RETRIES": "3"},
            ),
        ],
        [("notify", "load", "ALWAYS")],
    )
    harness.cli("run", "--pipeline_code", "p")
    attempts = harness.attempts("notify")
    assert [(a.status, a.retryable) for a in attempts] == [("FAILED", False)]
    assert attempts[0].error_message.startswith("task notify: parameter EMAIL_BODY: found the token $$run_id; ")
    assert not (harness.root / "outbox").exists()


def test_without_an_email_section_the_message_goes_to_the_outbox(harness: Harness):
    failing_pipeline(
        harness,
        {
            "EMAIL_TO": "support@example.com|oncall@example.com",
            "EMAIL_SUBJECT": "[$$pipeline_code] $$status",
            "EMAIL_PIPELINES": "ALL",
        },
    )
    result = harness.cli("run", "--pipeline_code", "sales")
    assert result.returncode == 1
    run_id = harness.runs()[-1].pipeline_run_id
    path = harness.root / "outbox" / f"sales-run{run_id}-notify-attempt1.eml"
    message = email.message_from_bytes(path.read_bytes(), policy=policy.default)
    assert str(message["Subject"]) == "[sales] FAILED"
    assert str(message["To"]) == "support@example.com, oncall@example.com"
    body = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert "Latest runs:" in body and "sales (pipeline_run_id=" in body
    notify = harness.task_runs()["notify"]
    assert notify.status == "SUCCESS"
    assert f"EMAIL_OUTBOX = {path}" in notify.task_log
    log_file = Path(harness.attempts("notify")[0].log_path).read_text()
    assert (
        "no relay is configured (Orchestration has no Email section), so the message was written to the outbox"
        in log_file
    )


def test_the_run_s_id_and_date_are_tokens_of_subjects_and_bodies(harness: Harness):
    harness.pipeline(
        "sales",
        [
            TaskSpec("load", {"rows": 2}),
            TaskSpec(
                "notify",
                handler="EMAIL_ALERT",
                parameters={
                    "EMAIL_TO": "data@example.com",
                    "EMAIL_SUBJECT": "[$$pipeline_code] run $$pipeline_run_id of $$run_date: $$status",
                    "EMAIL_BODY": "Run $$pipeline_run_id ($$pipeline_id) for $$run_date ended $$status.",
                },
            ),
        ],
        [("notify", "load", "ALWAYS")],
    )
    result = harness.cli("run", "--pipeline_code", "sales", "--run-date", "2026-03-14")
    assert result.returncode == 0, result
    run_id = harness.runs()[-1].pipeline_run_id
    path = harness.root / "outbox" / f"sales-run{run_id}-notify-attempt1.eml"
    message = email.message_from_bytes(path.read_bytes(), policy=policy.default)
    assert str(message["Subject"]) == f"[sales] run {run_id} of 2026-03-14: SUCCESS"
    body = message.get_body(("plain",)).get_content()  # type: ignore[union-attr]
    assert body.startswith(f"Run {run_id} ({run_id}) for 2026-03-14 ended SUCCESS.\n")
    assert f"EMAIL_SUBJECT = [sales] run {run_id} of 2026-03-14: SUCCESS" in harness.task_runs()["notify"].task_log


def test_the_sendmail_transport_pipes_the_message_to_the_program(harness: Harness, tmp_path: Path):
    captured = tmp_path / "sendmail-input"
    program = tmp_path / "fake-sendmail"
    program.write_text(f'#!/bin/sh\necho "$@" > {captured}.args\ncat > {captured}\n')
    program.chmod(0o755)
    use_relay(harness, f"  Email:\n    transport: sendmail\n    sendmail_path: {program}\n    from_address: e@x.org\n")
    harness.pipeline(
        "p",
        [
            TaskSpec(
                "n",
                handler="EMAIL_ALERT",
                parameters={"EMAIL_TO": "a@x.org|b@x.org", "EMAIL_SUBJECT": "hi $$status", "EMAIL_BODY": "b"},
            )
        ],
    )
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    assert Path(f"{captured}.args").read_text().split() == ["-i", "-f", "e@x.org", "--", "a@x.org", "b@x.org"]
    sent = email.message_from_bytes(captured.read_bytes(), policy=policy.default)
    assert str(sent["Subject"]) == "hi SUCCESS"
    assert f"EMAIL_RELAY = sendmail {program}" in harness.task_runs()["n"].task_log


def test_a_failing_sendmail_names_its_exit_status_and_output(harness: Harness, tmp_path: Path):
    program = tmp_path / "broken-sendmail"
    program.write_text("#!/bin/sh\necho 'queue directory not writable' >&2\nexit 75\n")
    program.chmod(0o755)
    use_relay(harness, f"  Email:\n    transport: sendmail\n    sendmail_path: {program}\n    from_address: e@x.org\n")
    harness.pipeline(
        "p",
        [
            TaskSpec(
                "n", handler="EMAIL_ALERT", parameters={"EMAIL_TO": "a@x.org", "EMAIL_SUBJECT": "s", "EMAIL_BODY": "b"}
            )
        ],
    )
    harness.cli("run", "--pipeline_code", "p")
    assert harness.task_runs()["n"].error_message.startswith(
        f"email relay sendmail {program}: found send failed: exit status 75: queue directory not writable"
    )
