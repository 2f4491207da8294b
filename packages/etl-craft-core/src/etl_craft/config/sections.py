"""The Secrets, Orchestration (with its Email relay and alert channels), Cloning, Docs_site and Redaction sections."""

from __future__ import annotations

import ipaddress
import re
import zoneinfo
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from etl_craft.config.layout import BlockSpec, open_section
from etl_craft.config.model import (
    ALERT_EVENTS,
    AlertSettings,
    CloningSettings,
    DocsSiteSettings,
    EmailSettings,
    OrchestrationSettings,
    SecretsSettings,
    Webhook,
)
from etl_craft.config.providers import SecretsProvider, find_provider, source_types
from etl_craft.config.values import Context, Reader, Setting, show
from etl_craft.core.sensitive import SensitiveNames
from etl_craft.core.text import close_matches, did_you_mean, is_valid_code

INT32_MAX = 2_147_483_647  # timers and counts are stored in 32-bit Engine DB columns
MAX_PARALLEL_TASKS = 1024
_EMAIL_ADDRESS = re.compile(r"[^@\s<>,]+@[^@\s<>,]+")
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?")

SECRETS_KEYS = ("Source_type", "Path", "Profile", "Cache_seconds", "Timeout_seconds")
PROVIDER_KEYS = ("Cache_seconds", "Timeout_seconds")  # read only with a secrets provider
SMTP_KEYS = ("host", "port", "tls_mode", "ca_file", "auth_mode", "user", "secret", "client_id", "token_url")
EMAIL_SPEC = BlockSpec(
    "Email",
    ("transport", "from_address", "from_name", *SMTP_KEYS, "sendmail_path"),
    hints={"use_tls": "use_tls was replaced by tls_mode: write tls_mode: starttls (or ssl, or none)"},
)
WEBHOOK_SPEC = BlockSpec("Webhooks", ("name", "url", "secret", "format", "events", "pipelines"))
ALERTS_SPEC = BlockSpec("Alerts", ("Webhooks", "Gate_wait_alert_minutes"), items={"Webhooks": WEBHOOK_SPEC})
_CHANNEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
ORCHESTRATION_SPEC = BlockSpec(
    "Orchestration",
    (
        "Profile",
        "Mode",
        "Name",
        "Task_timeout_seconds",
        "Max_parallel_tasks",
        "Local_ingestion_slots",
        "Local_warehouse_slots",
        "Enforce_sla",
        "Log_dir",
        "Gate_wait_minutes",
        "Dependency_gates",
        "Timezone",
        "Shutdown_grace_seconds",
        "Api_address",
        "Ui_cookie_secure",
        "Retries",
        "Global_dag",
        "Catchup",
        "Tags",
        "Retry_delay_minutes",
        "Depends_on_past",
        "Email_on_failure",
        "Email_recipients",
        "Allow_schedule",
        "Email",
        "Alerts",
    ),
    nested={"Email": EMAIL_SPEC, "Alerts": ALERTS_SPEC},
)
# Email auth_mode -> the credential keys it needs (all required).
EMAIL_AUTH_FIELDS = {
    "none": (),
    "password": ("user", "secret"),
    "oauth": ("user", "client_id", "secret", "token_url"),
}
CLONING_SPEC = BlockSpec(
    "Cloning", ("Profile", "Enabled", "Scope", "Every_minutes", "Lock_wait_seconds", "External_volume", "Base_location")
)
DOCS_SITE_SPEC = BlockSpec(
    "Docs_site", ("Profile", "Schedule", "Output", "Authtoken", "Domain", "Allowed_ips", "Base_url", "Trusted_proxies")
)
REDACTION_SPEC = BlockSpec("Redaction", ("Sensitive_patterns",))
_PATTERN = re.compile(r"[A-Za-z0-9_*?\[\]!.-]+")


def _source_type(ctx: Context, body: object) -> tuple[str, type[SecretsProvider] | None]:
    """Secrets.Source_type: a built-in source, or an installed provider's name (and its class)."""
    written = body.get("Source_type") if isinstance(body, dict) else None
    reader = Reader(ctx, ("Secrets",), {"Source_type": Setting(written, ("Secrets", "Source_type"))}, None)
    text = reader.text("Source_type", "environment") or "environment"
    found = find_provider(text)
    if found is None:
        known = source_types()
        raise reader.error(
            "Source_type",
            found=show(text),
            expected="one of " + ", ".join(known),
            remedy="write one of the expected values"
            + did_you_mean(text, known)
            + "; a provider such as aws-secrets-manager needs its extra installed (pip install 'etl-craft-core[aws]')",
        )
    return found


