"""The login a PostgreSQL project migration runs on, so that the database itself confines project SQL.

The engine's own login may be the schema's owner or a superuser; project SQL run in its session could
`RESET ROLE` out of any role set for it, `COPY ... TO PROGRAM`, TRUNCATE or run DDL. So each project
migration runs on a role of its own, created for that file and dropped after it: LOGIN, NOINHERIT,
a random password known only to this process (sent as a SCRAM verifier, so no server log holds it),
one connection, privileges to read the schema and write the metadata tables only. Whatever the SQL
does, it is that role's session: RESET ROLE leaves it where it is, and TRUNCATE, DDL and COPY ...
PROGRAM are refused for lack of privilege. The engine's login needs CREATEROLE (or is a superuser);
without it project migrations are refused, naming the remedy (decision recorded in docs/engine-db.md).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.pool import NullPool

from etl_craft.core.errors import MigrationError
from etl_craft.engine.database import EngineDb
from etl_craft.engine.dialects.postgresql import connect
from etl_craft.engine.schema.tables import METADATA_TABLES

# A role left by a process killed mid-migration can't log in after this, and the next migrate drops it.
_VALID_FOR = timedelta(hours=1)
# Parameters of the engine's connection the project login must not reuse: its identity is its own.
_NOT_INHERITED = ("user", "password", "passfile", "sslkey", "sslcert", "sslpassword", "application_name")
# Records a project file in SCHEMA_MIGRATIONS with its owner's rights (ENGINE migration 0012).
_RECORDER = "etl_craft_record_project_migration(text, text)"
_CAN_CREATE_ROLES = "SELECT rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
_CAN_GRANT_RECORDER = "SELECT has_function_privilege(current_user, %s, 'EXECUTE WITH GRANT OPTION')"
_CAN_GRANT = "SELECT has_table_privilege(current_user, 'cfg_pipelines', 'INSERT WITH GRANT OPTION')"


def role_name(user: str, database: str, schema: str) -> str:
    """`<engine role>_project_<8 hex>`: one per Engine DB, since roles are the whole server's and two
    Engine DBs on one server may migrate at once (one Engine DB's migrations are serialised by its lock)."""
    digest = hashlib.sha256(f"{database}/{schema}".encode()).hexdigest()[:8]
    return f"{re.sub(r'[^a-z0-9_]', '_', user.lower())[:40]}_project_{digest}"


def _grants(role: str, database: str, schema: str) -> list[str]:
    metadata = ", ".join(f"{schema}.{name.lower()}" for name in METADATA_TABLES)
    return [
        f'GRANT CONNECT ON DATABASE "{database}" TO {role}',
        f"GRANT USAGE ON SCHEMA {schema} TO {role}",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO {role}",
        f"GRANT INSERT, UPDATE, DELETE ON {metadata} TO {role}",
        # No INSERT on AUD_METADATA_CHANGES or SCHEMA_MIGRATIONS: the metadata triggers write the one
        # with their owner's rights, and the runner records the file through this function (0012).
        f"GRANT EXECUTE ON FUNCTION {schema}.{_RECORDER} TO {role}",
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO {role}",
    ]


def _drop(admin: sa.Connection, role: str, database: str, schema: str) -> None:
    if not admin.exec_driver_sql("SELECT 1 FROM pg_roles WHERE rolname = %s", (role,)).scalar():
        return
    for statement in (
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM {role}",
        f"REVOKE ALL ON ALL SEQUENCES IN SCHEMA {schema} FROM {role}",
        f"REVOKE ALL ON FUNCTION {schema}.{_RECORDER} FROM {role}",
        f"REVOKE ALL ON SCHEMA {schema} FROM {role}",
        f'REVOKE ALL ON DATABASE "{database}" FROM {role}',
        f"DROP ROLE {role}",
    ):
        admin.exec_driver_sql(statement)


def _refused(db: EngineDb, what: str, found: str, remedy: str) -> MigrationError:
    return MigrationError(
        f"project migrations on {db.display_url}: {what}",
        found=found,
        expected="a login for project SQL that may read the schema and write the metadata tables only",
        remedy=remedy,
    )


def _create(admin: sa.Connection, db: EngineDb, role: str, password: str, names: tuple[str, str, str]) -> None:
    _, database, schema = names
    _drop(admin, role, database, schema)  # left by a process killed mid-migration
    driver = admin.connection.driver_connection
    verifier = driver.pgconn.encrypt_password(password.encode(), role.encode(), b"scram-sha-256").decode()  # type: ignore[union-attr]
    until = (datetime.now(UTC) + _VALID_FOR).isoformat()
    admin.exec_driver_sql(
        f"CREATE ROLE {role} LOGIN NOINHERIT CONNECTION LIMIT 1 PASSWORD '{verifier}' VALID UNTIL '{until}'"
    )
    for statement in _grants(role, database, schema):
        admin.exec_driver_sql(statement)
    # GRANT ON SCHEMA from a login that doesn't own it and lacks the grant option only warns.
    if not admin.exec_driver_sql("SELECT has_schema_privilege(%s, %s, 'USAGE')", (role, schema)).scalar():
        raise _refused(
            db,
            f"role {role} could not be granted USAGE on schema {schema}",
            f"login {names[0]} without the grant option on the schema",
            f"GRANT USAGE ON SCHEMA {schema} TO {names[0]} WITH GRANT OPTION; (or make it the schema's owner)",
        )
    if admin.exec_driver_sql("SELECT has_schema_privilege(%s, %s, 'CREATE')", (role, schema)).scalar():
        raise _refused(
            db,
            f"role {role} could create objects in schema {schema}",
            "CREATE on the schema, granted to PUBLIC or a role everyone has",
            f"REVOKE CREATE ON SCHEMA {schema} FROM PUBLIC;",
        )


def _connect(admin: sa.Connection, role: str, password: str) -> sa.Engine:
    params = admin.connection.driver_connection.info.get_parameters()  # type: ignore[union-attr]
    for key in _NOT_INHERITED:
        params.pop(key, None)
    params.update(user=role, password=password, application_name="etl-craft project migration")

    def new_connection() -> object:
        import psycopg

        return psycopg.connect(**params)

    engine = sa.create_engine(
        "postgresql+psycopg://", creator=new_connection, poolclass=NullPool, use_native_hstore=False
    )
    event.listen(engine, "begin", connect.on_begin)
    event.listen(engine, "rollback", connect.forget_marker)
    return engine


def _login(db: EngineDb, engine: sa.Engine, role: str) -> sa.Connection:
    try:
        return engine.connect()
    except sa.exc.OperationalError as error:
        raise _refused(
            db,
            f"role {role} could not log in",
            str(error.orig).strip().splitlines()[0],
            f"let pg_hba.conf accept scram-sha-256 password logins from this host for role {role}",
        ) from None


@contextmanager
def project_transaction(db: EngineDb) -> Iterator[sa.Connection]:
    """A write transaction on the login project SQL runs as (see the module's docstring); the role is
    created before and dropped after, whatever happened in between."""
    password = secrets.token_urlsafe(32)
    with db.engine.connect() as raw:
        admin = raw.execution_options(isolation_level="AUTOCOMMIT")
        names = tuple(admin.exec_driver_sql("SELECT current_user, current_database(), current_schema()").one())
        role = role_name(*names)
        if not admin.exec_driver_sql(_CAN_CREATE_ROLES).scalar():
            raise _refused(
                db,
                f"login {names[0]} can't create the role project SQL runs as",
                "no CREATEROLE attribute",
                f"migrate as a login with CREATEROLE (ALTER ROLE {names[0]} CREATEROLE;), "
                "as etl-craft setup --print-grants shows",
            )
        # Granting needs the grant option (the owner's, a superuser's); without it GRANT fails
        # naming only a table, so the login is named here, before any role exists.
        if not admin.exec_driver_sql(_CAN_GRANT).scalar():
            raise _refused(
                db,
                f"login {names[0]} can't grant the role project SQL runs as the metadata tables",
                "no grant option on the Engine DB's tables (the login doesn't own them)",
                "migrate as the owner of the Engine DB's tables (the owner role of etl-craft setup --print-grants)",
            )
        # Likewise for the function that records the file (0012), which only its owner may grant by
        # default; a GRANT (and the REVOKE when the role is dropped) without any privilege on it fails.
        recorder = f"{names[2]}.{_RECORDER}"
        if not admin.exec_driver_sql(_CAN_GRANT_RECORDER, (recorder,)).scalar():
            raise _refused(
                db,
                f"login {names[0]} can't grant the role project SQL runs as EXECUTE on function {recorder}",
                "no grant option on the function (the login doesn't own it)",
                f"GRANT EXECUTE ON FUNCTION {recorder} TO {names[0]} WITH GRANT OPTION;"
                " (or make it the function's owner)",
            )
        try:
            _create(admin, db, role, password, names)  # type: ignore[arg-type]
            engine = _connect(admin, role, password)
            try:
                with db.failures(), _login(db, engine, role) as conn, conn.begin():
                    yield conn
            finally:
                engine.dispose()
        finally:
            _drop(admin, role, names[1], names[2])
