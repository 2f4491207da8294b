"""One pipeline as a DAG document (`etl_craft_yaml_version: 1`, interface §13).

The DAG's steps: `__init__` starts the run under the DAG run's key; a sensor per upstream pipeline
and per other pipeline's task waits for it; one step per task runs it under the same key; and
`__finalize__` ends the run whatever happened. Airflow decides when each step starts (trigger
rules); etl-craft records what it did. Every command is a list of arguments joined by shlex.join,
so no code or template reaches the shell unquoted (S2.H.2).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from datetime import date
from typing import Any

from etl_craft import __version__
from etl_craft.config.model import OrchestrationSettings
from etl_craft.core.enums import DependencyType, RunCondition
from etl_craft.engine.reads import PipelineDependencyRow
from etl_craft.execution.graph import Graph, TaskNode
from etl_craft.services.dag_yaml.airflow_range import ONE_DONE_SINCE, TEMPLATES_SINCE, AirflowRange

YAML_VERSION = 1
INIT = "__init__"
FINALIZE = "__finalize__"
RUN_KEY = "orchestrator:{{ run_id }}"
RUN_DATE = "{{ data_interval_end | ds }}"
# Who acts, as AUD_ACTIONS records it: the orchestrator, named by the DAG run (interface §13).
ACTOR = ("env", "ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR", "ETL_CRAFT_ACTOR=airflow:{{ run_id }}")
SENSOR_POKE_SECONDS = 60

# Trigger rule by (run condition, dependency type); sensors count as SUCCESS dependencies.
TRIGGER_RULES = {
    (RunCondition.ALL, DependencyType.SUCCESS): "all_success",
    (RunCondition.ALL, DependencyType.FAILURE): "all_failed",
    (RunCondition.ALL, DependencyType.ALWAYS): "all_done",
    (RunCondition.ANY, DependencyType.SUCCESS): "one_success",
    (RunCondition.ANY, DependencyType.FAILURE): "one_failed",
    (RunCondition.ANY, DependencyType.ALWAYS): "one_done",
}
ALL_FINISHED = ["success", "failed", "upstream_failed", "skipped"]
# (allowed, failed) states of a sensor by dependency type: on a DAG run, on a task.
PIPELINE_STATES = {
    DependencyType.SUCCESS: (["success"], ["failed"]),
    DependencyType.FAILURE: (["failed"], ["success"]),
    DependencyType.ALWAYS: (["success", "failed"], []),
}
TASK_STATES = {
    DependencyType.SUCCESS: (["success"], ["failed", "upstream_failed", "skipped"]),
    DependencyType.FAILURE: (["failed", "upstream_failed"], ["success", "skipped"]),
    DependencyType.ALWAYS: (ALL_FINISHED, []),
}


def command(pipeline_code: str, *flags: str) -> str:
    return shlex.join([*ACTOR, "etl-craft", "run", "--pipeline_code", pipeline_code, *flags])


def _parameters(graph: Graph) -> dict[str, Any]:
    """PIPELINE_PARAMETERS as a mapping (validate reports a malformed value; generation ignores it)."""
    raw = graph.pipeline.pipeline_parameters
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return {}
    return raw if isinstance(raw, dict) else {}


def default_args(graph: Graph, settings: OrchestrationSettings) -> dict[str, Any]:
    params = _parameters(graph)
    return {
        "retries": params.get("RETRIES", settings.retries),
        "retry_delay_minutes": params.get("RETRY_DELAY_MINUTES", settings.retry_delay_minutes),
        "depends_on_past": params.get("DEPENDS_ON_PAST", settings.depends_on_past),
        "email_on_failure": params.get("EMAIL_ON_FAILURE", settings.email_on_failure),
        "email": list(params.get("EMAIL_RECIPIENTS", settings.email_recipients)),
    }


def _sensor(step_id: str, dag_id: str, task_id: str | None, kind: DependencyType, timeout: int) -> dict[str, Any]:
    allowed, failed = (TASK_STATES if task_id else PIPELINE_STATES)[kind]
    return {
        "task_id": step_id,
        "kind": "sensor",
        "external_dag_id": dag_id,
        "external_task_id": task_id,
        "allowed_states": allowed,
        "failed_states": failed,
        "timeout_seconds": timeout,
        "poke_interval_seconds": SENSOR_POKE_SECONDS,
        "depends_on": [INIT],
        "trigger_rule": "all_success",
    }


def _task_sensor_id(upstream_code: str) -> str:
    return f"__wait_for_{upstream_code}__"


def _trigger_rule(graph: Graph, node: TaskNode, airflow: AirflowRange) -> str:
    local = graph.local_edges(node.task_id)
    if not local:
        return "all_success"  # only __init__, the pipeline sensors and its own sensors
    rule = TRIGGER_RULES[(node.run_condition, local[0].type)]
    if rule == "one_done":
        airflow.require(ONE_DONE_SINCE, f"task {graph.code}.{node.code}", "RUN_CONDITION ANY over ALWAYS (one_done)")
    return rule


def _task_step(graph: Graph, node: TaskNode, pipeline_sensors: list[str], airflow: AirflowRange) -> dict[str, Any]:
    local = sorted(graph.tasks[e.upstream].code for e in graph.local_edges(node.task_id))
    sensors = sorted(_task_sensor_id(e.upstream_code) for e in node.edges if e.cross_pipeline)
    upstream = local or [INIT, *pipeline_sensors]
    return {
        "task_id": node.code,
        "kind": "command",
        "command": command(graph.code, "--task_code", node.code, "--run-key", RUN_KEY),
        "depends_on": [*upstream, *sensors],
        "trigger_rule": _trigger_rule(graph, node, airflow),
    }


def _ordered(graph: Graph) -> list[TaskNode]:
    """Tasks in dependency order (waves), by code within a wave, so the document is stable."""
    return [node for wave in graph.waves() for node in wave]


def build_dag(
    graph: Graph,
    waits_for: Sequence[PipelineDependencyRow],
    settings: OrchestrationSettings,
    start_date: date,
    airflow: AirflowRange,
) -> dict[str, Any]:
    """The DAG document of one pipeline; the caller checked it is one remote mode can express."""
    airflow.require(TEMPLATES_SINCE, f"pipeline {graph.code}", "the run_id and data_interval_end templates")
    pipeline = graph.pipeline
    params = _parameters(graph)
    timeout = settings.gate_wait_minutes * 60
    steps: list[dict[str, Any]] = [
        {
            "task_id": INIT,
            "kind": "command",
            "command": command(graph.code, "--init-only", "--run-key", RUN_KEY, "--run-date", RUN_DATE),
            "depends_on": [],
            "trigger_rule": "all_success",
        }
    ]
    pipeline_sensors = []
    # With Global_dag the global DAG triggers this one after its upstream pipelines: no pipeline sensors.
    for row in [] if settings.global_dag else sorted(waits_for, key=lambda r: r.depends_on_pipeline_code):
        step_id = _task_sensor_id(row.depends_on_pipeline_code)
        pipeline_sensors.append(step_id)
        steps.append(_sensor(step_id, row.depends_on_pipeline_code, None, DependencyType(row.dependency_type), timeout))
    seen_sensors: set[str] = set()
    for node in _ordered(graph):
        for edge in node.edges:
            step_id = _task_sensor_id(edge.upstream_code)
            if edge.cross_pipeline and step_id not in seen_sensors:
                seen_sensors.add(step_id)
                dag_id, task_id = edge.upstream_code.split(".", 1)
                steps.append(_sensor(step_id, dag_id, task_id, edge.type, timeout))
    tasks = [_task_step(graph, node, pipeline_sensors, airflow) for node in _ordered(graph)]
    steps += tasks
    steps.append(
        {
            "task_id": FINALIZE,
            "kind": "command",
            "command": command(graph.code, "--finalize-only", "--run-key", RUN_KEY),
            "depends_on": [s["task_id"] for s in steps],
            "trigger_rule": "all_done",
        }
    )
    # With Global_dag only the global DAG has a schedule: it triggers this DAG.
    schedule = pipeline.run_schedule if settings.allow_schedule and not settings.global_dag else None
    return {
        "etl_craft_yaml_version": YAML_VERSION,
        "generated_by": f"etl-craft {__version__}",
        "airflow_version": airflow.text,
        "dag_id": graph.code,
        "description": pipeline.description or pipeline.pipeline_name,
        "schedule": schedule,
        "timezone": pipeline.schedule_timezone or settings.timezone,
        "start_date": start_date.isoformat(),
        "sla_hours": float(pipeline.sla_in_hours) if pipeline.sla_in_hours is not None else None,
        "refresh_type": pipeline.refresh_type,
        "catchup": bool(params.get("CATCHUP", pipeline.catchup == "Y" or settings.catchup)),
        "tags": _tags(params, settings),
        "default_args": default_args(graph, settings),
        "max_active_runs": 1,
        "tasks": steps,
    }


def _tags(params: dict[str, Any], settings: OrchestrationSettings) -> list[str]:
    """Every DAG is tagged etl-craft, then with the pipeline's TAGS, else Orchestration.Tags."""
    tags = ["etl-craft", *params.get("TAGS", settings.tags)]
    return list(dict.fromkeys(tags))
