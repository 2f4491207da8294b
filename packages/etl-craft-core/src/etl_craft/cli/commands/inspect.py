"""`list`, `graph` and `steps`: pipelines, their task graphs and their tasks' settings (read-only)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from etl_craft.cli import arguments
from etl_craft.cli.commands.run import add_run_selector
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit
from etl_craft.cli.text import ABSENT, rows, run_line, when
from etl_craft.core.errors import ExitCode

if TYPE_CHECKING:
    from etl_craft.services.inspect.pipelines import GraphView, ListedPipeline, PipelineList, StepsView, StepView


def _pipeline_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pipeline_code", type=arguments.code, required=True, metavar="CODE")


# --- list --------------------------------------------------------------------------------------------


def _paused(p: ListedPipeline) -> str:
    if p.pause is None:
        return ABSENT
    return f"paused by {p.pause.paused_by} since {when(p.pause.paused_at)}: {p.pause.reason}"


def list_text(view: PipelineList) -> list[str]:
    if not view.pipelines:
        return ["no active pipelines; add one with a project migration (etl-craft migrate)"]
    return rows(
        ["PIPELINE_CODE", "PIPELINE_NAME", "REFRESH_TYPE", "RUN_SCHEDULE", "SLA_IN_HOURS", "PAUSED"],
        [
            [
                p.pipeline_code,
                p.pipeline_name,
                p.refresh_type,
                f"{p.run_schedule} ({p.schedule_timezone})"
                if p.run_schedule and p.schedule_timezone
                else p.run_schedule,
                p.sla_in_hours,
                _paused(p),
            ]
            for p in view.pipelines
        ],
    )


def _run_list(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.inspect import list_pipelines

    ctx = open_context(args.config)
    try:
        view = list_pipelines(ctx)
    finally:
        ctx.close()
    emit(args, "pipeline-list", view, list_text(view))
    return ExitCode.SUCCESS


# --- graph -------------------------------------------------------------------------------------------


def graph_text(view: GraphView) -> list[str]:
    tasks = sum(len(wave) for wave in view.waves)
    lines = [f"{view.pipeline.pipeline_code}: {tasks} task(s) in {len(view.waves)} wave(s)"]
    lines += [f"wave {i}: {', '.join(wave)}" for i, wave in enumerate(view.waves, start=1)]
    early = ", ".join(
        f"{e.task_code} ({e.run_condition}: {e.required} of {e.dependencies})" for e in view.early_starters
    )
    lines.append(f"early starters: {early or '(none)'}")
    if view.task_dependencies:
        lines.append("Task dependencies:")
        lines += rows(
            ["TASK", "DEPENDS_ON", "TYPE"],
            [[d.task_code, d.depends_on, d.dependency_type] for d in view.task_dependencies],
        )
    else:
        lines.append("Task dependencies: (none)")
    if view.pipeline_dependencies:
        lines.append("Pipeline dependencies:")
        lines += rows(
            ["PIPELINE", "DEPENDS_ON", "TYPE"],
            [
                [d.pipeline_code, d.depends_on_pipeline_code, d.dependency_type + ("" if d.active else " (inactive)")]
                for d in view.pipeline_dependencies
            ],
        )
    else:
        lines.append("Pipeline dependencies: (none)")
    return lines


def _run_graph(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.inspect import pipeline_graph

    ctx = open_context(args.config)
    try:
        view = pipeline_graph(ctx, args.pipeline_code)
    finally:
        ctx.close()
    emit(args, "graph", view, graph_text(view))
    return ExitCode.SUCCESS


# --- steps -------------------------------------------------------------------------------------------


def _condition(step: StepView) -> str:
    return f"N={step.run_condition_count}" if step.run_condition == "N" else step.run_condition


def steps_text(view: StepsView) -> list[str]:
    code = view.pipeline.pipeline_code
    if view.run is not None:
        lines = [run_line(view.run)]
    else:
        lines = [f"{code}: no unfinished run; name a run with --run-id or --run-key to see task statuses"]
    lines += rows(
        ["TASK", "STATUS", "HANDLER", "TASK_TYPE", "RUN_CONDITION"],
        [[s.task_code, s.status, s.handler, s.task_type, _condition(s)] for s in view.steps],
    )
    parameters = [[s.task_code, name, value] for s in view.steps for name, value in s.parameters.items()]
    if parameters:
        lines.append("Parameters:")
        lines += rows(["TASK", "PARAMETER", "VALUE"], parameters)
    else:
        lines.append("Parameters: (none)")
    return lines


def _configure_steps(parser: argparse.ArgumentParser) -> None:
    _pipeline_option(parser)
    add_run_selector(parser)


def _run_steps(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.inspect import pipeline_steps
    from etl_craft.services.runs.selection import RunSelector

    ctx = open_context(args.config)
    try:
        view = pipeline_steps(ctx, args.pipeline_code, RunSelector(args.run_id, args.run_key))
    finally:
        ctx.close()
    emit(args, "steps", view, steps_text(view))
    return ExitCode.SUCCESS


LIST = Command("list", "list the active pipelines: schedule, SLA, refresh type and pauses", _run_list)
GRAPH = Command(
    "graph", "show a pipeline's waves, early starters, task and pipeline dependencies", _run_graph, _pipeline_option
)
STEPS = Command(
    "steps", "show a pipeline's tasks, their settings and their status under a run", _run_steps, _configure_steps
)
