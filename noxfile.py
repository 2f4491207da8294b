"""Developer sessions. Every session runs inside the uv workspace environment (`uv run --frozen`)."""

from __future__ import annotations

import os

import nox

nox.options.default_venv_backend = "none"
nox.options.sessions = ["lint", "typecheck", "tests"]

DISTRIBUTIONS = ["core", "warehouses", "worker", "server", "airflow"]


def uv_run(session: nox.Session, *args: str, env: dict[str, str] | None = None) -> None:
    session.run("uv", "run", "--frozen", *args, external=True, env=env or {})


@nox.session
def lint(session: nox.Session) -> None:
    """ruff, and the import-linter contract that keeps the core layers in order."""
    uv_run(session, "ruff", "check", ".")
    uv_run(session, "lint-imports")


@nox.session
def typecheck(session: nox.Session) -> None:
    uv_run(session, "mypy")


@nox.session
@nox.parametrize("distribution", DISTRIBUTIONS)
def tests(session: nox.Session, distribution: str) -> None:
    """One distribution's tests (tests/<distribution>/), every backend that answers."""
    uv_run(session, "pytest", f"tests/{distribution}", "-n", "2", *session.posargs, env={"PYTHONHASHSEED": "0"})


@nox.session
def tests_postgres(session: nox.Session) -> None:
    """Every PostgreSQL test; a missing server fails instead of skipping."""
    uv_run(
        session,
        "pytest",
        "-m",
        "postgres or warehouse_postgres",
        "-n",
        "2",
        *session.posargs,
        env={"ETL_CRAFT_REQUIRE_POSTGRES": "1"},
    )


@nox.session
def tests_snowflake(session: nox.Session) -> None:
    """The compliance suite on Snowflake: a fakesnow server, or the account ETL_CRAFT_SNOWFLAKE_URL names.

    A missing snowflake extra or fakesnow fails instead of skipping.
    """
    uv_run(
        session,
        "pytest",
        "tests/warehouses",
        "-m",
        "warehouse_snowflake",
        "-n",
        "2",
        *session.posargs,
        env={"ETL_CRAFT_REQUIRE_SNOWFLAKE": "1"},
    )


@nox.session
def chaos(session: nox.Session) -> None:
    """The crash and race scenarios, repeated (CHAOS_ITERATIONS, default 20) on both Engine DBs."""
    iterations = os.environ.get("CHAOS_ITERATIONS", "20")
    uv_run(
        session,
        "pytest",
        "-m",
        "chaos",
        "-n",
        "2",
        f"--count={iterations}",
        *session.posargs,
        env={"ETL_CRAFT_REQUIRE_POSTGRES": "1"},
    )


@nox.session
def bench(session: nox.Session) -> None:
    """Benchmarks: each compares with a baseline measured in the same run; results in release/benchmarks/."""
    uv_run(session, "python", "-m", "benchmarks", *session.posargs)
