"""Orchestration.Alerts: webhook channels and the gate-wait threshold."""

from __future__ import annotations

import pytest

from etl_craft.config.model import ALERT_EVENTS

pytestmark = pytest.mark.unit

ENGINE = "Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n"
ENV = {"OPS_HOOK": "https://hooks.example.com/T0KEN/abc", "OPS_KEY": "k-1", "SLACK_HOOK": "https://hooks.slack.com/x"}


def alerts(lines: str) -> str:
    return "Orchestration:\n  Alerts:\n" + "".join(f"    {line}\n" for line in lines.splitlines()) + ENGINE


def test_no_alerts_block_means_no_channel(project):
    settings = project.load("Orchestration:\n  Mode: local\n" + ENGINE).orchestration.alerts
    assert settings.webhooks == ()
    assert settings.gate_wait_alert_minutes == 30


def test_webhooks_with_every_key(project):
    config = project.load(
        alerts(
            "Gate_wait_alert_minutes: 45\n"
            "Webhooks:\n"
            "  - name: ops\n"
            "    url: OPS_HOOK\n"
            "    secret: OPS_KEY\n"
            "    events: [run_failed, attempt_lost]\n"
            "    pipelines: [SALES, FINANCE]\n"
            "  - name: chat\n"
            "    url: SLACK_HOOK\n"
            "    format: slack"
        ),
        ENV,
    )
    settings = config.orchestration.alerts
    assert settings.gate_wait_alert_minutes == 45
    ops, chat = settings.webhooks
    assert (ops.name, ops.url_var, ops.secret_var, ops.format) == ("ops", "OPS_HOOK", "OPS_KEY", "generic")
    assert ops.events == ("run_failed", "attempt_lost")
    assert ops.pipelines == ("SALES", "FINANCE")
    assert ops.wants("run_failed", "SALES") and not ops.wants("run_failed", "OTHER")
    assert not ops.wants("sla_breached", "SALES")
    assert (chat.format, chat.secret_var, chat.events, chat.pipelines) == ("slack", None, ALERT_EVENTS, ())
    assert chat.wants("gate_waiting", "ANY")
    assert "T0KEN" not in repr(config)  # the URL stays in its variable
    assert ENV["OPS_HOOK"] in config.resolved_secrets()  # and is masked in logs


def test_a_profile_block_overrides_the_alerts_block(project):
    config = project.load(
        "Secrets:\n  Profile: prod\n"
        "Orchestration:\n"
        "  Alerts:\n    Webhooks:\n      - {name: dev, url: OPS_HOOK}\n"
        "  dev: {}\n"
        "  prod:\n    Alerts:\n      Gate_wait_alert_minutes: 5\n      Webhooks:\n        - {name: prod, url: SLACK_HOOK}\n"
        + ENGINE,
        ENV,
    )
    settings = config.orchestration.alerts
    assert [h.name for h in settings.webhooks] == ["prod"]
    assert settings.gate_wait_alert_minutes == 5


def test_an_unknown_webhook_key_is_refused_even_in_another_profile(project):
    message = project.refuse(
        "Secrets:\n  Profile: dev\n"
        "Orchestration:\n"
        "  dev: {}\n"
        "  prod:\n    Alerts:\n      Webhooks:\n        - name: ops\n          url: OPS_HOOK\n          secert: OPS_KEY\n"
        + ENGINE,
        ENV,
    )
    assert "Orchestration.prod.Alerts.Webhooks.0.secert (line 10): unknown key" in message
    assert "did you mean secret?" in message


def test_an_unknown_alerts_key_is_refused(project):
    message = project.refuse(alerts("Webhook: []"), ENV)
    assert "Orchestration.Alerts.Webhook (line 3): unknown key" in message
    assert "did you mean Webhooks?" in message


def test_the_url_must_name_a_variable(project):
    message = project.refuse(alerts("Webhooks:\n  - name: ops\n    url: https://hooks.example.com/T0KEN"), ENV)
    assert "Orchestration.Alerts.Webhooks.0.url (line 5): must name a variable" in message
    assert "T0KEN" not in message


def test_the_url_variable_must_hold_an_http_url(project):
    message = project.refuse(alerts("Webhooks:\n  - name: ops\n    url: OPS_HOOK"), {"OPS_HOOK": "ftp://x/T0KEN"})
    assert "Orchestration.Alerts.Webhooks.0.url (line 5): variable OPS_HOOK does not hold a URL" in message
    assert "T0KEN" not in message


def test_an_unset_url_variable_is_refused(project):
    message = project.refuse(alerts("Webhooks:\n  - name: ops\n    url: NOT_SET_HOOK"), ENV)
    assert "variable NOT_SET_HOOK is not set" in message


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("- {name: ops, url: OPS_HOOK, events: [run_failed, run_fialed]}", "found 'run_fialed'"),
        ("- {name: ops, url: OPS_HOOK, events: []}", "events (line 4): found an empty list"),
        ("- {name: ops, url: OPS_HOOK, format: teams}", "expected one of generic, slack"),
        ("- {name: ops, url: OPS_HOOK, pipelines: ['1abc']}", "expected pipeline codes"),
        ("- {url: OPS_HOOK}", "name: missing"),
        ("- {name: 'a b', url: OPS_HOOK}", "expected letters, digits"),
        ("- ops", "expected a mapping with name, url"),
    ],
)
def test_bad_webhooks_are_refused(project, entry, expected):
    assert expected in project.refuse(alerts(f"Webhooks:\n  {entry}"), ENV)


def test_two_webhooks_with_one_name_are_refused(project):
    message = project.refuse(
        alerts("Webhooks:\n  - {name: ops, url: OPS_HOOK}\n  - {name: ops, url: SLACK_HOOK}"),
        ENV,
    )
    assert "webhook 'ops' is defined twice" in message


def test_webhooks_must_be_a_list(project):
    message = project.refuse(alerts("Webhooks:\n  name: ops"), ENV)
    assert "Webhooks" in message and "expected a list of webhooks" in message


def test_the_reference_example_loads(project):
    from pathlib import Path

    reference = Path(__file__).resolve().parents[3] / "docs" / "reference" / "configuration.md"
    text = reference.read_text(encoding="utf-8")
    block = next(b for b in text.split("```yaml\n")[1:] if "OPS_WEBHOOK_URL" in b).split("```")[0]
    env = {"OPS_WEBHOOK_URL": "https://h.example.com/a", "OPS_WEBHOOK_KEY": "k", "SALES_SLACK_WEBHOOK": "https://s/x"}
    settings = project.load(block + ENGINE, env).orchestration.alerts
    assert settings.gate_wait_alert_minutes == 45
    assert [(h.name, h.format, h.pipelines) for h in settings.webhooks] == [
        ("ops", "generic", ()),
        ("sales-chat", "slack", ("SALES_DAILY",)),
    ]
