"""Creating and migrating the Engine DB: init-db, migrate, setup and the PostgreSQL grants."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from etl_craft.core.errors import MigrationError
from etl_craft.engine import migrations
from etl_craft.engine.migrations import MigrationFile
from etl_craft.services.actions import record_request
from etl_craft.services.context import OperationContext


@dataclass(frozen=True)
class InitDbView:
    created: bool
    engine_db: str
    engine_migrations: tuple[str, ...]
    message: str


def init_db(ctx: OperationContext, *, force: bool = False) -> InitDbView:
    result = migrations.init_db(ctx.db, force=force)
    if result.created:
        # The request is recorded once the table that holds it exists.
        record_request(ctx, "init-db", {"force": force})
    return InitDbView(result.created, ctx.db.display_url, result.engine_migrations, result.message)


def migrations_directory(
    explicit: str | None, ctx: OperationContext, environ: Mapping[str, str] | None = None
) -> Path | None:
    """--migrations-dir, else $ETL_CRAFT_MIGRATIONS_DIR, else migrations/ beside the config if present."""
    env = os.environ if environ is None else environ
    chosen = explicit or env.get("ETL_CRAFT_MIGRATIONS_DIR")
    if chosen:
        path = Path(chosen).absolute()
        if not path.is_dir():
            source = "--migrations-dir" if explicit else "ETL_CRAFT_MIGRATIONS_DIR"
            raise MigrationError(
                f"{source} {chosen!r}",
                found=f"{path}, which is not a folder",
                expected="the folder holding the project's NNNN_description.sql files",
                remedy="create it or point at the right folder",
            )
        return path
    default = ctx.config.project_dir / "migrations"
    return default if default.is_dir() else None


@dataclass(frozen=True)
class MigrateView:
    engine_applied: tuple[str, ...]
    project_applied: tuple[str, ...]
    project_directory: str | None
    message: str


def migrate(
    ctx: OperationContext,
    directory: Path | None,
    announce: Callable[[MigrationFile], None] = lambda _m: None,
) -> MigrateView:
    migrations.require_initialised(ctx.db)
    record_request(ctx, "migrate", {"migrations_dir": str(directory) if directory else None})
    result = migrations.migrate(ctx.db, directory, announce)
    applied = len(result.engine_applied) + len(result.project_applied)
    message = (
        f"applied {len(result.engine_applied)} ENGINE and {len(result.project_applied)} PROJECT migration(s)"
        if applied
        else "the Engine DB is already up to date"
    )
    return MigrateView(result.engine_applied, result.project_applied, result.project_directory, message)


def grant_statements(schema: str) -> list[str]:
    """SQL for three PostgreSQL roles: an owner (DDL, migrations), the engine (DML) and readers."""
    return [
        "-- The owner creates and migrates the Engine DB (etl-craft init-db, setup, migrate).",
        "CREATE ROLE etl_craft_owner LOGIN;",
        f"GRANT USAGE, CREATE ON SCHEMA {schema} TO etl_craft_owner;",
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


SQLITE_PERMISSIONS_ADVICE = [
    "-- SQLite has no roles: the file's permissions are the boundary.",
    "-- Let only the account that runs etl-craft write the Engine DB and its -wal and -shm files:",
    "chmod 600 {path} {path}-wal {path}-shm",
]
