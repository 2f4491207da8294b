"""JDBC URLs: the Engine DB's, and the rules warehouse dialects share when they parse theirs.

The URL decides the database kind, so it is checked here once: the forms this release supports,
no in-memory databases (every task runs in its own process and would see an empty one), no
credentials in the query string (they would reach logs and override the configured secret), and
files named by the URL resolved beside the config so every command finds the same file. A warehouse
URL is parsed by its dialect (`WarehouseKind.parse_url`), which uses the helpers here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from etl_craft.core.errors import ConfigurationError
from etl_craft.core.text import CREDENTIAL_KEYS, redact_url

# libpq also takes the client key's passphrase as `sslpassword`; it is refused like the others.
URL_CREDENTIAL_KEYS = CREDENTIAL_KEYS | {"sslpassword"}
URL_FILE_KEYS = ("sslrootcert", "sslcert", "sslkey")

POSTGRES_FORM = "jdbc:postgresql://host[:port]/database[?settings]"
SQLITE_FORM = "jdbc:sqlite:<file>"

# refuse(what, found=..., expected=..., remedy=...) builds the error naming the jdbc_url setting.
Refuse = Callable[..., ConfigurationError]
Resolve = Callable[[str], Path]


@dataclass(frozen=True)
class JdbcTarget:
    kind: str  # the Engine DB's "postgres" | "sqlite"; a warehouse dialect's name
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


def parse_postgres(url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
    parts = urlsplit(url[len("jdbc:") :])
    if "@" in parts.netloc:
        userinfo = parts.netloc.rpartition("@")[0]
        if ":" in userinfo:
            raise refuse(
                "the URL carries a password",
                expected=POSTGRES_FORM,
                remedy="put the secret in a variable and name it in `secret`",
            )
        raise refuse(
            "the URL carries a login name",
            found=shown_url(url),
            expected=POSTGRES_FORM,
            remedy="remove it from the URL and write it in `user`",
        )
    try:
        port = parts.port
    except ValueError:
        port = -1
    database = parts.path[1:] if parts.path.startswith("/") else ""
    if not parts.hostname or port in (-1, 0) or not database or "/" in database or parts.fragment:
        raise refuse(
            found=shown_url(url),
            expected=f"{POSTGRES_FORM} with a port from 1 to 65535 if given",
            remedy="write the host, optional port and database name in that form",
        )
    files: list[tuple[str, Path]] = []
    for key, value in refuse_credentials(parts.query, refuse):
        if key.lower() not in URL_FILE_KEYS:
            continue
        if not value:
            raise refuse(
                f"the query setting {key!r} is empty",
                expected="a file path",
                remedy=f"name the file or remove {key}",
            )
        if key.lower() == "sslrootcert" and value == "system":
            continue  # libpq's keyword for the system's trusted CAs, not a file
        files.append((key.lower(), resolve(value)))
    return JdbcTarget("postgres", url, tuple(files))


def postgres_address(url: str) -> tuple[str, int, str]:
    """(host, port, database) of a PostgreSQL JDBC URL, comparable between two profiles."""
    parts = urlsplit(url.removeprefix("jdbc:"))
    return (parts.hostname or "").lower(), parts.port or 5432, parts.path.lstrip("/")


def parse_sqlite(url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
    rest = url[len("jdbc:sqlite:") :]
    in_memory = (
        rest in ("", ":memory:")
        or rest.startswith("file::memory:")
        or (rest.startswith("file:") and "mode=memory" in rest)
    )
    if in_memory:
        raise refuse(
            "an in-memory SQLite database",
            found=shown_url(url),
            expected=f"{SQLITE_FORM}, e.g. jdbc:sqlite:engine.db",
            remedy="name a file: each task runs in its own process and would see an empty in-memory database",
        )
    if rest.startswith("file:"):
        raise refuse(
            found=shown_url(url),
            expected=f"{SQLITE_FORM} with a plain path",
            remedy="write the file path without file: and URI settings, e.g. jdbc:sqlite:engine.db",
        )
    return JdbcTarget("sqlite", f"jdbc:sqlite:{resolve(rest)}")


def parse_engine_url(url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
    kind = url_kind(url)
    if kind == "sqlite":
        return parse_sqlite(url, resolve, refuse)
    if kind == "postgresql":
        return parse_postgres(url, resolve, refuse)
    raise refuse(
        found=shown_url(url),
        expected=f"{SQLITE_FORM} or {POSTGRES_FORM}",
        remedy="use a SQLite file for one machine or PostgreSQL for several",
    )
