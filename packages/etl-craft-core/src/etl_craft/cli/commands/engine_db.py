"""init-db, migrate and setup: create and migrate the Engine DB."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from etl_craft.cli.arguments import path
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit, note
from etl_craft.core.errors import ExitCode

if TYPE_CHECKING:
    from etl_craft.engine.schema.migrations import MigrationFile
    from etl_craft.services.doctor import DoctorReport


def _configure_init_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help="create the tables even though the database already holds tables that are not etl-craft's",
    )


def _run_init_db(args: argparse.Namespace) -> int:
    from etl_craft.services import setup
    from etl_craft.services.context import open_context

    ctx = open_context(args.config, require_schema=False, create=True)
    try:
        view = setup.init_db(ctx, force=args.force)
    finally:
        ctx.close()
    emit(args, "init-db", view, f"init-db: {view.message}")
    return ExitCode.SUCCESS


def _configure_migrate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--migrations-dir",
        type=path,
        metavar="PATH",
        help="the project's migrations (default $ETL_CRAFT_MIGRATIONS_DIR, else migrations/ beside the config)",
    )


def _run_migrate(args: argparse.Namespace) -> int:
    from etl_craft.services import setup
    from etl_craft.services.context import open_context

    ctx = open_context(args.config, require_schema=False)
    try:
        view = setup.migrate(ctx, args.migrations_dir, _announcer(args))
    finally:
        ctx.close()
    emit(args, "migrate", view, f"migrate: {view.message}")
    return ExitCode.SUCCESS


def _announcer(args: argparse.Namespace) -> Callable[[MigrationFile], None]:
    return lambda m: note(args, f"applying {m.source.value} migration {m.version}")


def _configure_setup(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--print-grants",
        action="store_true",
        help="print the PostgreSQL role and grant statements (SQLite: file permission advice); change nothing",
    )
    parser.add_argument("--migrations-dir", type=path, metavar="PATH", help="the project's migrations (as for migrate)")


def _run_setup(args: argparse.Namespace) -> int:
    from etl_craft.services import setup
    from etl_craft.services.context import open_context

    if args.print_grants:
        ctx = open_context(args.config, require_schema=False)
        try:
            grants = setup.grants(ctx)
        finally:
            ctx.close()
        emit(args, "grants", grants, list(grants.statements))
        return ExitCode.SUCCESS
    view = setup.setup(args.config, args.migrations_dir, _announcer(args))
    emit(args, "setup", view, [*_check_lines(view.checks), f"setup: {view.message}"])
    return ExitCode.FAILURE if view.checks.failed else ExitCode.SUCCESS


def _check_lines(report: DoctorReport) -> list[str]:
    return report.lines


def _run_doctor(args: argparse.Namespace) -> int:
    from etl_craft.services import doctor

    report = doctor.run_checks(args.config)
    emit(args, "doctor", report, _check_lines(report))
    return ExitCode.FAILURE if report.failed else ExitCode.SUCCESS


INIT_DB = Command("init-db", "create every Engine DB table in one transaction", _run_init_db, _configure_init_db)
MIGRATE = Command(
    "migrate",
    "apply pending ENGINE migrations, then the project's migrations",
    _run_migrate,
    _configure_migrate,
)
SETUP = Command("setup", "run the doctor checks, then create or migrate the Engine DB", _run_setup, _configure_setup)
DOCTOR = Command(
    "doctor", "check the configuration, every connection and file it names, the Engine DB and its grants", _run_doctor
)

__all__ = ["DOCTOR", "INIT_DB", "MIGRATE", "SETUP"]
