"""Typed reading of single settings: variables vs values, whole numbers, booleans, choices, paths.

Every setting goes through a Reader so that each rule exists once: a setting whose text names a
variable takes the variable's value, numbers are plain decimal digits within a range, and every
refusal names the file, the key path and its line, the value found, what was expected and the
remedy. Secret fields are never read as values: only the name of the variable is kept.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from etl_craft.config.secrets import VARIABLE_NAME, SecretSource
from etl_craft.config.yaml_strict import KeyPath, YamlDocument, show_path
from etl_craft.core.errors import ConfigurationError
from etl_craft.core.text import did_you_mean, one_line

# Text that a reader would take for a variable name: upper case with at least one underscore.
LOOKS_LIKE_VARIABLE = re.compile(r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+")
_NOT_SHOWN = "text that is not a variable name (not shown, as it may be a secret)"


@dataclass
class Context:
    """What every reader shares: the file, its parsed document and the variables' source."""

    file: Path  # the config file, absolute; a symlink is kept so paths resolve from its folder
    doc: YamlDocument
    source: SecretSource
    literals: list[tuple[str, str]] = field(default_factory=list)

    @property
    def project_dir(self) -> Path:
        return self.file.parent

    def subject(self, path: KeyPath) -> str:
        line = self.doc.line(path)
        return f"{self.file.name}: {show_path(path)}" + (f" (line {line})" if line else "")

    def error(
        self,
        path: KeyPath,
        what: str | None = None,
        *,
        found: str | None = None,
        expected: str | None = None,
        remedy: str | None = None,
    ) -> ConfigurationError:
        subject = self.subject(path) + (f": {what}" if what else "")
        return ConfigurationError(subject, found=found, expected=expected, remedy=remedy)

    def resolve_path(self, text: str) -> Path:
        """A path relative to the config's folder, made absolute without following symlinks."""
        return (self.project_dir / Path(text)).absolute()


@dataclass(frozen=True)
class Setting:
    value: object
    path: KeyPath  # where the value was written, e.g. ("Engine", "prod", "schema")


def normalise_choice(text: str, allowed: tuple[str, ...]) -> str | None:
    """The allowed spelling matching `text` case-insensitively (`-` read as `_`), or None."""
    wanted = text.strip().lower().replace("-", "_")
    for option in allowed:
        if option.lower() == wanted:
            return option
    return None


def profile_variable(name: str, profile: str) -> str:
    """The profile-specific form of a variable name: the profile upper-cased (anything but letters
    and digits becoming `_`), inserted after the first `_`-separated segment, or appended after an
    `_` when the name has no `_`. ENGINE_SECRET/prod gives ENGINE_PROD_SECRET; PGPASS gives PGPASS_PROD.
    """
    tag = re.sub(r"[^A-Za-z0-9]", "_", profile).upper()
    head, underscore, tail = name.partition("_")
    return f"{head}_{tag}_{tail}" if underscore else f"{name}_{tag}"


def show(text: str, variable: str | None = None) -> str:
    """A found value for a message, noting the variable it came from."""
    shown = repr(one_line(text, 120))
    return shown + (f" (from variable {variable})" if variable else "")


