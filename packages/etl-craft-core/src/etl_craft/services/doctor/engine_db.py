"""doctor checks of the Engine DB: tables and migrations, SQLite file permissions, PostgreSQL write grants."""

from __future__ import annotations

import os
import stat

import sqlalchemy as sa

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.errors import EtlCraftError
from etl_craft.engine import migrations
from etl_craft.engine.database import EngineDb
from etl_craft.engine.tables import TABLE_SPECS
from etl_craft.services.doctor.report import FAIL, OK, WARN, CheckResult


def schema_check(db: EngineDb, config: ConnectorConfig) -> list[CheckResult]:
    state = migrations.schema_state(db)
    name = "Engine DB tables and migrations"
    if not state.initialised:
        return [CheckResult(name, FAIL, "no etl-craft tables: create them with etl-craft init-db or etl-craft setup")]
    try:
        migrations.require_current(db)
    except EtlCraftError as error:
        return [CheckResult(name, FAIL, error.message)]
    project_dir = config.project_dir / "migrations"
    detail = f"{len(state.applied_engine)} ENGINE migration(s) applied"
    if project_dir.is_dir():
        try:
            files = migrations.project_migrations(project_dir)
            with db.read() as conn:
                applied = {
                    r[0] for r in conn.exec_driver_sql("SELECT VERSION FROM SCHEMA_MIGRATIONS WHERE SOURCE = 'PROJECT'")
                }
        except EtlCraftError as error:
            return [CheckResult(name, FAIL, error.message)]
        pending = [f.version for f in files if f.version not in applied]
        if pending:
            return [
                CheckResult(
                    name,
                    FAIL,
                    f"{len(pending)} project migration(s) not applied: {', '.join(pending)}; "
                    "apply them with etl-craft migrate",
                )
            ]
        detail += f", {len(applied)} PROJECT migration(s) applied"
    return [CheckResult(name, OK, detail)]


def foreign_write_grants(db: EngineDb) -> list[tuple[str, str, str, str]]:
    """(table, privilege, source grantee, login) for every other login that can write an etl-craft table.

    Grants reach a login directly, through a group it inherits from, or through PUBLIC; the source
    grantee is what the REVOKE must name. Owners and superusers are left out: they administer it.
    """
    tables = [spec.name.lower() for spec in TABLE_SPECS]
    query = """
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
    with db.read() as conn:
        rows = conn.exec_driver_sql(query, (tables,)).all()
    return [(r[0].upper(), r[1], r[2], r[3]) for r in rows]


def grants_check(db: EngineDb) -> list[CheckResult]:
    if db.dialect != "postgresql":
        return []
    try:
        grants = foreign_write_grants(db)
    except sa.exc.DBAPIError as error:
        return [CheckResult("Engine DB write grants", WARN, f"could not read grants: {error.orig}")]
    if not grants:
        return [CheckResult("Engine DB write grants", OK, "no other login can write AUD_ or CFG_ tables")]
    results = []
    for table, privilege, grantee, login in grants:
        results.append(
            CheckResult(
                "Engine DB write grants",
                FAIL,
                f"login {login} can {privilege} {db.schema}.{table} (granted to {grantee}); "
                f"REVOKE {privilege} ON {db.schema}.{table} FROM {grantee};",
            )
        )
    return results


def sqlite_file_check(db: EngineDb) -> list[CheckResult]:
    if db.dialect != "sqlite" or not db.sqlite_path or not os.path.exists(db.sqlite_path):
        return []
    mode = os.stat(db.sqlite_path).st_mode
    writers = [who for bit, who in ((stat.S_IWGRP, "group"), (stat.S_IWOTH, "others")) if mode & bit]
    if writers:
        return [
            CheckResult(
                "Engine DB file permissions",
                WARN,
                f"{db.sqlite_path} is writable by {' and '.join(writers)} (mode {stat.filemode(mode)}); "
                f"run chmod 600 {db.sqlite_path}",
            )
        ]
    return [CheckResult("Engine DB file permissions", OK, f"{db.sqlite_path} is writable by its owner only")]
