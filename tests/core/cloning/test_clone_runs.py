"""Cloning real runs: rows the transitions change (run and task statuses, a reopened and repaired
run) reach the mirror through UPDATED_AT, and only those rows are copied."""

from __future__ import annotations

import pytest

from etl_craft.engine.schema import tables as t
from tests.core.cloning.test_clone import _assert_mirror_equals_engine, _clone
from tests.fixtures.harness import Harness, TaskSpec

pytestmark = [pytest.mark.timeout(300), pytest.mark.duckdb]


def test_runs_reruns_and_repairs_reach_the_mirror(harness: Harness) -> None:
    harness.project.extra_sections = (
        "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\nCloning:\n  Enabled: true\n  Scope: all\n"
    )
    harness.project.write_config()
    harness.pipeline("p", [TaskSpec("a"), TaskSpec("b")])
    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    _clone(harness.project)
    _assert_mirror_equals_engine(harness.project, harness.db)

    assert harness.cli("run", "--pipeline_code", "p").returncode == 0
    second = _clone(harness.project)
    assert second["AUD_PIPELINES_RUN_LOG"]["rows"] == 1 and second["AUD_TASK_RUN_LOG"]["rows"] == 2
    _assert_mirror_equals_engine(harness.project, harness.db)

    first_run = str(harness.runs()[0].pipeline_run_id)
    reopened = harness.cli("reopen", "--pipeline_code", "p", "--run-id", first_run, "--reason", "repair")
    assert reopened.returncode == 0, reopened
    repaired = harness.cli("run", "--pipeline_code", "p", "--run-id", first_run, "--force")
    assert repaired.returncode == 0, repaired
    third = _clone(harness.project)
    assert third["AUD_PIPELINES_RUN_LOG"]["rows"] == 1  # the reopened run, changed by the transitions
    assert third["AUD_RUN_INTERVENTIONS"]["rows"] >= 1
    _assert_mirror_equals_engine(harness.project, harness.db)
    assert len(harness.rows(t.aud_pipelines_run_log)) == 2
