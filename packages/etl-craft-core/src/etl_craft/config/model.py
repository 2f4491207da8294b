"""The loaded craft-connector.yml: one frozen value per section, with the active profile applied.

Secret fields hold variable names only (`*_var`); their values are looked up through
`ConnectorConfig.secrets.value(name)` when a connection is made, so no value sits in a repr.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import time
from pathlib import Path
from typing import TYPE_CHECKING

from etl_craft.core.enums import AlertEvent
from etl_craft.core.sensitive import SensitiveNames

if TYPE_CHECKING:
    from etl_craft.config.secrets import SecretSource


@dataclass(frozen=True)
class SecretsSettings:
    source_type: str  # "environment" | "file" | a provider's name (config/providers.py)
    path: Path | None  # the .env file, absolute, when source_type is "file"
    profile: str | None
    cache_seconds: int = 300  # how long a provider's answer is kept
    timeout_seconds: int = 5  # how long one request to a provider may wait
    options: tuple[tuple[str, str], ...] = ()  # the provider's own keys, e.g. (("Region", "eu-west-1"),)


@dataclass(frozen=True)
class EmailSettings:
    transport: str = "smtp"  # "smtp" | "sendmail"
    host: str | None = None
    port: int | None = None
    from_address: str | None = None
    from_name: str | None = None
    tls_mode: str = "starttls"  # "starttls" | "ssl" | "none"
    ca_file: Path | None = None
    auth_mode: str = "none"  # "none" | "password" | "oauth"
    user: str | None = None
    secret_var: str | None = None
    client_id: str | None = None
    token_url: str | None = None
    sendmail_path: Path | None = None


ALERT_EVENTS = tuple(event.value for event in AlertEvent)


@dataclass(frozen=True)
class Webhook:
    """One alert channel: a JSON document POSTed to a URL held in a variable (URLs carry tokens)."""

    name: str
    url_var: str  # the variable holding the URL
    secret_var: str | None = None  # the variable holding the HMAC-SHA256 key
    format: str = "generic"  # "generic" | "slack"
    events: tuple[str, ...] = ALERT_EVENTS
    pipelines: tuple[str, ...] = ()  # pipeline codes; empty: every pipeline

    def wants(self, event: str, pipeline_code: str) -> bool:
        return event in self.events and (not self.pipelines or pipeline_code in self.pipelines)


@dataclass(frozen=True)
class AlertSettings:
    webhooks: tuple[Webhook, ...] = ()
    gate_wait_alert_minutes: int = 30


@dataclass(frozen=True)
class OrchestrationSettings:
    profile: str | None = None
    mode: str = "local"  # "local" | "remote"
    name: str | None = None
    task_timeout_seconds: int = 21600
    max_parallel_tasks: int = 8
    local_ingestion_slots: int = 8  # the local pool's slots for PYTHON tasks
    local_warehouse_slots: int = 8  # the local pool's slots for every other task
    enforce_sla: bool = False
    log_dir: Path = Path("logs")
    gate_wait_minutes: int = 60
    dependency_gates: str = "enforce"  # "enforce" | "warn" | "off"
    timezone: str = "UTC"
    shutdown_grace_seconds: int = 60
    api_address: str = "127.0.0.1:8730"
    # The web UI's cookies carry Secure: "auto" when the request came over https (directly or, from a
    # trusted proxy, by X-Forwarded-Proto), "always" behind a TLS-terminating proxy uvicorn does not trust.
    ui_cookie_secure: str = "auto"  # "auto" | "always" | "never"
    retries: int = 0
    retry_delay_minutes: int = 5
    global_dag: bool = False
    catchup: bool = False
    tags: tuple[str, ...] = ()
    depends_on_past: bool = False
    email_on_failure: bool = False
    email_recipients: tuple[str, ...] = ()
    allow_schedule: bool = True
    email: EmailSettings | None = None
    alerts: AlertSettings = field(default_factory=AlertSettings)


@dataclass(frozen=True)
class ConnectionProfile:
    """An Engine or Warehouse profile. `jdbc_url` is as written (with variables resolved)."""

    section: str  # "Engine" | "Warehouse"
    profile: str | None  # the active profile's name; None when the section has no profile blocks
    name: str | None  # the optional Name key, checked against the URL
    jdbc_url: str
    schema: str | None = None
    user: str | None = None
    auth_mode: str | None = None
    secret_var: str | None = None
    key_file: Path | None = None
    cert_file: Path | None = None
    client_id: str | None = None
    token_url: str | None = None
    scope: str | None = None
    issuer: str | None = None
    region: str | None = None
    role_arn: str | None = None
    database: str | None = None
    catalog: str | None = None
    table_format: str = "native"
    # URL settings that name files (sslrootcert, sslcert, sslkey), resolved beside the config.
    url_files: tuple[tuple[str, Path], ...] = ()
    # A Warehouse's dialect: the name of its entry point in etl_craft.warehouses (None for the Engine).
    dialect: str | None = None
    # Warehouse only: Max_warehouse_queries, the connection's limit on attempts at once (S5.E).
    max_queries: int | None = None

    @property
    def where(self) -> str:
        """The section path used in messages, e.g. Engine.prod."""
        return self.section if self.profile is None else f"{self.section}.{self.profile}"


@dataclass(frozen=True)
class CloningSettings:
    enabled: bool = False
    scope: str = "none"  # "cfg" | "aud" | "all" | "none"
    external_volume: str | None = None
    base_location: str | None = None
    every_minutes: int = 15  # the server's clone schedule (S6.E)
    lock_wait_seconds: int = 60  # how long a clone waits for a busy clone before skipping the cycle


@dataclass(frozen=True)
class LogSettings:
    tail_bytes: int = 8192  # of the attempt's log file kept in TASK_LOG
    store: str | None = None  # Logs.Store: file:///folder or s3://bucket/prefix; None: Log_dir only


@dataclass(frozen=True)
class RetentionSettings:
    """Days each kind of history is kept (None: kept forever) and the daily purge's local time."""

    run_history_days: int = 400
    attempt_log_days: int = 90
    consumption_days: int = 400
    interventions_days: int | None = None
    daily_at: time = time(3, 0)


