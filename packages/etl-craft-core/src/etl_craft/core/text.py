"""Text rules shared by every layer: codes, near-miss suggestions, credential redaction, operator text
and the one escape of control characters every printer applies."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from etl_craft.core.errors import UsageError

CODE_RULE = "^[A-Za-z][A-Za-z0-9_]{0,127}$"
CODE_LIMIT = 128
_CODE = re.compile(CODE_RULE)

# Query keys that carry a credential in a JDBC or SQLAlchemy URL (any case).
CREDENTIAL_KEYS = frozenset({"password", "pwd", "passwd", "token", "access_token", "secret", "private_key_file_pwd"})
# Parts of a name that mark its value as a credential ("run_key" or "auth_mode" are not).
_CREDENTIAL_WORDS = (
    "password",
    "passwd",
    "secret",
    "token",
    "credential",
    "api_key",
    "apikey",
    "access_key",
    "private_key",
    "signature",
)

REDACTED = "***"


def is_valid_code(value: str) -> bool:
    return bool(_CODE.fullmatch(value))


def close_matches(word: str, candidates: Iterable[str], limit: int = 3) -> list[str]:
    """Near-miss names for a 'did you mean' hint, compared case-insensitively."""
    pool = {c.lower(): c for c in candidates}
    return [pool[m] for m in difflib.get_close_matches(word.lower(), list(pool), n=limit, cutoff=0.6)]


def did_you_mean(word: str, candidates: Iterable[str]) -> str:
    matches = close_matches(word, candidates)
    return f" (did you mean {', '.join(matches)}?)" if matches else ""


def looks_like_credential(key: str) -> bool:
    lowered = key.lower()
    return lowered in CREDENTIAL_KEYS or any(word in lowered for word in _CREDENTIAL_WORDS)


def redact_url(url: str) -> str:
    """The URL with any password and credential-like query values replaced by ***."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        if ":" in userinfo:
            userinfo = userinfo.split(":", 1)[0] + ":" + REDACTED
        netloc = f"{userinfo}@{hostport}"
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        query = urlencode([(k, REDACTED if looks_like_credential(k) else v) for k, v in pairs], safe="*/:")
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def one_line(text: str, limit: int = 200) -> str:
    """Whitespace collapsed, control characters dropped, capped at `limit` characters with an ellipsis."""
    collapsed = " ".join(text.split())
    cleaned = "".join(ch for ch in collapsed if ch.isprintable())
    if len(cleaned) <= limit:
        return cleaned
    return cleaned[: limit - 1] + "…"


# --- printing text a user or an author wrote ----------------------------------------------------------

# What a terminal may act on instead of showing: C0 and C1 controls and DEL (escape sequences), the
# line and paragraph separators, the bidirectional overrides and isolates that reorder what is shown
# (Trojan Source), and lone surrogates (bytes that were not UTF-8, which a UTF-8 stream can't write).
_C0 = "\x00-\x1f"
_OTHERS = "\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff"
_CONTROLS = re.compile(f"[{_C0}{_OTHERS}]")
# json.dumps escapes C0 controls inside strings, and its own line breaks and indentation are structure.
_JSON_UNSAFE = re.compile(f"[{_OTHERS}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def printable(text: str) -> str:
    """The text with every control character written as a backslash escape (\\n, \\x1b, \\u202e).

    Every printer of text calls it (the CLI's output, its error line, the future HTTP API's pages),
    so stored text (reasons, messages, codes a user typed) can't repaint the reader's terminal or
    fake a line of output. Backslashes are left as they are: `--format json` gives the exact text.
    """
    return _CONTROLS.sub(_escape, text)


def has_control(text: str) -> bool:
    return _CONTROLS.search(text) is not None


def json_printable(json_text: str) -> str:
    """A JSON document's text with the same characters written as \\uXXXX escapes: the document
    decodes to the same values, and printing it shows them instead of acting on them."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


# --- what a user may give -----------------------------------------------------------------------------

# The largest integer either Engine DB stores (BIGINT on PostgreSQL, INTEGER on SQLite): every id,
# count and limit a user gives must fit, whether or not it is compared with a column.
BIGINT_MAX = 2**63 - 1

# --- operator text -----------------------------------------------------------------------------------

# --reason and pause reasons: stored as given, printed through printable().
OPERATOR_TEXT_LIMIT = 2000


def operator_text(text: str, what: str) -> str:
    """The text an operator gave (`what` names where, e.g. --reason), refused when the Engine DB
    can't hold it as given or it is longer than OPERATOR_TEXT_LIMIT characters."""
    found = None
    if len(text) > OPERATOR_TEXT_LIMIT:
        found = f"{len(text)} characters"
    elif "\x00" in text:
        found = "a NUL character (U+0000), which the Engine DB can't store"
    elif re.search("[\ud800-\udfff]", text):
        found = "bytes that are not UTF-8"
    if found is not None:
        raise UsageError(
            what,
            found=found,
            expected=f"UTF-8 text of at most {OPERATOR_TEXT_LIMIT} characters",
            remedy="shorten or correct it (a ticket or document reference can carry a long explanation)",
        )
    return text


# A run key a user gives (`--run-key daily:2026-10-07`); generated ones are far shorter.
RUN_KEY_LIMIT = 200


def run_key_text(key: str, what: str) -> str:
    """A run key as stored and looked up: one line of at most RUN_KEY_LIMIT printable characters."""
    found = None
    if not key.strip():
        found = "an empty key"
    elif len(key) > RUN_KEY_LIMIT:
        found = f"{len(key)} characters"
    elif (control := _CONTROLS.search(key)) is not None:
        found = f"the character {printable(control.group())}"
    if found is not None:
        raise UsageError(
            what,
            found=found,
            expected=f"a run key of 1 to {RUN_KEY_LIMIT} characters, none of them a control character",
            remedy="see etl-craft history for the keys of a pipeline's runs",
        )
    return key


def not_utf8(data: bytes, error: UnicodeDecodeError) -> str:
    """Where a file stops being UTF-8, for a `found=`: the line, the column and the byte."""
    line = data.count(b"\n", 0, error.start) + 1
    line_start = data.rfind(b"\n", 0, error.start) + 1
    column = len(data[line_start : error.start].decode("utf-8", errors="replace")) + 1
    return f"bytes that are not UTF-8 at line {line}, column {column} (byte 0x{data[error.start]:02x})"
