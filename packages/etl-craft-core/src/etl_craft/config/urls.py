"""JDBC URLs: the rules every database's URL form shares.

The URL decides the database kind, so it is checked once, when the configuration loads, by the form
of its database (config/dialects/ for the Engine DB's, `WarehouseKind.parse_url` for a warehouse's):
no in-memory databases (every task runs in its own process and would see an empty one), no
credentials in the query string (they would reach logs and override the configured secret), and
files named by the URL resolved beside the config so every command finds the same file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl

from etl_craft.core.errors import ConfigurationError
from etl_craft.core.text import CREDENTIAL_KEYS, redact_url

# libpq also takes the client key's passphrase as `sslpassword`; it is refused like the others.
URL_CREDENTIAL_KEYS = CREDENTIAL_KEYS | {"sslpassword"}
URL_FILE_KEYS = ("sslrootcert", "sslcert", "sslkey")

# refuse(what, found=..., expected=..., remedy=...) builds the error naming the jdbc_url setting.
Refuse = Callable[..., ConfigurationError]
Resolve = Callable[[str], Path]


@dataclass(frozen=True)
class JdbcTarget:
    kind: str  # the database's name: an Engine DB dialect's, or a warehouse dialect's
    url: str  # file URLs rewritten to the absolute file; PostgreSQL as written
    url_files: tuple[tuple[str, Path], ...] = ()


def url_kind(url: str) -> str:
    """The subprotocol of a JDBC URL in lower case (`postgresql`, `sqlite`, ...), or '' if none."""
    if not url.lower().startswith("jdbc:"):
        return ""
    return url[5:].split(":", 1)[0].lower()


def shown_url(url: str) -> str:
    """The URL for a message: quoted, with any password or credential-like query value masked."""
    if url.lower().startswith("jdbc:"):
        return repr(url[:5] + redact_url(url[5:]))
    return repr(redact_url(url))


def refuse_credentials(query: str, refuse: Refuse) -> list[tuple[str, str]]:
    pairs = parse_qsl(query, keep_blank_values=True)
    for key, _ in pairs:
        if key.lower() in URL_CREDENTIAL_KEYS:
            raise refuse(
                f"the query setting {key!r} carries a credential",
                expected="a URL without password, token or secret settings",
                remedy="put the secret in a variable and name it in `secret`",
            )
    return pairs