def _provider_settings(
    reader: Reader, source_type: str, provider: type[SecretsProvider]
) -> tuple[tuple[str, str], ...]:
    """The provider's own keys that are set, as read (a key may name a variable, like any setting)."""
    options = []
    for key in provider.keys:
        value = reader.text(key)
        if value is None and key in provider.required:
            raise reader.missing(key, expected=f"{key}, which Source_type {source_type} needs")
        if value is not None:
            options.append((key, value))
    return tuple(options)


def parse_secrets(ctx: Context, body: object) -> tuple[SecretsSettings, Reader, type[SecretsProvider] | None]:
    """Source_type, Path and a provider's settings; the Reader is returned so Profile can be read once
    the file is known, and the provider's class so the loader can set it up.

    Everything here is looked up in the process environment only: the .env file cannot say where
    it is itself, and a provider cannot say how to reach itself. A missing or empty Secrets section
    means Source_type: environment.
    """
    source_type, provider = _source_type(ctx, body)
    keys = (*SECRETS_KEYS, *(provider.keys if provider is not None else ()))
    reader = open_section(ctx, BlockSpec("Secrets", keys), body, None, profiles=False)
    if provider is None:
        for key in reader.present(PROVIDER_KEYS):
            raise reader.error(
                key,
                f"is read only with a secrets provider, not with Source_type: {source_type}",
                remedy=f"remove {key}, or set Source_type to a provider such as aws-secrets-manager",
            )
    path = reader.path("Path")
    if source_type == "file" and path is None:
        raise reader.missing("Path", expected="the .env file to read with Source_type: file")
    if source_type != "file" and path is not None:
        raise reader.error(
            "Path",
            "is read only with Source_type: file",
            expected=f"no Path with Source_type: {source_type}",
            remedy="set Source_type: file to read the file, or remove Path",
        )
    settings = SecretsSettings(source_type=source_type, path=path, profile=None)
    if provider is not None:
        settings = SecretsSettings(
            source_type=source_type,
            path=None,
            profile=None,
            cache_seconds=reader.whole("Cache_seconds", 300, 0, INT32_MAX),
            timeout_seconds=reader.whole("Timeout_seconds", 5, 1, 3600),
            options=_provider_settings(reader, source_type, provider),
        )
    return settings, reader, provider


def _email_address(reader: Reader, key: str, text: str) -> str:
    if not _EMAIL_ADDRESS.fullmatch(text):
        raise reader.error(key, found=show(text), expected="an email address such as etl@example.com")
    return text


def parse_api_address(reader: Reader) -> str:
    """`host:port` or `[ipv6]:port`, with a port from 1 to 65535, or 0 for any free port (the server's
    log names the one it got; tests run many servers side by side this way)."""
    text = reader.text("Api_address", "127.0.0.1:8730") or ""
    if text.startswith("["):
        host, _, port = text[1:].partition("]:")
        try:
            ipaddress.IPv6Address(host)
            valid_host = True
        except ValueError:
            valid_host = False
    else:
        host, _, port = text.rpartition(":")
        valid_host = bool(_HOST.fullmatch(host))
    if not (valid_host and port.isascii() and port.isdigit() and 0 <= int(port) <= 65535):
        raise reader.error(
            "Api_address",
            found=show(text),
            expected="host:port or [ipv6]:port with a port from 0 (any free port) to 65535, e.g. 127.0.0.1:8730",
        )
    return text


def _timezone(reader: Reader) -> str:
    name = reader.text("Timezone", "UTC") or "UTC"
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        near = close_matches(name, zoneinfo.available_timezones())
        raise reader.error(
            "Timezone",
            found=show(name),
            expected="an IANA time zone name such as UTC or Europe/Paris",
            remedy="use a name from the IANA database" + (f" (did you mean {', '.join(near)}?)" if near else ""),
        ) from None
    return name


