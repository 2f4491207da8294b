"""Creating and migrating the Engine DB: init-db, migrate, setup and the PostgreSQL grants."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from etl_craft.core.errors import MigrationError
from etl_craft.engine.records.actions import record_request
from etl_craft.engine.schema import migrations
from etl_craft.engine.schema.migrations import MigrationFile
from etl_craft.services.context import OperationContext, open_context
from etl_craft.services.doctor import DoctorReport, run_checks


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
        record_request(ctx.db, ctx.actor, "init-db", {"force": force})
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


Announce = Callable[[MigrationFile], None]


def migrate(ctx: OperationContext, migrations_dir: str | None, announce: Announce = lambda _m: None) -> MigrateView:
    """Apply pending ENGINE migrations, then the project's, recording the request first."""
    directory = migrations_directory(migrations_dir, ctx)
    migrations.require_initialised(ctx.db)
    record_request(ctx.db, ctx.actor, "migrate", {"migrations_dir": str(directory) if directory else None})
    result = migrations.migrate(ctx.db, directory, announce)
    applied = len(result.engine_applied) + len(result.project_applied)
    message = (
        f"applied {len(result.engine_applied)} ENGINE and {len(result.project_applied)} PROJECT migration(s)"
        if applied
        else "the Engine DB is already up to date"
    )
    return MigrateView(result.engine_applied, result.project_applied, result.project_directory, message)


@dataclass(frozen=True)
class SetupView:
    changed: bool
    checks: DoctorReport
    init_db: InitDbView | None
    migrate: MigrateView | None
    message: str


def setup(explicit_config: str | None, migrations_dir: str | None, announce: Announce = lambda _m: None) -> SetupView:
    """The doctor checks (except tables and migrations), then init-db and migrate as needed; idempotent.

    When a check fails nothing is changed.
    """
    report = run_checks(explicit_config, include_schema=False)
    if report.failed:
        return SetupView(False, report, None, None, "a check failed, so nothing was changed")
    ctx = open_context(explicit_config, require_schema=False, create=True)
    try:
        init = init_db(ctx)
        migrated = migrate(ctx, migrations_dir, announce)
    finally:
        ctx.close()
    changed = init.created or bool(migrated.engine_applied or migrated.project_applied)
    if init.created:
        message = init.message
    elif changed:
        message = migrated.message
    else:
        message = "the Engine DB is already up to date"
    return SetupView(changed, report, init, migrated, message)


@dataclass(frozen=True)
class GrantsView:
    dialect: str
    statements: tuple[str, ...]


def grants(ctx: OperationContext) -> GrantsView:
    """The statements (or advice) that make etl-craft the only writer of the Engine DB; changes nothing."""
    return GrantsView(ctx.db.dialect.name, tuple(ctx.db.dialect.access_setup(ctx.db)))
