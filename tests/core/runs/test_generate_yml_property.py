"""A property test over generated pipelines (S2.H.2): random graphs of tasks, dependency types, run
conditions and other pipelines' tasks. Whatever remote mode can express becomes a document that
validates against the shipped schema, has no self-dependency and quotes every command; the rest is
refused with exit 18."""

from __future__ import annotations

import shlex
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from etl_craft.config.model import OrchestrationSettings
from etl_craft.core.errors import ExitCode, RemoteUnsupportedError
from etl_craft.engine.reads import EdgeRow, PipelineDependencyRow, PipelineRow, TaskRow
from etl_craft.execution.graph import build_graph
from etl_craft.services.dag_yaml.airflow_range import parse_range
from etl_craft.services.dag_yaml.build import build_dag
from etl_craft.services.dag_yaml.check import check_document
from etl_craft.services.runs.remote import require_remote_support

pytestmark = pytest.mark.unit

CODES = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,20}", fullmatch=True)
TYPES = st.sampled_from(["SUCCESS", "FAILURE", "ALWAYS", "HAS_DATA"])
UPSTREAM_PIPELINE_ID = 99


@st.composite
def pipelines(draw: st.DrawFn) -> tuple[PipelineRow, list[TaskRow], list[EdgeRow], dict, list[PipelineDependencyRow]]:
    code = draw(CODES)
    task_codes = draw(st.lists(CODES, min_size=1, max_size=8, unique_by=str.lower))
    pipeline = PipelineRow(
        pipeline_id=1,
        pipeline_code=code,
        pipeline_name=code,
        description=draw(st.text(max_size=40)),
        run_schedule=draw(st.sampled_from([None, "0 6 * * *", "@daily"])),
        sla_in_hours=None,
        refresh_type="FULL",
        pipeline_parameters=None,
        schedule_timezone=None,
        catchup="N",
        max_catchup_runs=1,
        overlap_policy="SKIP",
        schedule_start_date=None,
    )
    tasks, edges = [], []
    names: dict[int, tuple[str, str, bool]] = {}
    for index, task_code in enumerate(task_codes):
        task_id = index + 1
        ups = draw(st.lists(st.integers(1, task_id - 1), unique=True, max_size=3)) if task_id > 1 else []
        cross = draw(st.booleans())
        count = len(ups) + cross
        condition = draw(st.sampled_from(["ALL", "ANY", "N"])) if count else "ALL"
        tasks.append(
            TaskRow(
                task_id,
                task_code,
                "ETL",
                1,
                "PYTHON",
                condition,
                draw(st.integers(1, count)) if condition == "N" else None,
            )
        )
        names[task_id] = (code, task_code, True)
        for up in ups:
            edges.append(EdgeRow(len(edges) + 1, task_id, up, None, draw(TYPES), "Y"))
        if cross:
            upstream_task = 1000 + task_id
            names[upstream_task] = ("Upstream", f"u{task_id}", True)
            edges.append(EdgeRow(len(edges) + 1, task_id, upstream_task, UPSTREAM_PIPELINE_ID, draw(TYPES), "Y"))
    waits_for = [
        PipelineDependencyRow(1, code, "Other", draw(TYPES), True, True, True) for _ in range(draw(st.integers(0, 1)))
    ]
    return pipeline, tasks, edges, names, waits_for


@settings(max_examples=150, deadline=None)
@given(pipelines())
def test_generated_dags_validate_quote_every_command_and_never_depend_on_themselves(found: tuple) -> None:
    pipeline, tasks, edges, names, waits_for = found
    graph = build_graph(pipeline, tasks, edges, {}, names)
    try:
        require_remote_support(graph, waits_for)
    except RemoteUnsupportedError as refused:
        assert refused.exit_code == ExitCode.REMOTE_UNSUPPORTED
        assert refused.subject.startswith((f"task {pipeline.pipeline_code}.", f"pipeline {pipeline.pipeline_code}"))
        return
    document = build_dag(graph, waits_for, OrchestrationSettings(), date(2026, 1, 1), parse_range(">=2.5"))
    check_document(document)
    ids = [step["task_id"] for step in document["tasks"]]
    assert ids.count("__init__") == ids.count("__finalize__") == 1
    assert {t.task_code for t in tasks} <= set(ids)
    for step in document["tasks"]:
        assert step["task_id"] not in step["depends_on"]
        if step["kind"] == "command":
            words = shlex.split(step["command"])
            assert shlex.join(words) == step["command"]
            assert words[words.index("--pipeline_code") + 1] == pipeline.pipeline_code
            assert words[words.index("--run-key") + 1] == "orchestrator:{{ run_id }}"
            if "--task_code" in words:
                assert words[words.index("--task_code") + 1] == step["task_id"]
