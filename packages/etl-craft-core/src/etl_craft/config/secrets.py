"""Where the variables named in craft-connector.yml are looked up.

The config file is committed, so it names variables and never holds a secret. A variable is read
from the process environment and, with `Secrets.Source_type: file`, also from a `.env` file. The
process environment wins over the file: a deployment can override one value for one command
without editing the file, the way shells and container runtimes already behave. With a secrets
provider (config/providers.py), secret fields are read from the provider alone, each answer kept
for Cache_seconds, while ordinary settings still read the process environment.

Every secret value handed out is remembered so the log writer can replace it with *** later; the
repr shows counts and the file's path, never a value.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from etl_craft.core.errors import ConfigurationError
from etl_craft.core.text import close_matches

if TYPE_CHECKING:
    from etl_craft.config.providers import SecretsProvider

VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_EXPORT = re.compile(r"export\s+")
_QUOTES = ('"', "'")


def read_env_file(path: Path) -> dict[str, str]:
    """The NAME=value pairs of a `.env` file.

    Read as utf-8-sig because editors on some systems start the file with a byte-order mark, which
    would otherwise become part of the first name. Blank lines and lines starting with `#` are
    skipped, a leading `export ` is dropped (so the file can also be sourced by a shell), and one
    pair of matching quotes around a value is removed. Everything else after `=` is the value: a
    `#` later on the line is part of it. A name written twice is refused, as in the YAML file.
    Messages name the line, never its text, since the text may be a secret.
    """
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise ConfigurationError(
            f"secrets file {path}: no such file",
            expected="the .env file named by Secrets.Path (relative to the config's folder)",
            remedy="create it, correct Secrets.Path, or use Source_type: environment",
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigurationError(
            f"secrets file {path}: cannot be read",
            found=type(exc).__name__,
            expected="a readable UTF-8 file of NAME=value lines",
            remedy="check the file's permissions and encoding",
        ) from None
    values: dict[str, str] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        export = _EXPORT.match(stripped)
        if export:
            stripped = stripped[export.end() :]
        name, equals, value = stripped.partition("=")
        name = name.strip()
        if not equals or not VARIABLE_NAME.fullmatch(name):
            raise ConfigurationError(
                f"secrets file {path}: line {number} is not a NAME=value line",
                expected="NAME=value, with NAME made of letters, digits and _",
                remedy="fix that line or start it with # to make it a comment",
            )
        if name in values:
            raise ConfigurationError(
                f"secrets file {path}: variable {name} is set twice (lines {lines[name]} and {number})",
                expected="each variable once",
                remedy="keep one of the lines",
            )
        value = value.strip()
        if len(value) >= 2 and value[0] in _QUOTES and value[-1] == value[0]:
            value = value[1:-1]
        values[name] = value
        lines[name] = number
    return values


class SecretSource:
    """Variables from the process environment and, optionally, a `.env` file (environment wins)."""

    def __init__(
        self,
        environ: Mapping[str, str],
        env_file: Path | None = None,
        provider: SecretsProvider | None = None,
        cache_seconds: int = 0,
    ) -> None:
        self._environ = dict(environ)
        self._env_file = env_file
        self._file_values = read_env_file(env_file) if env_file is not None else {}
        self._resolved: set[str] = set()
        self._provider = provider
        self._cache_seconds = cache_seconds
        self._cache: dict[str, tuple[str | None, float]] = {}  # name -> (answer, time.monotonic() when asked)

    @property
    def provider(self) -> SecretsProvider | None:
        return self._provider

    def _asked(self, name: str) -> str | None:
        """The provider's answer for a secret, kept for at most Cache_seconds (absent ones too)."""
        assert self._provider is not None
        kept = self._cache.get(name)
        now = time.monotonic()
        if kept is not None and now - kept[1] < self._cache_seconds:
            return kept[0]
        answer = self._provider.get(name)
        self._cache[name] = (answer, now)
        return answer

    def has_secret(self, name: str) -> bool:
        """Whether a secret field could read the variable: from the provider, if there is one."""
        return self._asked(name) is not None if self._provider is not None else self.has(name)

    @property
    def env_file(self) -> Path | None:
        return self._env_file

    def has(self, name: str) -> bool:
        """Whether the variable exists in either place (even with an empty value)."""
        return name in self._environ or name in self._file_values

    def setting(self, name: str) -> str | None:
        """The value of a variable used by an ordinary (non-secret) setting, or None if absent.

        Not recorded for redaction: a profile name such as `prod` must not be masked in every log.
        """
        if name in self._environ:
            return self._environ[name]
        return self._file_values.get(name)

    def origin(self, name: str) -> str:
        """Where the variable's value comes from, for messages."""
        if name in self._environ or self._env_file is None:
            return "the process environment"
        return str(self._env_file.name)

    def value(self, name: str, *, wanted_by: str | None = None) -> str:
        """The value of a secret variable; refuses one that is unset, empty or only whitespace.

        `wanted_by` names the setting that asked (e.g. `craft-connector.yml: Engine.prod.secret`).
        """
        prefix = f"{wanted_by}: " if wanted_by else ""
        if self._provider is not None:
            return self._provided(name, prefix)
        found = self.setting(name)
        if found is None:
            near = self.near_misses(name)
            remedy = f"set {name} in {self._places()}"
            if near:
                remedy += f", or correct the name (set variables with close names: {', '.join(near)})"
            raise ConfigurationError(
                f"{prefix}variable {name} is not set",
                expected=f"a non-empty value in {self._places()}",
                remedy=remedy,
            )
        if not found.strip():
            state = "is empty" if not found else "holds only whitespace"
            where = self.origin(name)
            remedy = f"give {name} a value in {where}"
            if where == "the process environment" and self._env_file is not None:
                remedy += f" (the environment wins over {self._env_file}; unset it there to use the file)"
            elif where != "the process environment":
                remedy += f" ({self._env_file})"
            raise ConfigurationError(
                f"{prefix}variable {name} in {where} {state}",
                expected="a secret that is not empty or blank",
                remedy=remedy,
            )
        self._resolved.add(found)
        return found

    def _provided(self, name: str, prefix: str) -> str:
        assert self._provider is not None
        try:
            found = self._asked(name)
        except ConfigurationError as error:
            raise ConfigurationError(
                f"{prefix}{error.subject}", found=error.found, expected=error.expected, remedy=error.remedy
            ) from None
        where = self._provider.description
        if found is None:
            raise ConfigurationError(
                f"{prefix}secret {name} is not in {where}",
                expected=f"a secret named {name} in {where}",
                remedy=f"create the secret {name} there, or correct the name",
            )
        if not found.strip():
            raise ConfigurationError(
                f"{prefix}secret {name} in {where} is empty",
                expected="a secret that is not empty or blank",
                remedy=f"give {name} a value in {where}",
            )
        self._resolved.add(found)
        return found

    def near_misses(self, name: str) -> list[str]:
        """Names that are set and close to `name`, for a 'did you mean' hint."""
        pool = (set(self._environ) | set(self._file_values)) - {name}
        return close_matches(name, sorted(pool))

    def resolved_values(self) -> frozenset[str]:
        """Every secret value handed out by value() so far, for redacting logs."""
        return frozenset(self._resolved)

    def _places(self) -> str:
        if self._env_file is None:
            return "the process environment"
        return f"the process environment or {self._env_file}"

    def __repr__(self) -> str:
        file = f", env_file={str(self._env_file)!r}" if self._env_file is not None else ""
        provider = f", provider={self._provider.description!r}" if self._provider is not None else ""
        return (
            f"SecretSource(environment={len(self._environ)} variables{file}, "
            f"file={len(self._file_values)} variables{provider}, resolved={len(self._resolved)})"
        )

    __str__ = __repr__