def parse_email(parent: Reader) -> EmailSettings | None:
    setting = parent.get("Email")
    if setting is None:
        return None
    if not isinstance(setting.value, dict):
        raise parent.error("Email", found=f"a {type(setting.value).__name__}", expected="a mapping of Email keys")
    items = {key: Setting(value, (*setting.path, key)) for key, value in setting.value.items()}
    reader = Reader(parent.ctx, setting.path, items, parent.selected_profile)
    transport = reader.choice("transport", ("smtp", "sendmail"), "smtp") or "smtp"
    from_address = _email_address(reader, "from_address", reader.required_text("from_address", "the sender's address"))
    from_name = reader.text("from_name")
    if transport == "sendmail":
        for key in reader.present(SMTP_KEYS):
            raise reader.error(
                key, "is not used with transport: sendmail", remedy=f"remove {key}, or use transport: smtp"
            )
        sendmail_path = reader.path("sendmail_path", "/usr/sbin/sendmail")
        return EmailSettings(transport, from_address=from_address, from_name=from_name, sendmail_path=sendmail_path)
    if reader.has("sendmail_path"):
        raise reader.error("sendmail_path", "is used only with transport: sendmail", remedy="remove sendmail_path")
    host = reader.required_text("host", "the SMTP relay's host name")
    port = reader.optional_whole("port", 1, 65535)
    tls_mode = reader.choice("tls_mode", ("starttls", "ssl", "none"), "starttls") or "starttls"
    default_auth = "password" if reader.has("secret") else "none"
    auth_mode = reader.choice("auth_mode", tuple(EMAIL_AUTH_FIELDS), default_auth) or default_auth
    if tls_mode == "none" and reader.has("ca_file"):
        raise reader.error("ca_file", "is not used with tls_mode: none", remedy="remove ca_file or use starttls or ssl")
    if tls_mode == "none" and auth_mode != "none":
        raise reader.error(
            "tls_mode",
            f"auth_mode {auth_mode} would send the login unencrypted",
            found="none",
            expected="tls_mode starttls or ssl with a login",
            remedy="use tls_mode: starttls (or ssl for port 465)",
        )
    needed = EMAIL_AUTH_FIELDS[auth_mode]
    for key in needed:
        if not reader.has(key):
            raise reader.missing(key, expected=f"{', '.join(needed)} for auth_mode {auth_mode}")
    for key in reader.present(("user", "secret", "client_id", "token_url")):
        if key not in needed:
            raise reader.error(key, f"is not used by auth_mode {auth_mode}", remedy=f"remove {key} or change auth_mode")
    token_url = reader.text("token_url")
    if token_url is not None and not re.fullmatch(r"https?://[^\s/]+\S*", token_url):
        raise reader.error("token_url", found=show(token_url), expected="an https:// URL of the token endpoint")
    return EmailSettings(
        transport=transport,
        host=host,
        port=port,
        from_address=from_address,
        from_name=from_name,
        tls_mode=tls_mode,
        ca_file=reader.path("ca_file"),
        auth_mode=auth_mode,
        user=reader.text("user"),
        secret_var=reader.secret_var("secret"),
        client_id=reader.text("client_id"),
        token_url=token_url,
    )


def _mapping_reader(parent: Reader, setting: Setting, expected: str) -> Reader:
    if not isinstance(setting.value, dict):
        raise parent.ctx.error(setting.path, found=f"a {type(setting.value).__name__}", expected=expected)
    items = {key: Setting(value, (*setting.path, key)) for key, value in setting.value.items()}
    return Reader(parent.ctx, setting.path, items, parent.selected_profile)


def _webhook(reader: Reader) -> Webhook:
    name = reader.required_text("name", "a name for the channel, e.g. ops-team")
    if not _CHANNEL_NAME.fullmatch(name):
        raise reader.error("name", found=show(name), expected="letters, digits, _, . and - (at most 64)")
    url_var = reader.secret_var("url")
    if url_var is None:
        raise reader.missing("url", expected="the name of a variable holding the webhook's URL")
    parts = urlsplit(reader.ctx.source.value(url_var))
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise reader.error(
            "url",
            f"variable {url_var} does not hold a URL",
            found="a value that is not an http:// or https:// URL (not shown, as it may hold a token)",
            expected="https://host/path",
            remedy=f"set {url_var} to the webhook's full URL",
        )
    events = reader.texts("events")
    if reader.has("events") and not events:
        raise reader.error("events", found="an empty list", expected="one or more of " + ", ".join(ALERT_EVENTS))
    for event in events:
        if event not in ALERT_EVENTS:
            raise reader.error(
                "events",
                found=show(event),
                expected="events among " + ", ".join(ALERT_EVENTS),
                remedy="correct the event's name" + did_you_mean(event, ALERT_EVENTS),
            )
    pipelines = reader.texts("pipelines")
    for code in pipelines:
        if not is_valid_code(code):
            raise reader.error("pipelines", found=show(code), expected="pipeline codes such as SALES_DAILY")
    return Webhook(
        name=name,
        url_var=url_var,
        secret_var=reader.secret_var("secret"),
        format=reader.choice("format", ("generic", "slack"), "generic") or "generic",
        events=tuple(dict.fromkeys(events)) or ALERT_EVENTS,
        pipelines=tuple(dict.fromkeys(pipelines)),
    )


