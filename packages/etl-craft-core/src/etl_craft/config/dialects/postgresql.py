"""PostgreSQL's JDBC URL form: the Engine DB's, and the PostgreSQL warehouse dialect's too."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from etl_craft.config.dialects.form import EngineForm
from etl_craft.config.urls import URL_FILE_KEYS, JdbcTarget, Refuse, Resolve, refuse_credentials, shown_url

POSTGRES_FORM = "jdbc:postgresql://host[:port]/database[?settings]"


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
    return JdbcTarget("postgresql", url, tuple(files))


def postgres_address(url: str) -> tuple[str, int, str]:
    """(host, port, database) of a PostgreSQL JDBC URL, comparable between two profiles."""
    parts = urlsplit(url.removeprefix("jdbc:"))
    return (parts.hostname or "").lower(), parts.port or 5432, parts.path.lstrip("/")


POSTGRESQL = EngineForm(
    name="postgresql",
    title="PostgreSQL",
    display_name="Postgres",
    url_form=POSTGRES_FORM,
    parse=parse_postgres,
    file=False,
    address=postgres_address,
)
