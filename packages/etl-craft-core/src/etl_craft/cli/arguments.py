"""Argument types: a value the command can't use is a usage error (exit 2) naming the flag, the value
found and what is expected, before anything opens the Engine DB."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

from etl_craft.core.errors import UsageError
from etl_craft.core.text import BIGINT_MAX, CODE_LIMIT, has_control, operator_text, run_key_text

_WHOLE = re.compile(r"[+-]?[0-9]+")
_SHOWN = 40  # characters of a refused value shown in the message
# What a file system takes in a path (Linux's NAME_MAX and PATH_MAX, in bytes): a longer one, or one
# with a NUL character, can't name a file at all.
NAME_MAX = 255
PATH_MAX = 4096


def shown(value: str) -> str:
    """A refused value as a message quotes it: repr escapes what isn't printable; a long one is cut."""
    if len(value) <= _SHOWN:
        return repr(value)
    return f"{value[:_SHOWN]!r}… ({len(value)} characters)"


def whole_number(minimum: int, maximum: int = BIGINT_MAX, *, remedy: str = "") -> Callable[[str], int]:
    """A type for an integer flag in [minimum, maximum], written in ASCII digits; `remedy` is a
    sentence the refusal ends with when the flag has a better answer than "give another number"."""

    def parse(text: str) -> int:
        value = int(text) if _WHOLE.fullmatch(text.strip()) else None
        if value is None or not minimum <= value <= maximum:
            message = f"found {shown(text)}; expected a whole number from {minimum} to {maximum}"
            raise argparse.ArgumentTypeError(message + (f". {remedy}" if remedy else ""))
        return value

    parse.__name__ = "whole number"
    return parse


def code(text: str) -> str:
    """A pipeline or task code. One that merely breaks the code rule is looked up (the refusal then
    suggests close matches, `sales-daily` for `sales_daily`); one no code can resemble is refused here."""
    if len(text) > CODE_LIMIT or has_control(text):
        raise argparse.ArgumentTypeError(
            f"found {shown(text)}; expected a code of at most {CODE_LIMIT} characters: "
            "a letter, then letters, digits or _"
        )
    return text


def path(text: str) -> str:
    """A file or folder path: refused when no file system could hold it (the error would name the
    operating system's complaint instead of the flag), or when it holds control characters, which
    every message naming the path would have to carry."""
    encoded = text.encode("utf-8", "surrogateescape")
    too_long = len(encoded) >= PATH_MAX or any(len(part) > NAME_MAX for part in encoded.split(b"/"))
    if has_control(text) or too_long or not text:
        raise argparse.ArgumentTypeError(
            f"found {shown(text)}; expected a path without control characters, of at most {PATH_MAX - 1} "
            f"bytes and {NAME_MAX} bytes per name"
        )
    return text


def _checked(check: Callable[[str, str], str], what: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        try:
            return check(text, what)
        except UsageError as error:
            raise argparse.ArgumentTypeError(f"found {error.found}; expected {error.expected}") from None

    parse.__name__ = what
    return parse


reason = _checked(operator_text, "--reason")
run_key = _checked(run_key_text, "--run-key")
