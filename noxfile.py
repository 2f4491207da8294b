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
    """The compliance suite on Snowflake (left out of a plain pytest run): a fakesnow server, or the
    account ETL_CRAFT_SNOWFLAKE_URL names. A missing snowflake extra or fakesnow fails instead of skipping.
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
def tests_trino(session: nox.Session) -> None:
    """The compliance suite on Trino (left out of a plain pytest run): every statement parsed by sqlglot's
    trino dialect and run on the DuckDB emulation, or live on the server ETL_CRAFT_TRINO_URL names."""
    uv_run(session, "pytest", "tests/warehouses", "-m", "warehouse_trino", "-n", "2", *session.posargs)


@nox.session
def tests_databricks(session: nox.Session) -> None:
    """The Databricks proof (left out of a plain pytest run): the compliance scenarios on the DuckDB
    emulation, then one local Spark session (Java from Debian's openjdk-17-jre-headless, pyspark from the
    `spark` group) that parses every statement they sent and runs the ones plain Spark tables can run.
    One process, so Spark starts once and sees the statements the scenarios recorded."""
    uv_run(
        session,
        "--group",
        "spark",
        "pytest",
        "tests/warehouses/compliance",
        "tests/warehouses/spark",
        "-m",
        "warehouse_databricks or databricks_spark",
        "-n",
        "0",
        *session.posargs,
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
def browser(session: nox.Session) -> None:
    """The web UI in Debian's chromium through Playwright (left out of a plain pytest run; never a
    downloaded browser): the UI's acceptance flows and axe-style check, every catalog page and link,
    and release/screenshots/."""
    uv_run(
        session,
        "pytest",
        "tests/server/ui/test_browser.py",
        "tests/core/catalog/test_catalog_browser.py",
        "-m",
        "browser",
        "-n",
        "0",
        *session.posargs,
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


# Airflow in a virtual environment of its own, never the workspace's: the factory must work with
# only itself installed beside Airflow. Kept in a cache folder so a second session reuses it.
AIRFLOW_RELEASES = {"3.3": "apache-airflow==3.3.*", "2.11": "apache-airflow==2.11.*"}


@nox.session
@nox.parametrize("release", list(AIRFLOW_RELEASES))
def airflow(session: nox.Session, release: str) -> None:
    """The DAG factory contract on real Airflow: generated YAML for every demo pipeline, DagBag, `airflow dags test`."""
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    venv = os.path.join(cache, "etl-craft-nox", f"airflow-{release}")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        session.run("uv", "venv", "--quiet", "--python", "3.11", venv, external=True)
    # The factory as a team installs it: its own wheel, beside Airflow, without etl-craft.
    session.run(
        "uv",
        "pip",
        "install",
        "--quiet",
        "--python",
        python,
        AIRFLOW_RELEASES[release],
        "--reinstall-package",
        "etl-craft-airflow",
        "./packages/etl-craft-airflow",
        external=True,
    )
    uv_run(
        session,
        "pytest",
        "-m",
        "airflow",
        "tests/airflow",
        "--timeout=1800",
        *session.posargs,
        env={"ETL_CRAFT_AIRFLOW_PYTHON": python, "ETL_CRAFT_REQUIRE_AIRFLOW": "1"},
    )
