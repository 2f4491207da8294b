"""Finding and loading craft-connector.yml.

Every path the file names is resolved from the folder holding it. That folder is taken with
`Path.absolute()`, never `resolve()`: for a symlinked config, the project is where the link is,
so a shared file linked into several projects finds each project's own files.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from etl_craft.config.connections import parse_engine
from etl_craft.config.layout import check_layout
from etl_craft.config.logs import parse_logs
from etl_craft.config.model import CloningSettings, ConnectorConfig, LogSettings, RetentionSettings, SecretsSettings
from etl_craft.config.providers import ProviderSettings, SecretsProvider
from etl_craft.config.retention import parse_retention
from etl_craft.config.secrets import SecretSource
from etl_craft.config.sections import (
    parse_cloning,
    parse_docs_site,
    parse_orchestration,
    parse_redaction,
    parse_secrets,
)
from etl_craft.config.values import Context
from etl_craft.config.warehouses import parse_warehouse
from etl_craft.config.yaml_strict import load_yaml
from etl_craft.core.errors import ConfigurationError

CONFIG_NAME = "craft-connector.yml"
NESTED_CONFIG = Path("etl-craft") / CONFIG_NAME
CONFIG_VARIABLE = "ETL_CRAFT_CONFIG"


def _named_file(text: str | Path, cwd: Path, how: str) -> Path:
    if str(text) == "":
        raise ConfigurationError(f"{how} is empty", expected="the path of a craft-connector.yml file")
    path = (cwd / Path(text)).absolute()
    if not path.exists():
        raise ConfigurationError(
            f"{how} names {path}, which does not exist",
            expected="an existing craft-connector.yml file",
            remedy=f"correct the path given by {how}",
        )
    if not path.is_file():
        raise ConfigurationError(
            f"{how} names {path}, which is not a file",
            expected="the path of the craft-connector.yml file itself",
            remedy=f"name the file, e.g. {path / CONFIG_NAME}",
        )
    return path


def find_config(explicit: str | Path | None, environ: Mapping[str, str], cwd: Path) -> Path:
    """The config file: --config PATH, else $ETL_CRAFT_CONFIG, else the nearest folder upwards
    from `cwd` holding craft-connector.yml or etl-craft/craft-connector.yml (never both).

    The result is absolute but not resolved, so a symlink stays a symlink.
    """
    cwd = Path(cwd).absolute()
    if explicit is not None:
        return _named_file(explicit, cwd, "--config")
    named = environ.get(CONFIG_VARIABLE)
    if named:
        return _named_file(named, cwd, CONFIG_VARIABLE)
    for folder in (cwd, *cwd.parents):
        found = [candidate for candidate in (folder / CONFIG_NAME, folder / NESTED_CONFIG) if candidate.is_file()]
        if len(found) > 1:
            raise ConfigurationError(
                f"two config files in {folder}: {found[0]} and {found[1]}",
                expected="one craft-connector.yml per folder",
                remedy=f"remove or rename one of them, or choose one with --config PATH or {CONFIG_VARIABLE}",
            )
        if found:
            return found[0]
    raise ConfigurationError(
        f"no {CONFIG_NAME} in {cwd} or any folder above it",
        expected=f"{cwd / NESTED_CONFIG}",
        remedy=(
            f"create {NESTED_CONFIG} here (docs/reference/configuration.md has complete examples), "
            f"or name the file with --config PATH or {CONFIG_VARIABLE}"
        ),
    )


def _provider(ctx: Context, settings: SecretsSettings, provider: type[SecretsProvider]) -> SecretsProvider:
    """The configured secrets provider, given its keys; it checks them and contacts nothing yet."""

    def error(key: str, what: str | None = None, **parts: str | None) -> ConfigurationError:
        return ctx.error(("Secrets", key), what, **parts)

    return provider(
        ProviderSettings(
            source_type=settings.source_type,
            options=dict(settings.options),
            timeout_seconds=settings.timeout_seconds,
            project_dir=ctx.project_dir,
            error=error,
        )
    )


def load_config(path: Path, environ: Mapping[str, str] | None = None) -> ConnectorConfig:
    """Read, check and resolve a craft-connector.yml; any problem is a ConfigurationError (exit 3).

    `environ` defaults to the process environment; it is copied, so later changes have no effect.
    Secrets are checked now, for the selected profiles only, and the result names them by variable.
    """
    environ = os.environ if environ is None else environ
    file = Path(path).absolute()
    ctx = Context(file, load_yaml(file), SecretSource(environ))
    data = check_layout(ctx, ctx.doc.data)

    secrets_settings, secrets_reader, provider = parse_secrets(ctx, data.get("Secrets"))
    if secrets_settings.path is not None:
        ctx.source = SecretSource(environ, secrets_settings.path)
    if provider is not None:
        chosen = _provider(ctx, secrets_settings, provider)
        ctx.source = SecretSource(environ, provider=chosen, cache_seconds=secrets_settings.cache_seconds)
    profile = secrets_reader.text("Profile")
    secrets_settings = replace(secrets_settings, profile=profile)

    orchestration = parse_orchestration(ctx, data["Orchestration"], profile)
    engine = parse_engine(ctx, data["Engine"], profile)
    warehouse = parse_warehouse(ctx, data["Warehouse"], profile) if "Warehouse" in data else None
    cloning = (
        parse_cloning(ctx, data["Cloning"], profile, has_warehouse=warehouse is not None)
        if "Cloning" in data
        else CloningSettings()
    )
    docs_site = parse_docs_site(ctx, data["Docs_site"], profile) if "Docs_site" in data else None
    logs = parse_logs(ctx, data["Logs"]) if "Logs" in data else LogSettings()
    retention = parse_retention(ctx, data["Retention"]) if "Retention" in data else RetentionSettings()
    redaction = parse_redaction(ctx, data.get("Redaction"))
    return ConnectorConfig(
        path=file,
        project_dir=file.parent,
        secrets_settings=secrets_settings,
        orchestration=orchestration,
        engine=engine,
        warehouse=warehouse,
        cloning=cloning,
        docs_site=docs_site,
        logs=logs,
        retention=retention,
        redaction=redaction,
        literal_variables=tuple(dict.fromkeys(ctx.literals)),
        secrets=ctx.source,
    )
