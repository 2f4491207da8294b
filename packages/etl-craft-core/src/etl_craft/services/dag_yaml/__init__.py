"""`generate-yml`: a pipeline as an orchestrator's DAG (versioned YAML), checked before it is written."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from etl_craft.core import cron
from etl_craft.core.errors import ConfigurationError, UsageError
from etl_craft.engine import reads
from etl_craft.execution.graph import load_graph
from etl_craft.services.context import OperationContext
from etl_craft.services.dag_yaml.airflow_range import DEFAULT_RANGE, parse_range
from etl_craft.services.dag_yaml.build import build_dag
from etl_craft.services.dag_yaml.check import check_document
from etl_craft.services.dag_yaml.docs_dag import build_docs_dag
from etl_craft.services.dag_yaml.global_dag import build_global_dag
from etl_craft.services.runs.remote import checked_upstreams, require_remote_support, upstream_pipelines

__all__ = ["DEFAULT_RANGE", "GeneratedYaml", "dag_document", "docs_document", "dump", "generate_yml", "global_document"]


@dataclass(frozen=True)
class GeneratedYaml:
    dag_id: str
    text: str
    output: Path | None  # where it was written, None for stdout


def dump(document: dict[str, Any]) -> str:
    import yaml

    return yaml.safe_dump(document, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1_000_000)


def dag_document(ctx: OperationContext, pipeline_code: str, airflow_range: str) -> dict[str, Any]:
    """The checked DAG document of one pipeline, or the error that refuses it (exit 18 for a rule
    remote mode can't express)."""
    airflow = parse_range(airflow_range)
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        graph = load_graph(conn, pipeline)
        waits_for = checked_upstreams(conn, graph)
        created = reads.pipeline_created(conn, pipeline.pipeline_id)
    zone = ZoneInfo(pipeline.schedule_timezone or ctx.config.orchestration.timezone)
    start = pipeline.schedule_start_date or _local_date(created, zone)
    document = build_dag(graph, waits_for, ctx.config.orchestration, start, airflow)
    check_document(document)
    return document


def _local_date(moment: datetime, zone: ZoneInfo) -> Any:
    # SQLite hands back naive timestamps; the Engine DB stores UTC.
    aware = moment if moment.tzinfo else moment.replace(tzinfo=ZoneInfo("UTC"))
    return aware.astimezone(zone).date()


def global_document(ctx: OperationContext, airflow_range: str) -> dict[str, Any]:
    """The checked global DAG document: one step per active pipeline, triggering its DAG."""
    settings = ctx.config.orchestration
    if not settings.global_dag:
        raise ConfigurationError(
            "etl-craft generate-yml --global",
            found="Orchestration.Global_dag false",
            expected="Orchestration.Global_dag: true to allow one DAG for every pipeline",
            remedy="set Global_dag: true, or generate one DAG per pipeline with --pipeline_code",
        )
    airflow = parse_range(airflow_range)
    with ctx.db.read() as conn:
        pipelines = reads.pipelines(conn)
        rows = reads.pipeline_dependencies(conn, None)
        created = reads.pipelines_created(conn)
        # The global DAG triggers each pipeline's DAG: each must be one remote mode can express.
        for pipeline in pipelines:
            graph = load_graph(conn, pipeline)
            require_remote_support(graph, upstream_pipelines(graph, rows))
    starts = [
        p.schedule_start_date or _local_date(created[p.pipeline_id], ZoneInfo(p.schedule_timezone or settings.timezone))
        for p in pipelines
    ]
    if not pipelines:
        raise ConfigurationError(
            "etl-craft generate-yml --global",
            found="no active pipeline",
            expected="at least one pipeline with ACTIVE_FLAG Y",
            remedy="add a pipeline in a project migration and run etl-craft migrate",
        )
    document = build_global_dag(pipelines, rows, settings, min(starts), airflow)
    check_document(document)
    return document


def docs_document(ctx: OperationContext, airflow_range: str) -> dict[str, Any]:
    """The checked catalog DAG: generate-docs on Docs_site.Schedule (exit 3 when it is not set)."""
    site = ctx.config.docs_site
    if site is None or not site.schedule:
        raise ConfigurationError(
            "Docs_site.Schedule",
            found="no Docs_site section" if site is None else "an empty Docs_site.Schedule",
            expected="a cron expression or preset (e.g. '0 5 * * *' or '@daily') for the catalog DAG",
            remedy="set Docs_site.Schedule in the config, or run etl-craft generate-docs from your own scheduler",
        )
    try:
        cron.parse(site.schedule)
    except cron.CronError as error:
        raise ConfigurationError(
            "Docs_site.Schedule",
            found=f"{site.schedule!r} ({error.problem})",
            expected=cron.EXPECTED,
            remedy="correct Docs_site.Schedule (etl-craft validate checks it too)",
        ) from None
    airflow = parse_range(airflow_range)
    settings = ctx.config.orchestration
    zone = ZoneInfo(settings.timezone)
    with ctx.db.read() as conn:
        created = reads.pipelines_created(conn)
    # Stable across generations: the day the first pipeline was created, else today.
    start = min((_local_date(moment, zone) for moment in created.values()), default=datetime.now(zone).date())
    document = build_docs_dag(site, settings, start, airflow)
    check_document(document)
    return document


def generate_yml(
    ctx: OperationContext,
    *,
    pipeline_code: str | None,
    whole: bool = False,
    docs: bool = False,
    airflow_range: str = DEFAULT_RANGE,
    output: Path | None = None,
) -> GeneratedYaml:
    if docs:
        document = docs_document(ctx, airflow_range)
    elif whole:
        document = global_document(ctx, airflow_range)
    else:
        assert pipeline_code is not None  # the CLI requires one of the three forms
        document = dag_document(ctx, pipeline_code, airflow_range)
    text = dump(document)
    if output is not None:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as error:
            raise UsageError(
                f"--output {output}",
                found=f"a path that can't be written ({error.strerror})",
                expected="a file path in an existing, writable folder",
                remedy="choose another --output, or leave it out to print the YAML",
            ) from None
    return GeneratedYaml(document["dag_id"], text, output)
