"""Orchestration.Email, Cloning and Docs_site."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.unit

ENGINE = "Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n"
WAREHOUSE = "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n"
SMTP = {"SMTP_SECRET": "smtp-pw"}


def email(lines: str) -> str:
    return "Orchestration:\n  Email:\n" + "".join(f"    {line}\n" for line in lines.splitlines()) + ENGINE


def test_smtp_with_password_login(project):
    config = project.load(
        email(
            "host: smtp.example.com\nport: 465\ntls_mode: SSL\nca_file: certs/ca.pem\n"
            "from_address: etl@example.com\nfrom_name: ETL\nuser: etl\nsecret: SMTP_SECRET"
        ),
        SMTP,
    )
    relay = config.orchestration.email
    assert relay is not None
    assert (relay.transport, relay.host, relay.port, relay.tls_mode) == (
        "smtp",
        "smtp.example.com",
        465,
        "ssl",
    )
    assert relay.ca_file == project.root / "certs" / "ca.pem"
    assert (relay.auth_mode, relay.user, relay.secret_var) == ("password", "etl", "SMTP_SECRET")


def test_smtp_defaults(project):
    relay = project.load(email("host: relay\nfrom_address: etl@example.com")).orchestration.email
    assert relay is not None
    assert (relay.tls_mode, relay.auth_mode, relay.port, relay.sendmail_path) == (
        "starttls",
        "none",
        None,
        None,
    )


@pytest.mark.parametrize("mode", ["password", "oauth"])
def test_login_modes_require_tls(project, mode):
    extra = "\nclient_id: app\ntoken_url: https://login.example.com/token" if mode == "oauth" else ""
    message = project.refuse(
        email(
            "host: relay\nfrom_address: a@example.com\ntls_mode: none\n"
            f"auth_mode: {mode}\nuser: u\nsecret: SMTP_SECRET{extra}"
        ),
        SMTP,
    )
    assert f"Orchestration.Email.tls_mode (line 5): auth_mode {mode} would send the login unencrypted" in message
    assert "starttls or ssl" in message


def test_oauth_needs_its_fields(project):
    message = project.refuse(
        email("host: relay\nfrom_address: a@example.com\nauth_mode: oauth\nuser: u\nsecret: SMTP_SECRET"),
        SMTP,
    )
    assert "Orchestration.Email.client_id: missing" in message
    assert "user, client_id, secret, token_url for auth_mode oauth" in message


def test_credentials_without_a_login_mode_are_refused(project):
    message = project.refuse(email("host: relay\nfrom_address: a@example.com\nauth_mode: none\nuser: u"))
    assert "Orchestration.Email.user (line 6): is not used by auth_mode none" in message


@pytest.mark.parametrize("key_line", ["host: relay", "port: 25"])
def test_host_and_port_are_refused_with_sendmail(project, key_line):
    message = project.refuse(email(f"transport: sendmail\nfrom_address: a@example.com\n{key_line}"))
    key = key_line.split(":")[0]
    assert f"Orchestration.Email.{key} (line 5): is not used with transport: sendmail" in message


def test_sendmail_path_is_resolved_beside_the_config(project):
    relay = project.load(
        email("transport: sendmail\nfrom_address: a@example.com\nsendmail_path: bin/sendmail")
    ).orchestration.email
    assert relay is not None
    assert relay.sendmail_path == project.root / "bin" / "sendmail"
    default = project.load(email("transport: sendmail\nfrom_address: a@example.com")).orchestration.email
    assert default is not None and str(default.sendmail_path) == "/usr/sbin/sendmail"


def test_use_tls_is_an_unknown_key_pointing_at_tls_mode(project):
    message = project.refuse(email("host: relay\nfrom_address: a@example.com\nuse_tls: true"))
    assert "Orchestration.Email.use_tls (line 5): unknown key" in message
    assert "tls_mode" in message


def test_smtp_needs_host_and_sender(project):
    assert "Orchestration.Email.host: missing" in project.refuse(email("from_address: a@example.com"))
    assert "Orchestration.Email.from_address: missing" in project.refuse(email("host: relay"))
    assert "found 'nobody'" in project.refuse(email("host: relay\nfrom_address: nobody"))


def cloning(lines: str, *, warehouse: bool = True) -> str:
    body = "".join(f"  {line}\n" for line in lines.splitlines())
    return "Orchestration: {}\n" + ENGINE + (WAREHOUSE if warehouse else "") + "Cloning:\n" + body


def test_cloning_settings_are_read_while_cloning_is_off(project):
    config = project.load(cloning("Enabled: false\nScope: ALL\nBase_location: s3://bucket/clones"))
    assert config.cloning.enabled is False
    assert config.cloning.scope == "all"
    assert config.cloning.base_location == "s3://bucket/clones"


def test_cloning_enabled_reads_its_schedule_and_lock_wait(project):
    config = project.load(cloning("Enabled: true\nScope: all"))
    assert config.cloning.enabled is True and config.cloning.scope == "all"
    assert (config.cloning.every_minutes, config.cloning.lock_wait_seconds) == (15, 60)
    config = project.load(cloning("Enabled: true\nScope: aud\nEvery_minutes: 5\nLock_wait_seconds: 0"))
    assert (config.cloning.every_minutes, config.cloning.lock_wait_seconds) == (5, 0)
    message = project.refuse(cloning("Enabled: true\nScope: aud\nEvery_minutes: 0"))
    assert "Cloning.Every_minutes (line 9): found '0'; expected a whole number from 1 to 10080" in message


def test_cloning_external_copies_are_refused_while_enabled(project):
    message = project.refuse(cloning("Enabled: true\nScope: all\nBase_location: s3://bucket/clones"))
    assert message == (
        "craft-connector.yml: Cloning.Base_location (line 9): this etl-craft release clones into plain tables of "
        "the Warehouse schema only: expected no Base_location while Enabled is true. Remove Base_location "
        "(docs/guides/cloning.md)"
    )


def test_cloning_enabled_needs_a_scope_other_than_none(project):
    assert "Cloning.Scope: missing" in project.refuse(cloning("Enabled: true"))
    message = project.refuse(cloning("Enabled: true\nScope: none"))
    assert "Cloning.Scope (line 8): none turns cloning off, but Enabled is true" in message


def test_cloning_enabled_needs_a_warehouse(project):
    message = project.refuse(cloning("Enabled: true\nScope: cfg", warehouse=False))
    assert "Cloning.Enabled (line 5): cloning copies the Engine DB into the warehouse" in message


def test_unknown_cloning_scope(project):
    message = project.refuse(cloning("Enabled: false\nScope: everything"))
    assert "found 'everything'; expected one of cfg, aud, all, none" in message


def docs(lines: str) -> str:
    return "Orchestration: {}\n" + ENGINE + "Docs_site:\n" + "".join(f"  {line}\n" for line in lines.splitlines())


def test_docs_site_settings(project):
    config = project.load(
        docs(
            'Schedule: "@daily"\nOutput: site\nAuthtoken: NGROK_AUTHTOKEN\nDomain: docs.example.com\n'
            "Allowed_ips: 203.0.113.0/24, 2001:db8::/32"
        ),
        {"NGROK_AUTHTOKEN": "ngrok-value"},
    )
    site = config.docs_site
    assert site is not None
    assert site.schedule == "@daily"
    assert site.output == project.root / "site"
    assert site.authtoken_var == "NGROK_AUTHTOKEN"
    assert site.allowed_ips == ("203.0.113.0/24", "2001:db8::/32")


def test_docs_site_default_output_and_unset_authtoken(project):
    site = project.load(docs("Domain: docs.example.com")).docs_site
    assert site is not None and site.output == project.root / "catalog"
    message = project.refuse(docs("Authtoken: NGROK_AUTHTOKEN"))
    assert "Docs_site.Authtoken (line 5): variable NGROK_AUTHTOKEN is not set" in message


def test_docs_site_refuses_a_bad_network(project):
    message = project.refuse(docs("Allowed_ips: 203.0.113.0/24, office"))
    assert "Docs_site.Allowed_ips (line 5): found 'office'" in message


def test_ca_file_is_refused_without_tls(project):
    message = project.refuse(email("host: relay\nfrom_address: a@example.com\ntls_mode: none\nca_file: ca.pem"))
    assert "Orchestration.Email.ca_file (line 6): is not used with tls_mode: none" in message


def test_sendmail_path_is_refused_with_smtp(project):
    message = project.refuse(email("host: relay\nfrom_address: a@example.com\nsendmail_path: /bin/true"))
    assert "Orchestration.Email.sendmail_path (line 5): is used only with transport: sendmail" in message


def test_oauth_token_url_must_be_a_url(project):
    message = project.refuse(
        email(
            "host: relay\nfrom_address: a@example.com\nauth_mode: oauth\nuser: u\nclient_id: app\n"
            "secret: SMTP_SECRET\ntoken_url: login.example.com"
        ),
        SMTP,
    )
    assert "Orchestration.Email.token_url (line 9): found 'login.example.com'" in message


def test_email_that_is_not_a_mapping_is_refused(project):
    message = project.refuse("Orchestration:\n  Email: smtp.example.com\n" + ENGINE)
    assert "Orchestration.Email (line 2): found a str; expected a mapping of Email keys" in message
