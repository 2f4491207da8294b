"""The text rules every layer shares: the one escape of control characters, operator text, run keys
and where a file stops being UTF-8."""

from __future__ import annotations

import json

import pytest

from etl_craft.core.errors import UsageError
from etl_craft.core.text import (
    OPERATOR_TEXT_LIMIT,
    json_printable,
    not_utf8,
    operator_text,
    printable,
    run_key_text,
)

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2J\x1b[Hclear", "\\x1b[2J\\x1b[Hclear"),  # an escape sequence that repaints the screen
        ("\x9b31m", "\\x9b31m"),  # the one-byte C1 control sequence introducer
        ("line\nfake line\r\t", "line\\nfake line\\r\\t"),
        ("abc\u202edcba\u2066", "abc\\u202edcba\\u2066"),  # bidi override and isolate
        ("\u2028\u2029\x7f\x00", "\\u2028\\u2029\\x7f\\x00"),
        ("\udcff", "\\udcff"),  # a byte that was not UTF-8, as Python decodes it
        ("caf\u00e9 \u4e2d\u6587 \U0001f600 back\\slash", "caf\u00e9 \u4e2d\u6587 \U0001f600 back\\slash"),
    ],
)
def test_printable_escapes_what_a_terminal_acts_on_and_keeps_the_rest(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert printable(shown) == shown  # nothing left to escape
    shown.encode("utf-8")  # and always writable to a UTF-8 stream


def test_json_printable_keeps_the_values_and_escapes_the_characters() -> None:
    value = {"reason": "\x1b[31m\x9b\u202e\udcff\u00e9", "n": 1}
    text = json_printable(json.dumps(value, indent=2, ensure_ascii=False))
    assert json.loads(text) == value
    assert "\\u009b" in text and "\\u202e" in text and "\\udcff" in text and "\u00e9" in text
    assert printable(text) == text.replace("\n", "\\n")  # only the document's own line breaks remain


def test_operator_text_is_kept_as_given_up_to_the_limit() -> None:
    given = "\x1b[2J" + "x" * (OPERATOR_TEXT_LIMIT - 4)
    assert operator_text(given, "--reason") == given
    with pytest.raises(UsageError) as refused:
        operator_text(given + "y", "--reason")
    assert refused.value.message == (
        f"--reason: found {OPERATOR_TEXT_LIMIT + 1} characters; expected UTF-8 text of at most "
        f"{OPERATOR_TEXT_LIMIT} characters. Shorten or correct it (a ticket or document reference can carry "
        "a long explanation)"
    )


@pytest.mark.parametrize(("text", "found"), [("a\x00b", "a NUL character"), ("a\udcffb", "bytes that are not UTF-8")])
def test_operator_text_the_engine_db_cant_store_is_refused(text: str, found: str) -> None:
    with pytest.raises(UsageError, match=found):
        operator_text(text, "--reason")


@pytest.mark.parametrize(
    ("key", "found"), [("", "an empty key"), ("k" * 201, "201 characters"), ("daily\x1b", "the character \\x1b")]
)
def test_run_keys_are_one_printable_line(key: str, found: str) -> None:
    assert run_key_text("daily:2026-10-07", "--run-key") == "daily:2026-10-07"
    with pytest.raises(UsageError, match=found.replace("\\", "\\\\")):
        run_key_text(key, "--run-key")


def test_not_utf8_names_the_line_column_and_byte() -> None:
    data = "SELECT 1;\n-- caf\u00e9 ".encode() + b"\xff\n"
    with pytest.raises(UnicodeDecodeError) as error:
        data.decode("utf-8")
    assert not_utf8(data, error.value) == "bytes that are not UTF-8 at line 2, column 9 (byte 0xff)"
