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
def chaos(session: nox.Session) -> None:
    """The crash and race scenarios (left out of a plain pytest run), repeated (CHAOS_ITERATIONS, default
    20) on both Engine DBs. .ci/run runs them once per build."""
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


@nox.session
def api_fuzz(session: nox.Session) -> None:
    """schemathesis against a real `etl-craft server --api-only` (tools/api_fuzz.py): no 500, every
    response within its documented schema and statuses, no traceback in the server's log."""
    uv_run(session, "python", "-m", "tools.api_fuzz", *session.posargs)