def parse_alerts(parent: Reader) -> AlertSettings:
    """Orchestration.Alerts: webhook channels and the gate-wait threshold (S7.D)."""
    setting = parent.get("Alerts")
    if setting is None:
        return AlertSettings()
    reader = _mapping_reader(parent, setting, "a mapping with Webhooks and Gate_wait_alert_minutes")
    minutes = reader.whole("Gate_wait_alert_minutes", 30, 0, INT32_MAX)
    listed = reader.get("Webhooks")
    if listed is None:
        return AlertSettings(gate_wait_alert_minutes=minutes)
    if not isinstance(listed.value, list):
        raise reader.error(
            "Webhooks",
            found=f"a {type(listed.value).__name__}",
            expected="a list of webhooks, each a mapping with name and url",
            remedy="write each webhook as a list item starting with '- name: ...'",
        )
    webhooks: list[Webhook] = []
    for position, item in enumerate(listed.value):
        where = Setting(item, (*listed.path, str(position)))
        hook = _webhook(_mapping_reader(reader, where, "a mapping with name, url, secret, format, events, pipelines"))
        if any(h.name == hook.name for h in webhooks):
            raise reader.ctx.error(
                (*where.path, "name"),
                f"webhook {hook.name!r} is defined twice",
                expected="one name per webhook",
                remedy="rename one of them",
            )
        webhooks.append(hook)
    return AlertSettings(tuple(webhooks), minutes)


def parse_orchestration(ctx: Context, body: object, default_profile: str | None) -> OrchestrationSettings:
    reader = open_section(ctx, ORCHESTRATION_SPEC, body, default_profile)
    mode = reader.choice("Mode", ("local", "remote"), "local") or "local"
    gates = reader.choice("Dependency_gates", ("enforce", "warn", "off"), "enforce") or "enforce"
    if mode == "remote" and gates != "enforce":
        raise reader.error(
            "Dependency_gates",
            "only enforce is possible in remote mode",
            found=gates,
            expected="Dependency_gates: enforce with Mode: remote",
            remedy="remove Dependency_gates or use Mode: local",
        )
    recipients = tuple(_email_address(reader, "Email_recipients", item) for item in reader.texts("Email_recipients"))
    max_parallel = reader.whole("Max_parallel_tasks", 8, 1, MAX_PARALLEL_TASKS)
    return OrchestrationSettings(
        profile=reader.profile_block,
        mode=mode,
        name=reader.text("Name"),
        task_timeout_seconds=reader.whole("Task_timeout_seconds", 21600, 0, INT32_MAX),
        max_parallel_tasks=max_parallel,
        local_ingestion_slots=reader.whole("Local_ingestion_slots", max_parallel, 1, MAX_PARALLEL_TASKS),
        local_warehouse_slots=reader.whole("Local_warehouse_slots", max_parallel, 1, MAX_PARALLEL_TASKS),
        enforce_sla=reader.boolean("Enforce_sla", False),
        log_dir=reader.path("Log_dir", "logs") or ctx.resolve_path("logs"),
        gate_wait_minutes=reader.whole("Gate_wait_minutes", 60, 0, INT32_MAX),
        dependency_gates=gates,
        timezone=_timezone(reader),
        shutdown_grace_seconds=reader.whole("Shutdown_grace_seconds", 60, 0, INT32_MAX),
        api_address=parse_api_address(reader),
        ui_cookie_secure=reader.choice("Ui_cookie_secure", ("auto", "always", "never"), "auto") or "auto",
        retries=reader.whole("Retries", 0, 0, INT32_MAX),
        retry_delay_minutes=reader.whole("Retry_delay_minutes", 5, 0, INT32_MAX),
        global_dag=reader.boolean("Global_dag", False),
        catchup=reader.boolean("Catchup", False),
        tags=reader.texts("Tags"),
        depends_on_past=reader.boolean("Depends_on_past", False),
        email_on_failure=reader.boolean("Email_on_failure", False),
        email_recipients=recipients,
        allow_schedule=reader.boolean("Allow_schedule", True),
        email=parse_email(reader),
        alerts=parse_alerts(reader),
    )


