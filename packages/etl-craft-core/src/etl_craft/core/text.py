"""Text rules shared by every layer: codes, near-miss suggestions and credential redaction."""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

CODE_RULE = "^[A-Za-z][A-Za-z0-9_]{0,127}$"
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
