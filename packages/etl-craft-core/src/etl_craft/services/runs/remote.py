"""What an external orchestrator can't carry out for etl-craft (interface §4.7).

An orchestrator starts each task when its trigger rule says so: it knows the outcome of each upstream
step (success, failed, skipped) but not rows written, and a trigger rule waits for one kind of
outcome over all upstreams or any one of them. `generate-yml` and `run --init-only` in remote mode
refuse a pipeline that needs more, with exit 18 naming the task and the feature.
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa

from etl_craft.core.enums import DependencyType, RunCondition
from etl_craft.core.errors import RemoteUnsupportedError
from etl_craft.engine import reads
from etl_craft.engine.reads import PipelineDependencyRow
from etl_craft.execution.graph import Graph

REMEDY = "change the rule in a project migration, or run the pipeline in local mode (Orchestration.Mode: local)"


def upstream_pipelines(graph: Graph, rows: Sequence[PipelineDependencyRow]) -> list[PipelineDependencyRow]:
    """The active pipelines this one waits for (pipeline_dependencies reads both directions)."""
    return [
        r
        for r in rows
        if r.pipeline_code == graph.code and r.depends_on_active and r.depends_on_pipeline_code != graph.code
    ]


def require_remote_support(graph: Graph, waits_for: Sequence[PipelineDependencyRow]) -> None:
    """Raise RemoteUnsupportedError for the first rule of the pipeline an orchestrator can't express."""
    for row in waits_for:
        if row.dependency_type == DependencyType.HAS_DATA.value:
            raise RemoteUnsupportedError(
                f"pipeline {graph.code}: its dependency on pipeline {row.depends_on_pipeline_code}",
                found="dependency type HAS_DATA",
                expected="SUCCESS, FAILURE or ALWAYS: an orchestrator can't see rows written",
                remedy=REMEDY,
            )
    for node in sorted(graph.tasks.values(), key=lambda n: n.code):
        subject = f"task {graph.code}.{node.code}"
        types = {e.type for e in node.edges}
        if node.run_condition is RunCondition.N:
            raise RemoteUnsupportedError(
                subject,
                found=f"RUN_CONDITION N (RUN_CONDITION_COUNT {node.run_condition_count})",
                expected="ALL or ANY: an orchestrator has no 'N of M' trigger rule",
                remedy=REMEDY,
            )
        if DependencyType.HAS_DATA in types:
            raise RemoteUnsupportedError(
                subject,
                found="a HAS_DATA dependency",
                expected="SUCCESS, FAILURE or ALWAYS: an orchestrator can't see rows written",
                remedy=REMEDY,
            )
        if len(types) > 1:
            raise RemoteUnsupportedError(
                subject,
                found=f"mixed dependency types ({', '.join(sorted(t.value for t in types))})",
                expected="one dependency type per task: a trigger rule waits for one kind of outcome",
                remedy=REMEDY,
            )
        crossing = [e for e in node.edges if e.cross_pipeline]
        if crossing and types == {DependencyType.FAILURE} and len(crossing) < len(node.edges):
            raise RemoteUnsupportedError(
                subject,
                found=f"a FAILURE dependency on {crossing[0].upstream_code} beside FAILURE dependencies "
                "within the pipeline",
                expected="FAILURE dependencies all within the pipeline, or all on other pipelines' tasks: a "
                "sensor that saw the upstream fail succeeds, and a trigger rule can't wait for failed "
                "tasks and a succeeded sensor at once",
                remedy=REMEDY,
            )


def checked_upstreams(conn: sa.Connection, graph: Graph) -> list[PipelineDependencyRow]:
    """The pipelines this one waits for, once the whole pipeline is known to be one remote mode can run."""
    waits_for = upstream_pipelines(graph, reads.pipeline_dependencies(conn, graph.pipeline.pipeline_id))
    require_remote_support(graph, waits_for)
    return waits_for
