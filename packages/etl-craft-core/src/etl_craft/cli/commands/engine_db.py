"""init-db, migrate and setup: create and migrate the Engine DB."""

from __future__ import annotations

import argparse

from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit, note
from etl_craft.core.errors import ExitCode


def _configure_init_db(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--force",
        action="store_true",
        help="create the tables even though the database already holds tables that are not etl-craft's",
    )


def _run_init_db(args: argparse.Namespace) -> int:
    from etl_craft.services import setup
    from etl_craft.services.context import open_context

    ctx = open_context(args.config, require_schema=False)
    try:
        view = setup.init_db(ctx, force=args.force)
    finally:
        ctx.close()
    emit(args, "init-db", view, f"init-db: {view.message}")
    return ExitCode.SUCCESS


def _configure_migrate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--migrations-dir",
        metavar="PATH",
        help="the project's migrations (default $ETL_CRAFT_MIGRATIONS_DIR, else migrations/ beside the config)",
    )


def _run_migrate(args: argparse.Namespace) -> int:
    from etl_craft.services import setup
    from etl_craft.services.context import open_context

    ctx = open_context(args.config, require_schema=False)
    try:
        directory = setup.migrations_directory(args.migrations_dir, ctx)
        view = setup.migrate(
            ctx,
            directory,
            lambda m: note(args, f"applying {m.source.value} migration {m.version}"),
        )
    finally:
        ctx.close()
    emit(args, "migrate", view, f"migrate: {view.message}")
    return ExitCode.SUCCESS


def _configure_setup(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--print-grants",
        action="store_true",
        help="print the PostgreSQL role and grant statements (SQLite: file permission advice); change nothing",
    )
    parser.add_argument("--migrations-dir", metavar="PATH", help="the project's migrations (as for migrate)")


def _run_setup(args: argparse.Namespace) -> int:
    from etl_craft.services import doctor, setup
    from etl_craft.services.context import open_context

    if args.print_grants:
        ctx = open_context(args.config, require_schema=False)
        try:
            if ctx.db.dialect == "postgresql":
                lines = setup.grant_statements(ctx.db.schema or "public")
            else:
                lines = [line.format(path=ctx.db.sqlite_path) for line in setup.SQLITE_PERMISSIONS_ADVICE]
        finally:
            ctx.close()
        emit(args, "grants", {"dialect": ctx.db.dialect, "statements": lines}, lines)
        return ExitCode.SUCCESS

    report, _config = doctor.run_checks(args.config, include_schema=False)
    if report.failed:
        lines = [*_check_lines(report), "setup: a check failed, so nothing was changed"]
        emit(args, "setup", {"changed": False, "checks": report}, lines)
        return ExitCode.FAILURE
    ctx = open_context(args.config, require_schema=False)
    try:
        init = setup.init_db(ctx)
        directory = setup.migrations_directory(args.migrations_dir, ctx)
        migrated = setup.migrate(
            ctx, directory, lambda m: note(args, f"applying {m.source.value} migration {m.version}")
        )
    finally:
        ctx.close()
    changed = init.created or bool(migrated.engine_applied or migrated.project_applied)
    message = init.message if init.created else migrated.message
    if not changed:
        message = "the Engine DB is already up to date"
    emit(
        args,
        "setup",
        {"changed": changed, "checks": report, "init_db": init, "migrate": migrated},
        [*_check_lines(report), f"setup: {message}"],
    )
    return ExitCode.SUCCESS


def _check_lines(report: object) -> list[str]:
    from etl_craft.services.doctor import DoctorReport

    assert isinstance(report, DoctorReport)
    return [f"[{c.status:<4}] {c.name}: {c.detail}" for c in report.checks] + [report.summary]


def _run_doctor(args: argparse.Namespace) -> int:
    from etl_craft.services import doctor

    report, _config = doctor.run_checks(args.config)
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
DOCTOR = Command("doctor", "check the configuration, the Engine DB and its grants", _run_doctor)

__all__ = ["DOCTOR", "INIT_DB", "MIGRATE", "SETUP"]
