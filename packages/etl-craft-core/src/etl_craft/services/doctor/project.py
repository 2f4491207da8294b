"""doctor checks of the configuration itself: settings, secrets, logins, files, folders, gates and cloning."""

from __future__ import annotations

import os
from pathlib import Path

from etl_craft.config.connections import login_text
from etl_craft.config.dialects import engine_form
from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.config.warehouses import describe_login
from etl_craft.core.checks import FAIL, OK, WARN, CheckResult

PROJECT_FOLDERS = ("sql_files", "ingestion_scripts", "migrations")


def settings_check(config: ConnectorConfig) -> list[CheckResult]:
    """Settings used as written whose text looks like a variable name: probably a variable that isn't set."""
    if not config.literal_variables:
        return [CheckResult("Settings", OK, "no setting names a variable that is not set")]
    return [
        CheckResult(
            "Settings",
            WARN,
            f"{where} is {text!r}, used as written because no variable {text} is set; "
            f"set {text} if it names a variable, or ignore this if the text is meant",
        )
        for where, text in config.literal_variables
    ]


def secret_variables(config: ConnectorConfig) -> list[tuple[str, str]]:
    """(setting, variable) of every secret the configuration names for the selected profiles."""
    found: list[tuple[str, str | None]] = [
        (f"{config.engine.where}.secret", config.engine.secret_var),
    ]
    warehouse = config.warehouse
    if warehouse is not None:
        found.append((f"{warehouse.where}.secret", warehouse.secret_var))
    email = config.orchestration.email
    if email is not None:
        found.append(("Orchestration.Email.secret", email.secret_var))
    for hook in config.orchestration.alerts.webhooks:
        found += [(f"webhook {hook.name} url", hook.url_var), (f"webhook {hook.name} secret", hook.secret_var)]
    if config.docs_site is not None:
        found.append(("Docs_site.Authtoken", config.docs_site.authtoken_var))
    return [(where, name) for where, name in found if name]


def secrets_check(config: ConnectorConfig) -> list[CheckResult]:
    """Every secret variable was found set when the file loaded (an unset one fails Configuration)."""
    source = config.secrets_settings
    origin = f"the environment and {source.path}" if source.path else "the environment"
    provider = config.secrets.provider if config.secrets is not None else None
    if provider is not None:
        origin = f"{provider.description}, kept {source.cache_seconds} s"
    named = secret_variables(config)
    if not named:
        return [CheckResult("Secrets", OK, f"no secret variables used (Source_type {source.source_type})")]
    names = ", ".join(f"{name} ({where})" for where, name in named)
    return [CheckResult("Secrets", OK, f"{len(named)} secret variable(s) set in {origin}: {names}")]


def _engine_login(profile: ConnectionProfile) -> str:
    form = engine_form(profile.jdbc_url)
    if form is not None and form.file:
        return "a file, no login"
    return login_text(profile)


def auth_check(config: ConnectorConfig) -> list[CheckResult]:
    parts = [f"Engine: {_engine_login(config.engine)}"]
    if config.warehouse is not None:
        parts.append(f"Warehouse: {describe_login(config.warehouse)}")
    email = config.orchestration.email
    if email is not None and email.transport == "smtp":
        parts.append(f"Email: {email.auth_mode} over tls_mode {email.tls_mode}")
    return [CheckResult("Auth", OK, "; ".join(parts))]


def configured_files(config: ConnectorConfig) -> list[tuple[str, Path]]:
    """(setting, resolved path) of every file the configuration names (S2.G.2)."""
    found: list[tuple[str, Path | None]] = []
    for profile in (config.engine, config.warehouse):
        if profile is None:
            continue
        found += [(f"{profile.where}.key_file", profile.key_file), (f"{profile.where}.cert_file", profile.cert_file)]
        found += [(f"{profile.where}.jdbc_url {key}", path) for key, path in profile.url_files]
    email = config.orchestration.email
    if email is not None:
        found += [
            ("Orchestration.Email.ca_file", email.ca_file),
            ("Orchestration.Email.sendmail_path", email.sendmail_path),
        ]
    if config.secrets_settings.path is not None:
        found.append(("Secrets.Path", config.secrets_settings.path))
    return [(where, path) for where, path in found if path is not None]


def files_check(config: ConnectorConfig) -> list[CheckResult]:
    results = []
    for where, path in configured_files(config):
        if not path.exists():
            results.append(CheckResult("Files", FAIL, f"{where}: {path} does not exist; create it or correct {where}"))
        elif not path.is_file():
            results.append(CheckResult("Files", FAIL, f"{where}: {path} is not a file; name the file itself"))
        elif not os.access(path, os.R_OK):
            results.append(
                CheckResult("Files", FAIL, f"{where}: {path} can't be read by this user; fix its permissions")
            )
        else:
            results.append(CheckResult("Files", OK, f"{where}: {path} is readable"))
    return results


def _writable_folder(path: Path) -> str | None:
    """Why a folder can't be written (or created), else None."""
    if path.exists():
        if not path.is_dir():
            return f"{path} is not a folder"
        return None if os.access(path, os.W_OK | os.X_OK) else f"{path} can't be written by this user"
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{path} does not exist and {parent} can't be written to create it"
    return None


def folders_check(config: ConnectorConfig) -> list[CheckResult]:
    problems = []
    present: list[str] = []
    absent: list[str] = []
    for name in PROJECT_FOLDERS:
        path = config.project_dir / name
        if path.exists() and not path.is_dir():
            problems.append(f"{path} is not a folder")
        (present if path.is_dir() else absent).append(f"{name}/")
    log_problem = _writable_folder(config.orchestration.log_dir)
    if log_problem:
        problems.append(f"Orchestration.Log_dir: {log_problem}")
    if problems:
        return [CheckResult("Project folders", FAIL, "; ".join(problems))]
    seen = [", ".join(names) + state for names, state in ((present, " present"), (absent, " absent")) if names]
    detail = f"in {config.project_dir}: " + "; ".join(seen)
    return [CheckResult("Project folders", OK, f"{detail}; logs go to {config.orchestration.log_dir}")]


def gates_check(config: ConnectorConfig) -> list[CheckResult]:
    gates = config.orchestration.dependency_gates
    if gates == "enforce":
        return [CheckResult("Dependency gates", OK, "enforce: runs wait for the pipelines and tasks they depend on")]
    effect = "checked but never hold a run back" if gates == "warn" else "not checked at all"
    return [
        CheckResult(
            "Dependency gates",
            WARN,
            f"Orchestration.Dependency_gates is {gates}: cross-pipeline dependencies are {effect}; "
            "use enforce outside development",
        )
    ]