class Reader:
    """The effective settings of one block (section-level keys overlaid by the active profile)."""

    def __init__(
        self,
        ctx: Context,
        where: KeyPath,
        settings: Mapping[str, Setting],
        selected_profile: str | None,
    ) -> None:
        self.ctx = ctx
        self.where = where
        self.settings = dict(settings)
        self.selected_profile = selected_profile

    @property
    def profile_block(self) -> str | None:
        """The name of the section's active profile block; None when the section has none."""
        return self.where[1] if len(self.where) == 2 else None

    def get(self, key: str) -> Setting | None:
        """The setting, or None when absent or written without a value (`key:` means not set)."""
        setting = self.settings.get(key)
        return None if setting is None or setting.value is None else setting

    def has(self, key: str) -> bool:
        return self.get(key) is not None

    def present(self, keys: tuple[str, ...]) -> list[str]:
        return [key for key in keys if self.has(key)]

    def path_of(self, key: str) -> KeyPath:
        setting = self.settings.get(key)
        return setting.path if setting is not None else (*self.where, key)

    def error(self, key: str, what: str | None = None, **parts: str | None) -> ConfigurationError:
        return self.ctx.error(self.path_of(key), what, **parts)

    def missing(self, key: str, expected: str, remedy: str | None = None) -> ConfigurationError:
        block = show_path(self.where)
        line = self.ctx.doc.line(self.where)
        at = f" (block {block} starts at line {line})" if line else ""
        return self.error(key, f"missing{at}", expected=expected, remedy=remedy or f"add {key} to {block}")

    # -- text -------------------------------------------------------------------------------

    def _written(self, setting: Setting) -> str:
        value = setting.value
        if isinstance(value, str):
            return value
        if isinstance(value, dict | list):
            raise self.ctx.error(
                setting.path,
                found="a " + ("mapping" if isinstance(value, dict) else "list"),
                expected="a single value",
                remedy="write one value on the key's line",
            )
        # The text as typed: `off` stays off rather than YAML's False, `0587` stays decimal.
        raw = self.ctx.doc.text(setting.path)
        return raw if raw is not None else str(value)

    def resolve(self, setting: Setting) -> tuple[str, str | None]:
        """(text, variable): the variable's value if the text names a set variable, else the text."""
        text = self._written(setting).strip()
        if isinstance(setting.value, str) and VARIABLE_NAME.fullmatch(text) and self.ctx.source.has(text):
            value = (self.ctx.source.setting(text) or "").strip()
            if not value:
                raise self.ctx.error(
                    setting.path,
                    f"names variable {text}, which is empty in {self.ctx.source.origin(text)}",
                    expected="a non-empty value",
                    remedy=f"give {text} a value, or unset it to use the text {text!r} literally",
                )
            return value, text
        if LOOKS_LIKE_VARIABLE.fullmatch(text):
            self.ctx.literals.append((show_path(setting.path), text))
        return text, None

    def text(self, key: str, default: str | None = None) -> str | None:
        setting = self.get(key)
        if setting is None:
            return default
        text, _ = self.resolve(setting)
        if not text:
            raise self.error(key, found="an empty text", expected="a value", remedy=f"remove {key} or give it a value")
        return text

    def required_text(self, key: str, expected: str) -> str:
        text = self.text(key)
        if text is None:
            raise self.missing(key, expected)
        return text

    def texts(self, key: str) -> tuple[str, ...]:
        """A list of texts: a YAML list, or one text of comma-separated items."""
        setting = self.get(key)
        if setting is None:
            return ()
        if isinstance(setting.value, list):
            items: list[str] = []
            for position, item in enumerate(setting.value):
                if item is None:
                    continue
                text, _ = self.resolve(Setting(item, (*setting.path, str(position))))
                items.extend(part.strip() for part in text.split(",") if part.strip())
            return tuple(items)
        text, _ = self.resolve(setting)
        return tuple(part.strip() for part in text.split(",") if part.strip())

    # -- typed values -----------------------------------------------------------------------

    def whole(self, key: str, default: int, minimum: int, maximum: int) -> int:
        setting = self.get(key)
        if setting is None:
            return default
        expected = f"a whole number from {minimum} to {maximum}, written with the digits 0-9"
        if isinstance(setting.value, bool):
            raise self.error(key, found=f"the boolean {self._written(setting)}", expected=expected)
        text, variable = self.resolve(setting)
        if not (text.isascii() and text.isdigit()):
            raise self.error(key, found=show(text, variable), expected=expected)
        number = int(text)
        if not minimum <= number <= maximum:
            raise self.error(key, found=show(text, variable), expected=expected)
        return number

    def optional_whole(self, key: str, minimum: int, maximum: int) -> int | None:
        return self.whole(key, 0, minimum, maximum) if self.has(key) else None

    def boolean(self, key: str, default: bool) -> bool:
        setting = self.get(key)
        if setting is None:
            return default
        if isinstance(setting.value, bool):
            return setting.value
        text, variable = self.resolve(setting)
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise self.error(key, found=show(text, variable), expected="true or false")

    def choice(self, key: str, allowed: tuple[str, ...], default: str | None = None) -> str | None:
        setting = self.get(key)
        if setting is None:
            return default
        text, variable = self.resolve(setting)
        chosen = normalise_choice(text, allowed)
        if chosen is None:
            raise self.error(
                key,
                found=show(text, variable),
                expected="one of " + ", ".join(allowed),
                remedy=f"write one of the expected values{did_you_mean(text, allowed)}",
            )
        return chosen

    def path(self, key: str, default: str | None = None) -> Path | None:
        text = self.text(key, default)
        return None if text is None else self.ctx.resolve_path(text)

    # -- secrets ----------------------------------------------------------------------------

    def secret_var(self, key: str) -> str | None:
        """The name of the variable holding this secret, checked to be set and non-empty.

        For a selected profile, a profile-specific variable (ENGINE_PROD_SECRET) wins over the
        plain one (ENGINE_SECRET); the name that was used is returned.
        """
        setting = self.get(key)
        if setting is None:
            return None
        written = setting.value.strip() if isinstance(setting.value, str) else ""
        if not VARIABLE_NAME.fullmatch(written):
            raise self.ctx.error(
                setting.path,
                "must name a variable",
                found=_NOT_SHOWN,
                expected="the name of a variable (letters, digits and _) that holds the secret",
                remedy=f"put the secret in a variable and write the variable's name in {key}",
            )
        wanted_by = self.ctx.subject(setting.path)
        chosen = written
        if self.selected_profile is not None:
            specific = profile_variable(written, self.selected_profile)
            if self.ctx.source.has_secret(specific):
                chosen = specific
            else:
                wanted_by += f" (for profile {self.selected_profile}, {specific} is tried first)"
        self.ctx.source.value(chosen, wanted_by=wanted_by)
        return chosen