@dataclass(frozen=True)
class DocsSiteSettings:
    schedule: str | None = None
    output: Path = Path("catalog")
    authtoken_var: str | None = None
    domain: str | None = None
    allowed_ips: tuple[str, ...] = ()
    base_url: str | None = None  # the public address behind an organization's reverse proxy, ending in /
    trusted_proxies: tuple[str, ...] = ()  # whose X-Forwarded-For is believed


@dataclass(frozen=True)
class ConnectorConfig:
    path: Path  # the config file, absolute (a symlink is kept, not followed)
    project_dir: Path  # the folder holding the config file
    secrets_settings: SecretsSettings
    orchestration: OrchestrationSettings
    engine: ConnectionProfile
    warehouse: ConnectionProfile | None = None
    cloning: CloningSettings = field(default_factory=CloningSettings)
    docs_site: DocsSiteSettings | None = None
    logs: LogSettings = field(default_factory=LogSettings)
    retention: RetentionSettings = field(default_factory=RetentionSettings)
    redaction: SensitiveNames = field(default_factory=SensitiveNames)  # Redaction.Sensitive_patterns
    # Settings used literally whose text looks like a variable name (key path, text), for doctor.
    literal_variables: tuple[tuple[str, str], ...] = ()
    secrets: SecretSource | None = field(default=None, repr=False, compare=False)

    def secret(self, variable: str) -> str:
        """The value of a secret variable named in the config (checked when the file loaded)."""
        assert self.secrets is not None, "a ConnectorConfig built by load_config carries its secret source"
        return self.secrets.value(variable)

    def resolved_secrets(self) -> frozenset[str]:
        """Every secret value resolved so far (all the config's secrets once it is loaded), for masking logs."""
        return self.secrets.resolved_values() if self.secrets is not None else frozenset()

    @property
    def sql_files_dir(self) -> Path:
        return self.project_dir / "sql_files"

    @property
    def scripts_dir(self) -> Path:
        return self.project_dir / "ingestion_scripts"