def parse_cloning(ctx: Context, body: object, default_profile: str | None, *, has_warehouse: bool) -> CloningSettings:
    reader = open_section(ctx, CLONING_SPEC, body, default_profile)
    enabled = reader.boolean("Enabled", False)
    if enabled and not has_warehouse:
        raise reader.error(
            "Enabled",
            "cloning copies the Engine DB into the warehouse, but there is no Warehouse section",
            expected="a Warehouse section, or Enabled: false",
            remedy="add the Warehouse section or turn cloning off",
        )
    scope = reader.choice("Scope", ("cfg", "aud", "all", "none"))
    if enabled and scope is None:
        raise reader.missing("Scope", expected="Scope cfg, aud or all when Enabled is true")
    if enabled and scope == "none":
        raise reader.error(
            "Scope",
            "none turns cloning off, but Enabled is true",
            expected="Scope cfg, aud or all",
            remedy="choose the tables to copy, or set Enabled: false",
        )
    for key in ("External_volume", "Base_location"):
        if enabled and reader.has(key):
            # Refused rather than ignored: the clone writes plain warehouse tables, and no Snowflake
            # Iceberg or Databricks external copy is built yet, so the setting would do nothing.
            raise reader.error(
                key,
                "this etl-craft release clones into plain tables of the Warehouse schema only",
                expected=f"no {key} while Enabled is true",
                remedy=f"remove {key} (docs/guides/cloning.md)",
            )
    return CloningSettings(
        enabled=enabled,
        scope=scope or "none",
        external_volume=reader.text("External_volume"),
        base_location=reader.text("Base_location"),
        every_minutes=reader.whole("Every_minutes", 15, 1, 7 * 24 * 60),
        lock_wait_seconds=reader.whole("Lock_wait_seconds", 60, 0, 3600),
    )


def parse_docs_site(ctx: Context, body: object, default_profile: str | None) -> DocsSiteSettings:
    reader = open_section(ctx, DOCS_SITE_SPEC, body, default_profile)
    for key in ("Allowed_ips", "Trusted_proxies"):
        for network in reader.texts(key):
            try:
                ipaddress.ip_network(network, strict=False)
            except ValueError:
                raise reader.error(
                    key,
                    found=show(network),
                    expected="comma-separated IP addresses or CIDR ranges, e.g. 203.0.113.0/24",
                ) from None
    base_url = reader.text("Base_url")
    if base_url is not None:
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
            raise reader.error(
                "Base_url",
                found=show(base_url),
                expected="the site's public address: http(s)://host[:port][/path/], without query or fragment",
                remedy="write the URL your reverse proxy serves the catalog at, e.g. https://intranet.example.com/catalog/",
            )
        base_url = urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + "/", "", ""))
    return DocsSiteSettings(
        schedule=reader.text("Schedule"),
        output=reader.path("Output", "catalog") or Path("catalog"),
        authtoken_var=reader.secret_var("Authtoken"),
        domain=reader.text("Domain"),
        allowed_ips=reader.texts("Allowed_ips"),
        base_url=base_url,
        trusted_proxies=reader.texts("Trusted_proxies"),
    )


def parse_redaction(ctx: Context, body: object) -> SensitiveNames:
    """Redaction.Sensitive_patterns (S7.C): the patterns written replace the defaults; an empty list
    hides nothing. One set for every profile: what is hidden must not depend on the environment."""
    reader = open_section(ctx, REDACTION_SPEC, body, None, profiles=False)
    setting = reader.settings.get("Sensitive_patterns")
    if setting is None or setting.value is None:
        return SensitiveNames()
    patterns = reader.texts("Sensitive_patterns")
    for pattern in patterns:
        if not _PATTERN.fullmatch(pattern):
            raise reader.error(
                "Sensitive_patterns",
                found=show(pattern),
                expected="shell-style patterns of letters, digits, _, -, . and the wildcards * ? [ ], e.g. *TOKEN*",
                remedy="write each pattern as a parameter name with wildcards",
            )
    return SensitiveNames(tuple(dict.fromkeys(patterns)))
