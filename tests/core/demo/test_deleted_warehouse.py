"""Deleting the demo's DuckDB file before the next batch: the run is refused, naming the file and the
remedy, before anything is run or recorded, and the Engine DB's history stays as it was."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.core.demo.conftest import DemoRun, demo_env
from tests.fixtures.cli import run_cli

pytestmark = [pytest.mark.sqlite, pytest.mark.duckdb]

HISTORY = (
    t.aud_pipelines_run_log,
    t.aud_task_run_log,
    t.aud_task_attempts,
    t.aud_actions,
    t.aud_task_offset_tracker,
    t.aud_business_rules_results,
    t.aud_gate_decisions,
)


def history(copy: DemoRun) -> dict[str, list[Any]]:
    return {table.name: [tuple(r) for r in copy.engine_rows(sa.select(table))] for table in HISTORY}


@pytest.mark.parametrize("pipeline", ["support_reference", "client_alpha"])
def test_a_run_after_the_warehouse_file_was_deleted_is_refused_naming_the_file(
    demo_run: DemoRun, tmp_path: Path, pipeline: str
) -> None:
    assert demo_run.result.returncode == 0, str(demo_run.result)
    folder = tmp_path / "demo"
    shutil.copytree(demo_run.folder, folder)
    copy = DemoRun(folder, demo_run.result)
    before = history(copy)
    warehouse = folder / "warehouse.duckdb"
    warehouse.unlink()

    result = run_cli("run", "--pipeline_code", pipeline, env=demo_env(), cwd=folder)

    assert result.returncode == 11, str(result)  # CONNECTION_TEST
    message = result.stderr
    assert f"the DuckDB warehouse {warehouse}" in message
    assert "found no such file, although" in message and "successful task run(s) of this project wrote to it" in message
    assert "restore it from a backup" in message and "etl-craft demo writes a fresh one" in message
    assert not warehouse.exists(), "the refused run must not leave a new empty warehouse behind"
    assert history(copy) == before
    statuses = copy.engine_rows(sa.select(t.aud_pipelines_run_log.c.status))
    assert len(statuses) == 9 and {s.status for s in statuses} == {"SUCCESS"}


def test_a_new_project_may_still_let_duckdb_create_its_file(tmp_path: Path) -> None:
    """The refusal needs history: with no successful warehouse task yet, the first run creates the file."""
    (tmp_path / "craft-connector.yml").write_text(
        "Orchestration:\n  Mode: local\nEngine:\n  jdbc_url: jdbc:sqlite:engine.db\n  schema: main\n"
        "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n",
        encoding="utf-8",
    )
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations" / "0001_p.sql").write_text(
        "INSERT INTO CFG_PIPELINES (PIPELINE_CODE, PIPELINE_NAME, REFRESH_TYPE) VALUES ('p', 'p', 'FULL');\n"
        "INSERT INTO CFG_TASKS (TASK_CODE, TASK_TYPE, PIPELINE_ID, HANDLER)\n"
        "SELECT 'one', 'ETL', PIPELINE_ID, 'SQL' FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'p';\n"
        "INSERT INTO CFG_TASK_PARAMETERS (TASK_ID, PARAMETER_NAME, PARAMETER_VALUE)\n"
        "SELECT t.TASK_ID, v.column1, v.column2 FROM (VALUES ('SQL_ACTION', 'CREATE_TABLE'),\n"
        "  ('TARGET_OBJECT', 'main.one'), ('SOURCE_SQL', 'SELECT 1 AS n')) v\n"
        "CROSS JOIN CFG_TASKS t WHERE t.TASK_CODE = 'one';\n",
        encoding="utf-8",
    )
    env = demo_env()
    assert run_cli("setup", env=env, cwd=tmp_path).returncode == 0
    first = run_cli("run", "--pipeline_code", "p", env=env, cwd=tmp_path)
    assert first.returncode == 0, str(first)
    assert (tmp_path / "warehouse.duckdb").exists()
