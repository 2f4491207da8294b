"""Sensitive task parameters (Redaction.Sensitive_patterns, S7.C): which ones, their shown form, their values.

The patterns judge the names a team chooses for values it hands its own scripts: the parameters of
PYTHON tasks (scripts read any name through `task.task_params`) and the keys of their INPUT_PARAMS,
at any depth. SCRIPT_NAME and INPUT_PARAMS themselves, and the parameters of SQL, BUSINESS_RULES and
EMAIL_ALERT tasks, are etl-craft's own settings, none of which holds a secret (`MERGE_KEY` names
columns): they are always shown, so the default `*KEY*` does not hide them or mask column names in logs.
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from etl_craft.core.enums import Handler
from etl_craft.core.text import REDACTED

DEFAULT_PATTERNS = ("*TOKEN*", "*SECRET*", "*PASSWORD*", "*KEY*")
SCRIPT_SETTINGS = ("SCRIPT_NAME", "INPUT_PARAMS")  # PYTHON parameters etl-craft reads itself
INPUT_PARAMS = "INPUT_PARAMS"
# Shorter values are hidden where parameters are shown but not masked in logs: a value such as
# `true` or `Y` would otherwise become *** everywhere in every log of the task.
MIN_MASKED_LENGTH = 6


@lru_cache(maxsize=16)
def _compiled(patterns: tuple[str, ...]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns), re.IGNORECASE)


def _masked_json(value: Any, names: SensitiveNames) -> tuple[Any, bool]:
    """The JSON value with every value under a sensitive key replaced by ***, and whether any was."""
    if isinstance(value, dict):
        out, hit = {}, False
        for key, item in value.items():
            if names.matches(str(key)):
                out[key], hit = REDACTED, True
            else:
                out[key], inner = _masked_json(item, names)
                hit = hit or inner
        return out, hit
    if isinstance(value, list):
        pairs = [_masked_json(item, names) for item in value]
        return [p[0] for p in pairs], any(p[1] for p in pairs)
    return value, False


def _leaves(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, str):
        yield value


def _json_values(value: Any, names: SensitiveNames) -> Iterator[str]:
    """The strings under sensitive keys, at any depth."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item) if names.matches(str(key)) else _json_values(item, names)
    elif isinstance(value, list):
        for item in value:
            yield from _json_values(item, names)


def _json_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


@dataclass(frozen=True)
class SensitiveNames:
    """Shell-style patterns (`*TOKEN*`), matched against whole names in any case."""

    patterns: tuple[str, ...] = DEFAULT_PATTERNS

    def matches(self, name: str) -> bool:
        compiled = _compiled(self.patterns)
        return compiled is not None and compiled.match(name) is not None

    def judged(self, handler: str, name: str) -> bool:
        """Whether a task parameter's value is hidden: a PYTHON task's own parameter matching a pattern."""
        return handler == Handler.PYTHON.value and name not in SCRIPT_SETTINGS and self.matches(name)

    def shown(self, handler: str, parameters: Mapping[str, str]) -> dict[str, str]:
        """The parameters as they may be shown: sensitive values replaced by ***.

        An INPUT_PARAMS that is not a JSON object can't be judged key by key, so it is hidden whole
        (the task fails on it anyway, and validate names the problem without showing the text).
        """
        shown: dict[str, str] = {}
        for name, value in parameters.items():
            if self.judged(handler, name):
                shown[name] = REDACTED
            elif handler == Handler.PYTHON.value and name == INPUT_PARAMS and value is not None:
                parsed = _json_object(value)
                if parsed is None:
                    shown[name] = REDACTED
                    continue
                masked, hit = _masked_json(parsed, self)
                shown[name] = json.dumps(masked, ensure_ascii=False) if hit else value
            else:
                shown[name] = value
        return shown

    def values(self, handler: str, parameters: Mapping[str, str]) -> frozenset[str]:
        """The sensitive values of a task's parameters, to be masked in its logs (long enough ones)."""
        found: set[str] = set()
        for name, value in parameters.items():
            if value is None:
                continue
            if self.judged(handler, name):
                found.add(value)
            elif handler == Handler.PYTHON.value and name == INPUT_PARAMS:
                parsed = _json_object(value)
                if parsed is not None:
                    found.update(_json_values(parsed, self))
        return frozenset(v for v in found if len(v.strip()) >= MIN_MASKED_LENGTH)
