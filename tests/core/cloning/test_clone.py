"""`etl-craft clone` from both Engine DBs into DuckDB and PostgreSQL warehouses: after a clone the
mirror's rows equal the Engine DB's, table by table; a second clone copies only what changed; a
purge's deletions reach the mirror; a clone killed mid-copy resumes without loss or duplicates."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t
from etl_craft.services.cloning.copy import SETTLE, incremental, scope_tables
from etl_craft.services.cloning.mirror import mirror_value
from etl_craft.warehouse.dialect import load_dialect
from tests.core.retention.test_purge import _build
from tests.fixtures import postgres as pg
from tests.fixtures.cli import run_cli
from tests.fixtures.project import Project
from tests.fixtures.seed import _insert

WAREHOUSES = [
    pytest.param("duckdb", marks=pytest.mark.duckdb, id="duckdb"),
    pytest.param("postgres", marks=pytest.mark.warehouse_postgres, id="pg-warehouse"),
]


@pytest.fixture(params=WAREHOUSES)
def cloned(request: pytest.FixtureRequest, project: Project) -> Iterator[Project]:
    """The project with a warehouse and Cloning on (Scope all)."""
    if request.param == "duckdb":
        warehouse = "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n"
        name = None
    else:
        pg.require_postgres()
        name = pg.create_database()
        warehouse = f"Warehouse:\n  jdbc_url: {pg.jdbc_url(name)}\n  schema: public\n  user: {pg.PG_USER}\n"
    project.extra_sections = warehouse + "Cloning:\n  Enabled: true\n  Scope: all\n  Lock_wait_seconds: 1\n"
    project.write_config()
    yield project
    if name is not None:
        pg.drop_database(name)


def _normal(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(microsecond=value.microsecond // 1000 * 1000)
    if hasattr(value, "is_integer") and not isinstance(value, float):  # Decimal
        return int(value) if value == int(value) else float(value)
    return value


def _order(spec: Any, columns: list[Any]) -> list[Any]:
    """The primary key, or (AUD_GATE_WAITS) the first two columns, which are unique there."""
    names = [c.name for c in spec.columns]
    return [columns[names.index(k)] for k in spec.primary_key] or columns[:2]


def _engine_rows(db: EngineDb, name: str) -> list[tuple[Any, ...]]:
    spec = t.SPECS_BY_NAME[name]
    table = t.T[name.lower()]
    with db.read() as conn:
        rows = conn.execute(
            sa.select(table).order_by(*_order(spec, [table.c[c.name.lower()] for c in spec.columns]))
        ).all()
    return [tuple(_normal(mirror_value(v, c.type)) for v, c in zip(r, spec.columns, strict=True)) for r in rows]


def _mirror_rows(project: Project, name: str) -> list[tuple[Any, ...]]:
    spec = t.SPECS_BY_NAME[name]
    dialect = load_dialect(project.load())
    with dialect.open_session() as session:
        columns = ", ".join(dialect.ident(c.name) for c in spec.columns)
        table = dialect.ident(name)
        order = ", ".join(_order(spec, [dialect.ident(c.name) for c in spec.columns]))
        rows = session.rows(f"SELECT {columns} FROM {table} ORDER BY {order}")
    return [tuple(_normal(v) for v in r) for r in rows]


def _assert_mirror_equals_engine(project: Project, db: EngineDb) -> None:
    for spec in scope_tables("all"):
        assert _mirror_rows(project, spec.name) == _engine_rows(db, spec.name), spec.name


def _clone(project: Project) -> dict[str, Any]:
    time.sleep(SETTLE.total_seconds() + 0.1)  # the clone leaves rows younger than SETTLE to the next one
    result = run_cli("clone", "--format", "json", env=project.env())
    assert result.returncode == 0, result
    doc = result.json()
    assert doc["schema"] == "etl-craft/clone/1" and doc["skipped"] is False
    return {c["table"]: c for c in doc["tables"]}


def test_clone_mirrors_runs_updates_and_purges(cloned: Project) -> None:
    db = cloned.open_db()
    ids = _build(db)
    first = _clone(cloned)
    assert first["AUD_PIPELINES_RUN_LOG"]["change"] == "created" and first["AUD_PIPELINES_RUN_LOG"]["rows"] == 8
    assert "CFG_API_TOKENS" not in first and "AUD_UI_SESSIONS" not in first
    _assert_mirror_equals_engine(cloned, db)

    # A rerun of the clone with nothing new copies nothing from the tables copied by watermark.
    again = _clone(cloned)
    by_watermark = [n for n in again if incremental(t.SPECS_BY_NAME[n])]
    assert len(by_watermark) == 19
    assert {n: again[n]["rows"] for n in by_watermark} == dict.fromkeys(by_watermark, 0)
    # One new run and one changed run: exactly those rows are copied.
    with db.write() as conn:
        pipeline = conn.execute(sa.select(t.cfg_pipelines.c.pipeline_id).limit(1)).scalar_one()
        _insert(conn, t.aud_pipelines_run_log, pipeline_id=pipeline, status="QUEUED")
        run = t.aud_pipelines_run_log
        conn.execute(sa.update(run).where(run.c.pipeline_run_id == ids["up_new"]).values(sla_status="MET"))
    changed = _clone(cloned)
    assert changed["AUD_PIPELINES_RUN_LOG"]["rows"] == 2 and changed["AUD_TASK_RUN_LOG"]["rows"] == 0
    _assert_mirror_equals_engine(cloned, db)

    purged = run_cli("purge", env=cloned.env())
    assert purged.returncode == 0, purged
    after = _clone(cloned)
    assert after["AUD_PIPELINES_RUN_LOG"]["deleted"] == 2 and after["AUD_TASK_ATTEMPTS"]["deleted"] == 2
    _assert_mirror_equals_engine(cloned, db)

    # The guide's "runs per day by status" is a plain query on the mirror.
    dialect = load_dialect(cloned.load())
    with dialect.open_session() as session:
        per_day = session.rows(
            "SELECT CAST(START_DATE AS DATE) AS day, STATUS, COUNT(*) FROM AUD_PIPELINES_RUN_LOG"
            " WHERE START_DATE IS NOT NULL GROUP BY CAST(START_DATE AS DATE), STATUS ORDER BY 1, 2"
        )
    with db.read() as conn:
        starts = conn.execute(sa.select(t.aud_pipelines_run_log.c.start_date, t.aud_pipelines_run_log.c.status)).all()
    expected: dict[tuple[Any, str], int] = {}
    for start, status in starts:
        if start is not None:
            expected[(start.astimezone(UTC).date(), status)] = (
                expected.get((start.astimezone(UTC).date(), status), 0) + 1
            )
    assert {(d, s): n for d, s, n in per_day} == expected


def test_clone_is_refused_while_cloning_is_off(project: Project) -> None:
    result = run_cli("clone", env=project.env())
    assert result.returncode == 3, result
    assert "error: craft-connector.yml: Cloning.Enabled: found false (or no Cloning section)" in result.stderr


def _many_runs(db: EngineDb, count: int) -> None:
    with db.write() as conn:
        pipeline = _insert(conn, t.cfg_pipelines, pipeline_code="many", pipeline_name="Many", refresh_type="FULL")
        conn.execute(t.aud_pipelines_run_log.insert(), [{"pipeline_id": pipeline, "status": "QUEUED"}] * count)


@pytest.mark.chaos
def test_a_clone_killed_mid_copy_resumes_without_loss_or_duplicates(cloned: Project) -> None:
    db = cloned.open_db()
    _many_runs(db, 1200)
    time.sleep(SETTLE.total_seconds() + 0.1)
    killed = run_cli("clone", env=cloned.env(ETL_CRAFT_FAULT="clone_batch:kill"))
    assert killed.returncode == 137, killed
    assert len(_mirror_rows(cloned, "AUD_PIPELINES_RUN_LOG")) == 500  # the first batch committed, no more
    resumed = _clone(cloned)
    assert resumed["AUD_PIPELINES_RUN_LOG"]["rows"] == 700  # only what the killed clone had not committed
    _assert_mirror_equals_engine(cloned, db)


@pytest.mark.chaos
def test_a_clone_while_another_runs_skips_and_says_so(cloned: Project) -> None:
    db = cloned.open_db()
    _many_runs(db, 600)
    time.sleep(SETTLE.total_seconds() + 0.1)
    long = subprocess.Popen(
        [sys.executable, "-m", "etl_craft", "clone"],
        env=cloned.env(ETL_CRAFT_FAULT="clone_batch:sleep:20"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The long clone is asleep after its first batch, holding the clone lock (a DuckDB file
        # admits no second process while it writes, so the test waits rather than looks).
        time.sleep(6)
        assert long.poll() is None, long.communicate()
        skipped = run_cli("clone", "--format", "json", env=cloned.env())
        assert skipped.returncode == 0, skipped
        doc = skipped.json()
        assert doc["skipped"] is True and doc["tables"] == []
        assert "clone skipped: another clone held the clone lock for 1s (Cloning.Lock_wait_seconds)" in doc["message"]
    finally:
        if long.poll() is None:
            os.kill(long.pid, signal.SIGKILL)
        long.wait()
    _clone(cloned)
    _assert_mirror_equals_engine(cloned, db)


def _doctor_line(project: Project) -> str:
    result = run_cli("doctor", env=project.env())
    return next(line for line in result.stdout.splitlines() if "] Cloning:" in line)


def test_doctor_reports_the_last_clone_and_its_failure(cloned: Project) -> None:
    db = cloned.open_db()
    _many_runs(db, 3)
    assert _doctor_line(cloned).startswith("[WARN] Cloning: no clone yet")
    _clone(cloned)
    line = _doctor_line(cloned)
    assert line.startswith("[OK  ] Cloning: last clone ") and "(0 min ago, " in line, line
    assert "every 15 min" in line
    # A mirror table the warehouse can no longer write: the clone fails (exit 17) and doctor says why.
    dialect = load_dialect(cloned.load())
    with dialect.open_session() as session, session.transaction():
        session.execute(f"DROP TABLE {dialect.ident('AUD_PIPELINES_RUN_LOG')}")
        session.execute(f"CREATE VIEW {dialect.ident('AUD_PIPELINES_RUN_LOG')} AS SELECT 1 AS PIPELINE_RUN_ID")
    with db.write() as conn:
        _insert(conn, t.aud_pipelines_run_log, pipeline_id=1, status="QUEUED")
    time.sleep(SETTLE.total_seconds() + 0.1)
    failed = run_cli("clone", env=cloned.env())
    assert failed.returncode == 17, failed
    assert "error: clone into" in failed.stderr
    assert _doctor_line(cloned).startswith("[FAIL] Cloning: the last clone, at ")
