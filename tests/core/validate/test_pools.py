"""validate's pool rules (S5.E): a task's POOL must name the local pool or an active CFG_POOLS row; a
pipeline's MAX_PARALLEL_TASKS must let a task run."""

from __future__ import annotations

import pytest

from tests.core.validate.conftest import ValidateProject, clean, find
from tests.fixtures.harness import TaskSpec

pytestmark = pytest.mark.sqlite


def test_a_task_naming_an_unknown_pool_fails_with_the_nearest_and_known_pools_pass(vp: ValidateProject) -> None:
    vp.sql("INSERT INTO CFG_POOLS (POOL_NAME, DESCRIPTION, INGESTION_SLOTS) VALUES ('gpu', 'the GPU hosts', 2);\n")
    vp.pipeline(
        "sales",
        [
            TaskSpec("here", parameters={"POOL": "local"}),
            TaskSpec("there", parameters={"POOL": "gpu"}),
            TaskSpec("nowhere", parameters={"POOL": "gpus"}),
        ],
    )
    report = vp.check()
    finding = find(
        report, "FAIL", "sales.nowhere", "parameter POOL", "'gpus'", "no active CFG_POOLS row", "an active pool: gpu"
    )
    assert "did you mean gpu?" in finding.message.lower()
    assert [f.where for f in report.findings] == ["sales.nowhere"]
    vp.sql("UPDATE CFG_POOLS SET ACTIVE_FLAG = 'N' WHERE POOL_NAME = 'gpu';\n")
    retired = vp.check()
    assert sorted(f.where for f in retired.findings) == ["sales.nowhere", "sales.there"]


def test_a_max_parallel_tasks_below_one_fails_and_priority_passes(vp: ValidateProject) -> None:
    vp.pipeline("sales", [TaskSpec("load")])
    vp.sql("UPDATE CFG_PIPELINES SET PRIORITY = 9, MAX_PARALLEL_TASKS = 2 WHERE PIPELINE_CODE = 'sales';\n")
    clean(vp.check())
    vp.sql("UPDATE CFG_PIPELINES SET MAX_PARALLEL_TASKS = 0 WHERE PIPELINE_CODE = 'sales';\n")
    find(vp.check(), "FAIL", "sales", "MAX_PARALLEL_TASKS", "0", "1 or more")
