"""`generate-yml --global`: one DAG that triggers every pipeline's DAG in pipeline-dependency order
(interface §13, Orchestration.Global_dag).

Each step triggers one pipeline's DAG under the global DAG run's id and waits for it to end, so the
pipeline's run key is `orchestrator:<global run id>` and clearing a step in an older global run
re-runs that pipeline's older run (reset_dag_run). A pipeline step waits for the steps of the
pipelines it depends on with the trigger rule of their one dependency type. The pipeline DAGs
themselves, generated with Global_dag on, have no schedule and no pipeline sensors: the global DAG
alone decides when they run.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import date
from graphlib import CycleError, TopologicalSorter
from typing import Any

from etl_craft import __version__
from etl_craft.config.model import OrchestrationSettings
from etl_craft.core.enums import DependencyType, RunCondition
from etl_craft.core.errors import GraphError, RemoteUnsupportedError
from etl_craft.engine.reads import PipelineDependencyRow, PipelineRow
from etl_craft.services.dag_yaml.airflow_range import AirflowRange
from etl_craft.services.dag_yaml.build import SENSOR_POKE_SECONDS, TEMPLATES_SINCE, TRIGGER_RULES, YAML_VERSION
from etl_craft.services.runs.remote import REMEDY

GLOBAL_DAG_ID = "etl_craft_global"
_GLOBAL_REMEDY = "give the pipelines one RUN_SCHEDULE and SCHEDULE_TIMEZONE, or generate one DAG per pipeline"


def _one_value(pipelines: Sequence[PipelineRow], value: Any, what: str) -> Any:
    """The one value every pipeline that sets it agrees on (None if none sets it), else exit 18."""
    found = {value(p) for p in pipelines} - {None}
    if len(found) > 1:
        by_value = "; ".join(
            f"{v} ({', '.join(p.pipeline_code for p in pipelines if value(p) == v)})" for v in sorted(found)
        )
        raise RemoteUnsupportedError(
            "etl-craft generate-yml --global",
            found=f"pipelines with different {what}s: {by_value}",
            expected=f"one {what} for a global DAG, which runs every pipeline in one DAG run",
            remedy=_GLOBAL_REMEDY,
        )
    return next(iter(found), None)


def _upstreams(
    pipelines: Sequence[PipelineRow], rows: Sequence[PipelineDependencyRow]
) -> dict[str, tuple[list[str], DependencyType | None]]:
    """Each pipeline's upstream pipelines and their one dependency type (exit 18 for mixed types; the
    caller refused HAS_DATA with each pipeline's own rules)."""
    codes = {p.pipeline_code for p in pipelines}
    ups: dict[str, list[PipelineDependencyRow]] = defaultdict(list)
    for row in rows:
        if row.pipeline_code in codes and row.depends_on_pipeline_code in codes:
            ups[row.pipeline_code].append(row)
    found: dict[str, tuple[list[str], DependencyType | None]] = {}
    for code in sorted(codes):
        mine = ups.get(code, [])
        types = sorted({r.dependency_type for r in mine})
        subject = f"pipeline {code}: its pipeline dependencies"
        if len(types) > 1:
            raise RemoteUnsupportedError(
                subject,
                found=f"mixed dependency types ({', '.join(types)}) in a global DAG",
                expected="one dependency type per pipeline: a trigger rule waits for one kind of outcome",
                remedy=REMEDY,
            )
        found[code] = (sorted({r.depends_on_pipeline_code for r in mine}), DependencyType(types[0]) if types else None)
    return found


def _ordered(upstreams: dict[str, tuple[list[str], DependencyType | None]]) -> list[str]:
    """Pipeline codes with every pipeline after those it depends on, by code among equals."""
    sorter = TopologicalSorter({code: ups for code, (ups, _) in upstreams.items()})
    try:
        sorter.prepare()
    except CycleError as error:
        raise GraphError(
            "etl-craft generate-yml --global",
            found=f"a cycle of pipeline dependencies: {' -> '.join(error.args[1])}",
            expected="pipeline dependencies without cycles",
            remedy="retire one of these pipeline dependencies (etl-craft validate lists them)",
        ) from None
    order: list[str] = []
    while sorter.is_active():
        ready = sorted(sorter.get_ready())
        order += ready
        sorter.done(*ready)
    return order


def _trigger_step(code: str, upstream: list[str], kind: DependencyType | None) -> dict[str, Any]:
    return {
        "task_id": code,
        "kind": "trigger",
        "trigger_dag_id": code,
        "allowed_states": ["success"],
        "failed_states": ["failed"],
        "poke_interval_seconds": SENSOR_POKE_SECONDS,
        "depends_on": upstream,
        "trigger_rule": TRIGGER_RULES[(RunCondition.ALL, kind)] if kind else "all_success",
    }


def build_global_dag(
    pipelines: Sequence[PipelineRow],
    rows: Sequence[PipelineDependencyRow],
    settings: OrchestrationSettings,
    start_date: date,
    airflow: AirflowRange,
) -> dict[str, Any]:
    airflow.require(TEMPLATES_SINCE, "etl-craft generate-yml --global", "the run_id and data_interval_end templates")
    if any(p.pipeline_code == GLOBAL_DAG_ID for p in pipelines):
        raise RemoteUnsupportedError(
            "etl-craft generate-yml --global",
            found=f"a pipeline named {GLOBAL_DAG_ID}, the global DAG's own id",
            expected="no pipeline of that code",
            remedy="rename the pipeline in a project migration",
        )
    schedule = _one_value(pipelines, lambda p: p.run_schedule, "RUN_SCHEDULE")
    timezone = _one_value(pipelines, lambda p: p.schedule_timezone, "SCHEDULE_TIMEZONE") or settings.timezone
    upstreams = _upstreams(pipelines, rows)
    steps = [_trigger_step(code, *upstreams[code]) for code in _ordered(upstreams)]
    return {
        "etl_craft_yaml_version": YAML_VERSION,
        "generated_by": f"etl-craft {__version__}",
        "airflow_version": airflow.text,
        "dag_id": GLOBAL_DAG_ID,
        "description": f"every etl-craft pipeline ({len(steps)}), in pipeline-dependency order",
        "schedule": schedule if settings.allow_schedule else None,
        "timezone": timezone,
        "start_date": start_date.isoformat(),
        "sla_hours": None,
        "refresh_type": None,
        "catchup": settings.catchup,
        "tags": list(dict.fromkeys(["etl-craft", *settings.tags])),
        "default_args": {
            "retries": settings.retries,
            "retry_delay_minutes": settings.retry_delay_minutes,
            "depends_on_past": settings.depends_on_past,
            "email_on_failure": settings.email_on_failure,
            "email": list(settings.email_recipients),
        },
        "max_active_runs": 1,
        "tasks": steps,
    }
