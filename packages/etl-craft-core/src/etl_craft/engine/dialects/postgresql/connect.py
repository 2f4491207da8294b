"""Connecting to PostgreSQL with psycopg 3: the driver arguments of a profile and the actor on every write.

The password (or token, or key passphrase) is handed to the driver as a connection argument, so it
never appears in a URL that could be logged. The warehouse dialect for PostgreSQL connects the same way.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import sqlalchemy as sa

from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.core.errors import ConfigurationError
from etl_craft.core.text import redact_url
from etl_craft.engine.database import current_marker

_PLAIN_SCHEMA = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")
CONNECT_TIMEOUT_SECONDS = 10


# The marker (actor, actor kind, migration, purpose) a pooled connection's session holds, in the
# connection's info, which SQLAlchemy clears when it replaces the DBAPI connection.
_SESSION_MARKER = "etl_craft_session_marker"
_SET_MARKER = (
    "SELECT set_config('etl_craft.actor', %(actor)s, %(local)s),"
    " set_config('etl_craft.actor_kind', %(kind)s, %(local)s),"
    " set_config('etl_craft.migration', %(migration)s, %(local)s),"
    " set_config('etl_craft.purpose', %(purpose)s, %(local)s)"
)


def on_begin(conn: sa.Connection) -> None:
    """Give a write transaction its marker. A plain marker is set for the session and not again while
    the session holds it: a round trip less on nearly every write (the overseer's and each task
    process's). A migration's marker (project SQL runs in its transactions and could change session
    settings) and a purpose (retention may remove append-only rows) last only for their transaction,
    and the next plain one sets the session's anew."""
    if conn.get_execution_options().get("etl_craft_reads_only"):
        return
    actor, kind, migration, purpose = marker = current_marker()
    info = conn.connection.info
    lasting = migration is None and purpose is None
    if lasting and info.get(_SESSION_MARKER) == marker:
        return
    info.pop(_SESSION_MARKER, None)
    conn.exec_driver_sql(
        _SET_MARKER,
        {"actor": actor, "kind": kind, "migration": migration or "", "purpose": purpose or "", "local": not lasting},
    )
    if lasting:
        info[_SESSION_MARKER] = marker


def forget_marker(conn: sa.Connection) -> None:
    """A setting made in a transaction that rolls back is undone with it (a statement or a COMMIT that
    fails in a write transaction rolls it back too), so the next write sets its marker again. A lost
    connection is replaced, and its replacement starts with an empty info."""
    if not conn.invalidated and not conn.closed:
        conn.connection.info.pop(_SESSION_MARKER, None)


def connection_arguments(config: ConnectorConfig, profile: ConnectionProfile) -> tuple[sa.URL, dict[str, Any], str]:
    """The SQLAlchemy URL (no password), the driver arguments and the display URL of a profile."""
    parts = urlsplit(profile.jdbc_url.removeprefix("jdbc:"))
    database = parts.path.lstrip("/")
    if not parts.hostname or not database:
        raise ConfigurationError(
            f"craft-connector.yml: {profile.where}.jdbc_url",
            found=repr(profile.jdbc_url),
            expected="jdbc:postgresql://host[:port]/database[?settings]",
            remedy="name the host and the database",
        )
    args: dict[str, Any] = dict(parse_qsl(parts.query, keep_blank_values=True))
    args.update({key: str(path) for key, path in profile.url_files})
    args.setdefault("connect_timeout", str(CONNECT_TIMEOUT_SECONDS))
    args.setdefault("application_name", "etl-craft")
    if profile.user:
        args["user"] = profile.user
    mode = profile.auth_mode or "password"
    if mode in ("password", "token") and profile.secret_var:
        args["password"] = config.secret(profile.secret_var)
    elif mode == "key_file":
        if profile.key_file:
            args["sslkey"] = str(profile.key_file)
        if profile.cert_file:
            args["sslcert"] = str(profile.cert_file)
        if profile.secret_var:
            args["sslpassword"] = config.secret(profile.secret_var)
    if profile.section == "Engine" and profile.schema:
        if not _PLAIN_SCHEMA.match(profile.schema):
            raise ConfigurationError(
                f"craft-connector.yml: {profile.where}.schema",
                found=repr(profile.schema),
                expected="a plain schema name (letters, digits, _ and $)",
                remedy="rename the schema or point at another one",
            )
        args["options"] = f"-c search_path={profile.schema}"
    url = sa.URL.create("postgresql+psycopg", host=parts.hostname, port=parts.port, database=database)
    shown_user = f"{profile.user}@" if profile.user else ""
    port = f":{parts.port}" if parts.port else ""
    display = redact_url(
        f"postgresql://{shown_user}{parts.hostname}{port}/{database}" + (f"?{parts.query}" if parts.query else "")
    )
    return url, args, display


def check_reachable_and_schema(engine: sa.Engine, profile: ConnectionProfile, display: str) -> None:
    try:
        with engine.connect() as conn:
            found = conn.exec_driver_sql("SELECT 1 FROM pg_namespace WHERE nspname = %s", (profile.schema,)).scalar()
    except sa.exc.OperationalError as exc:
        message = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        raise ConfigurationError(
            f"the Engine DB at {display}",
            found=f"no connection ({message})",
            expected="a PostgreSQL server that accepts this login",
            remedy="check the Engine section of craft-connector.yml, the server and the secret variable",
        ) from None
    if not found:
        raise ConfigurationError(
            f"craft-connector.yml: {profile.where}.schema",
            found=f"schema {profile.schema!r}, which does not exist in {display}",
            expected="an existing schema (etl-craft never creates PostgreSQL schemas)",
            remedy=f"create it first: CREATE SCHEMA {profile.schema};",
        )
