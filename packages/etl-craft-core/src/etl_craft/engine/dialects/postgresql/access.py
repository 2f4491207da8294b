"""Who may write a PostgreSQL Engine DB: the grants doctor reports and the roles `setup --print-grants` suggests.

The guard triggers stop accidental writes; privileges are the boundary. etl-craft checks them but
never creates roles: an administrator runs the printed statements.
"""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.core.checks import FAIL, OK, WARN, CheckResult
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema.tables import METADATA_TABLES, TABLE_SPECS

_CAN_CREATE_ROLES = "SELECT rolname, rolsuper OR rolcreaterole FROM pg_roles WHERE rolname = current_user"
# Rows each table of the schema gained, lost or changed in the open transaction, and the settings
# the guard triggers trust. SQL can reset those settings (set_config on the purpose marker; on a
# superuser login, session_replication_role switches triggers off), not the transaction's counters,
# so project SQL is judged again by what it did before its transaction commits.
_PROJECT_SQL_EFFECTS = """
    SELECT current_setting('etl_craft.purpose', true), current_setting('session_replication_role'),
           coalesce((SELECT json_object_agg(upper(relname), n_tup_ins + n_tup_upd + n_tup_del)
                     FROM pg_stat_xact_user_tables WHERE schemaname = current_schema()), '{}')
"""
# What project SQL may write: the metadata tables, and their recorded changes (by their triggers).
PROJECT_SQL_TABLES = frozenset((*METADATA_TABLES, "AUD_METADATA_CHANGES"))


def rows_written(conn: sa.Connection) -> dict[str, int]:
    """Rows written per table (upper-case name) so far in the transaction of `conn`."""
    return dict(conn.exec_driver_sql(_PROJECT_SQL_EFFECTS).one()[2])


def project_sql_effects(conn: sa.Connection, before: dict[str, int], purpose: str) -> str | None:
    """What project SQL did that it may not, judged after it ran: None when it wrote metadata only."""
    marker, replication_role, after = conn.exec_driver_sql(_PROJECT_SQL_EFFECTS).one()
    foreign = sorted(name for name, n in after.items() if n > before.get(name, 0) and name not in PROJECT_SQL_TABLES)
    if foreign:
        return f"it wrote rows of {', '.join(foreign)}, which only etl-craft writes (refused: metadata tables only)"
    if marker != purpose:
        return f"it changed the setting etl_craft.purpose to {marker!r} (refused: the guards read it)"
    if replication_role != "origin":
        return f"it set session_replication_role to {replication_role!r} (refused: it switches the guards off)"
    return None


_FOREIGN_WRITE_GRANTS = """
    SELECT c.relname, acl.privilege_type, COALESCE(g.rolname, 'PUBLIC') AS grantee, l.rolname AS login
    FROM pg_class c
    JOIN pg_namespace n ON n.oid = c.relnamespace
    CROSS JOIN LATERAL aclexplode(c.relacl) acl
    LEFT JOIN pg_roles g ON g.oid = acl.grantee
    JOIN pg_roles l ON l.rolcanlogin AND NOT l.rolsuper
        AND l.rolname <> current_user AND l.oid <> c.relowner
        AND (acl.grantee = 0 OR pg_has_role(l.oid, acl.grantee, 'USAGE'))
    WHERE n.nspname = current_schema() AND c.relname = ANY(%s)
      AND acl.privilege_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
    ORDER BY c.relname, acl.privilege_type, grantee, login
"""


def foreign_write_grants(db: EngineDb) -> list[tuple[str, str, str, str]]:
    """(table, privilege, source grantee, login) for every other login that can write an etl-craft table.

    Grants reach a login directly, through a group it inherits from, or through PUBLIC; the source
    grantee is what the REVOKE must name. Owners and superusers are left out: they administer it.
    """
    tables = [spec.name.lower() for spec in TABLE_SPECS]
    with db.read() as conn:
        rows = conn.exec_driver_sql(_FOREIGN_WRITE_GRANTS, (tables,)).all()
    return [(r[0].upper(), r[1], r[2], r[3]) for r in rows]


def grants_check(db: EngineDb) -> list[CheckResult]:
    name = "Engine DB write grants"
    try:
        grants = foreign_write_grants(db)
    except sa.exc.DBAPIError as error:
        return [CheckResult(name, WARN, f"could not read grants: {error.orig}")]
    if not grants:
        return [CheckResult(name, OK, "no other login can write AUD_ or CFG_ tables")]
    return [
        CheckResult(
            name,
            FAIL,
            f"login {login} can {privilege} {db.schema}.{table} (granted to {grantee}); "
            f"REVOKE {privilege} ON {db.schema}.{table} FROM {grantee};",
        )
        for table, privilege, grantee, login in grants
    ]


def project_sql_check(db: EngineDb) -> list[CheckResult]:
    """Whether this login can run project migrations: each runs on a login of its own that this one
    creates for it (project_login.py), which needs CREATEROLE."""
    name = "Project migrations"
    with db.read() as conn:
        login, can = conn.exec_driver_sql(_CAN_CREATE_ROLES).one()
    if can:
        return [
            CheckResult(
                name, OK, "run on a login of their own, which may read the schema and write the metadata tables only"
            )
        ]
    return [
        CheckResult(
            name,
            WARN,
            f"login {login} has no CREATEROLE, so etl-craft migrate refuses project migrations with it; "
            "migrate as the owner role of etl-craft setup --print-grants",
        )
    ]


def grant_statements(schema: str) -> list[str]:
    """SQL for three PostgreSQL roles: an owner (DDL, migrations; CREATEROLE for the login each project
    migration runs on), the engine (DML) and readers."""
    return [
        "-- The owner creates and migrates the Engine DB (etl-craft init-db, setup, migrate). CREATEROLE lets it",
        "-- create the login each project migration runs on (read the schema, write metadata tables only).",
        "CREATE ROLE etl_craft_owner LOGIN CREATEROLE;",
        f"GRANT USAGE, CREATE ON SCHEMA {schema} TO etl_craft_owner WITH GRANT OPTION;",
        "-- The engine role runs every other command, the server and the workers.",
        "CREATE ROLE etl_craft_engine LOGIN;",
        f"GRANT USAGE ON SCHEMA {schema} TO etl_craft_engine;",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA {schema} TO etl_craft_engine;",
        f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA {schema} TO etl_craft_engine;",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE etl_craft_owner IN SCHEMA {schema}"
        " GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO etl_craft_engine;",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE etl_craft_owner IN SCHEMA {schema}"
        " GRANT USAGE ON SEQUENCES TO etl_craft_engine;",
        "-- People and BI tools read through a role that can't write.",
        "CREATE ROLE etl_craft_reader NOLOGIN;",
        f"GRANT USAGE ON SCHEMA {schema} TO etl_craft_reader;",
        f"GRANT SELECT ON ALL TABLES IN SCHEMA {schema} TO etl_craft_reader;",
        f"ALTER DEFAULT PRIVILEGES FOR ROLE etl_craft_owner IN SCHEMA {schema}"
        " GRANT SELECT ON TABLES TO etl_craft_reader;",
        f"REVOKE ALL ON ALL TABLES IN SCHEMA {schema} FROM PUBLIC;",
    ]
