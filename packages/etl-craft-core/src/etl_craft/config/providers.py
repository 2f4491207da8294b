"""Secrets providers: where secret values come from when `Secrets.Source_type` names one (S7.E).

`environment` and `file` are built in (config/secrets.py). Any other Source_type is a provider
found among the entry points of the group `etl_craft.secrets`, by name: etl-craft-core ships
`aws-secrets-manager` that way (extra `aws`), and a plug-in distribution adds others (HashiCorp
Vault, ...) with no change to etl-craft. A provider is a SecretsProvider subclass:

- `keys`: the Secrets keys it reads besides Source_type, Profile, Cache_seconds and
  Timeout_seconds (any other key is refused); `required`: those that must be set;
- `__init__(settings)`: checks its settings (raise `settings.error(key, ...)`), contacts nothing;
- `get(name)`: the value of one secret, or None when the provider holds no secret of that name.
  When the provider can't be asked (no answer within `settings.timeout_seconds`, refused
  credentials), raise ConfigurationError naming the provider, what happened and the remedy.

etl-craft asks for secret fields only (`secret`, `token`, `s3_secret`, `Authtoken`, webhook `url`
and `secret`, and `task.config.secret(...)` in scripts), when the file loads and when a connection
opens, and keeps each answer for `Secrets.Cache_seconds`. Ordinary settings naming a variable
(`Profile: ETL_CRAFT_PROFILE`) still read the process environment: a provider is asked only for
what is secret. A provider's process may fork (task processes start from a fork server), so a
provider keeps no connection it can't reopen in a child.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import ClassVar

from etl_craft.core.errors import ConfigurationError

ENTRY_POINT_GROUP = "etl_craft.secrets"
BUILT_IN = ("environment", "file")


@dataclass(frozen=True)
class ProviderSettings:
    """What a provider is given: its own keys as read (variables resolved), and the common settings."""

    source_type: str
    options: Mapping[str, str]  # the provider's keys that are set, e.g. {"Region": "eu-west-1"}
    timeout_seconds: int  # how long one request may wait for an answer
    project_dir: Path  # for settings that name files
    error: Callable[..., ConfigurationError]  # error(key, what=None, found=..., expected=..., remedy=...)


class SecretsProvider(ABC):
    """One source of secret values, set up from the Secrets section."""

    keys: ClassVar[tuple[str, ...]] = ()
    required: ClassVar[tuple[str, ...]] = ()

    def __init__(self, settings: ProviderSettings) -> None:
        self.settings = settings

    @property
    def description(self) -> str:
        """The provider in messages, e.g. "AWS Secrets Manager (region eu-west-1)"."""
        return self.settings.source_type

    @abstractmethod
    def get(self, name: str) -> str | None:
        """The secret's value, or None when the provider holds no secret of that name."""


def _normalised(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def installed_providers() -> dict[str, metadata.EntryPoint]:
    return {_normalised(entry.name): entry for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def source_types() -> tuple[str, ...]:
    """Every Source_type this installation accepts, built-in ones first."""
    return (*BUILT_IN, *sorted(entry.name for entry in installed_providers().values()))


def find_provider(source_type: str) -> tuple[str, type[SecretsProvider] | None] | None:
    """(the Source_type as spelt by its owner, the provider class or None for a built-in one), or None
    when nothing installed answers to the name (any case, `-` and `_` alike)."""
    wanted = _normalised(source_type)
    for name in BUILT_IN:
        if wanted == name:
            return name, None
    entry = installed_providers().get(wanted)
    if entry is None:
        return None
    provider = entry.load()
    if not (isinstance(provider, type) and issubclass(provider, SecretsProvider)):
        raise ConfigurationError(
            f"entry point {entry.name} of {ENTRY_POINT_GROUP} ({entry.value})",
            found=repr(provider),
            expected="a SecretsProvider subclass (etl_craft.config.providers)",
            remedy="reinstall or fix the distribution that declares the entry point",
        )
    return entry.name, provider
