"""What an alert reports: the outcome of the tasks it watches, their errors, and the message body.

An alert watches every other non-alert task of its pipeline, unless all its dependencies are FAILURE
dependencies: then it watches only those upstream tasks (interface §10). The outcome is FAILED when
any watched task failed; COMPLETED_WITH_ERRORS when none failed but one was skipped, cancelled or not
finished, needed a retry, succeeded with an error message, or the run is past its SLA while
Orchestration.Enforce_sla is true; SUCCESS otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from etl_craft.core.clock import utc_now
from etl_craft.core.enums import DependencyType, Handler
from etl_craft.core.errors import MetadataError, TaskParameterError
from etl_craft.core.sla import sla_verdict
from etl_craft.engine import reads
from etl_craft.engine.reads import RunRow, TaskRunRow
from etl_craft.handlers.context import TaskContext

NOT_RUN = "NOT RUN"


@dataclass(frozen=True)
class WatchedTask:
    code: str  # PIPE.task for a task of another pipeline
    status: str  # the task run's status, or NOT RUN
    attempts: int
    rows_written: int | None
    error: str | None
    through_failure: bool  # watched through a FAILURE dependency

    @property
    def problem(self) -> str | None:
        """Why this task makes the outcome less than SUCCESS, or None."""
        if self.status == "FAILED":
            return "failed"
        if self.status == "SKIPPED":
            return "was skipped"
        if self.status != "SUCCESS":
            return "did not finish" if self.status != "CANCELLED" else "was cancelled"
        if self.attempts > 1:
            return f"needed {self.attempts} attempts"
        if self.error:
            return "succeeded with an error message"
        return None


@dataclass(frozen=True)
class RunReport:
    run: RunRow
    outcome: str
    tasks: tuple[WatchedTask, ...]
    reasons: tuple[str, ...]  # why the outcome is not SUCCESS, one line each
    error_message: str  # the value of $$error_message


def _watched(task: TaskRunRow | None, code: str, through_failure: bool) -> WatchedTask:
    if task is None:
        return WatchedTask(code, NOT_RUN, 0, None, None, through_failure)
    return WatchedTask(code, task.status, task.attempt_count, task.rows_written, task.error_message, through_failure)


def _watched_tasks(conn: sa.Connection, ctx: TaskContext) -> list[WatchedTask]:
    tasks = {t.task_id: t for t in reads.pipeline_tasks(conn, ctx.pipeline_id)}
    mine = [e for e in reads.pipeline_edges(conn, ctx.pipeline_id) if e.task_id == ctx.task_id]
    task_runs = reads.task_runs_of(conn, ctx.pipeline_run_id)
    failure_only = bool(mine) and all(e.dependency_type == DependencyType.FAILURE.value for e in mine)
    if not failure_only:
        via_failure = {e.depends_on_task_id for e in mine if e.dependency_type == DependencyType.FAILURE.value}
        return [
            _watched(task_runs.get(t.task_id), t.task_code, t.task_id in via_failure)
            for t in tasks.values()
            if t.task_id != ctx.task_id and t.handler != Handler.EMAIL_ALERT.value
        ]
    found = []
    codes = reads.task_codes(conn, [e.depends_on_task_id for e in mine if e.depends_on_pipeline_id is not None])
    for edge in mine:
        upstream = edge.depends_on_task_id
        if edge.depends_on_pipeline_id is None:
            name = tasks[upstream].task_code if upstream in tasks else str(upstream)
            found.append(_watched(task_runs.get(upstream), name, True))
        else:
            # A task of another pipeline: its latest task run.
            history = reads.task_runs_of_task(conn, upstream)
            latest = history[max(history)] if history else None
            pipeline_code, task_code, _active = codes.get(upstream, ("?", str(upstream), False))
            found.append(_watched(latest, f"{pipeline_code}.{task_code}", True))
    return found


def read_report(ctx: TaskContext) -> RunReport:
    with ctx.engine_db.read() as conn:
        run = reads.run(conn, ctx.pipeline_run_id)
        pipeline = reads.pipeline(conn, ctx.pipeline_id)
        watched = _watched_tasks(conn, ctx)
    assert run is not None and pipeline is not None
    reasons = [f"{t.code} {t.problem}" for t in watched if t.problem]
    if ctx.config.orchestration.enforce_sla and (
        run.sla_status == "BREACHED" or sla_verdict(pipeline.sla_in_hours, run.start_date, utc_now()) == "BREACHED"
    ):
        reasons.append(f"the run is past its SLA of {pipeline.sla_in_hours} hour(s)")
    if any(t.status == "FAILED" for t in watched):
        outcome = "FAILED"
    elif reasons:
        outcome = "COMPLETED_WITH_ERRORS"
    else:
        outcome = "SUCCESS"
    through_failure = [t for t in watched if t.through_failure]
    reported = (
        [t for t in through_failure if t.error]
        if through_failure
        else [t for t in watched if t.status == "FAILED" and t.error]
    )
    errors = "\n".join(f"{t.code}: {t.error}" for t in reported)
    return RunReport(run, outcome, tuple(watched), tuple(reasons), errors)


def _table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    """Columns padded to their widest cell, for a plain-text message."""
    cells = [[str(c) for c in header]] + [["-" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells]


def _first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else "-"


def pipelines_report(ctx: TaskContext, selection: tuple[str, ...]) -> list[str]:
    """EMAIL_PIPELINES: each pipeline's latest run, then a section with that run's tasks."""
    with ctx.engine_db.read() as conn:
        try:
            everything = selection == ("ALL",)
            chosen = reads.pipelines(conn) if everything else [reads.find_pipeline(conn, c) for c in selection]
        except MetadataError as unknown:
            raise TaskParameterError(
                f"task {ctx.task_code}: parameter EMAIL_PIPELINES",
                found=unknown.subject + (f" ({unknown.found})" if unknown.found else ""),
                expected="ALL, or active pipeline codes separated by |",
                remedy=unknown.remedy,
            ) from None
        latest = {p.pipeline_id: next(iter(reads.recent_runs(conn, p.pipeline_id, limit=1)), None) for p in chosen}
        sections = []
        for pipeline in chosen:
            run = latest[pipeline.pipeline_id]
            if run is None:
                continue
            codes = {t.task_id: t.task_code for t in reads.pipeline_tasks(conn, pipeline.pipeline_id)}
            task_runs = sorted(reads.task_runs_of(conn, run.pipeline_run_id).values(), key=lambda r: r.task_run_id)
            rows = [
                [
                    codes.get(r.task_id, r.task_id),
                    r.status,
                    r.attempt_count,
                    r.rows_written,
                    _first_line(r.error_message),
                ]
                for r in task_runs
            ]
            sections.append((pipeline.pipeline_code, run.pipeline_run_id, rows))
    lines = ["Latest runs:"]
    lines += _table(
        ["PIPELINE", "PIPELINE_RUN_ID", "STATUS", "START", "END"],
        [
            [p.pipeline_code]
            + (
                [run.pipeline_run_id, run.status, f"{run.start_date:%Y-%m-%d %H:%M:%S}Z", _when(run.end_date)]
                if (run := latest[p.pipeline_id])
                else ["-", "no runs yet", "-", "-"]
            )
            for p in chosen
        ],
    )
    for code, run_id, rows in sections:
        lines += ["", f"{code} (pipeline_run_id={run_id}):"]
        lines += _table(["TASK", "STATUS", "ATTEMPTS", "ROWS_WRITTEN", "ERROR"], rows)
    return lines


def _when(value: object) -> str:
    return "-" if value is None else f"{value:%Y-%m-%d %H:%M:%S}Z"


def body_text(ctx: TaskContext, report: RunReport, opening: str | None, pipelines: list[str]) -> str:
    """The plain-text body: the opening paragraph, this run's tasks and errors, the report, links."""
    run = report.run
    lines = [opening.rstrip(), ""] if opening else []
    lines.append(
        f"Pipeline {ctx.pipeline_code}, pipeline_run_id={run.pipeline_run_id} (run_key {run.run_key}, "
        f"run_date {run.run_date}): {report.outcome}"
    )
    lines += [f"- {reason}" for reason in report.reasons]
    if report.tasks:
        lines += ["", "Tasks:"]
        lines += _table(
            ["TASK", "STATUS", "ATTEMPTS", "ROWS_WRITTEN", "ERROR"],
            [[t.code, t.status, t.attempts, t.rows_written, _first_line(t.error)] for t in report.tasks],
        )
    errored = [t for t in report.tasks if t.error]
    if errored:
        lines += ["", "Errors:"]
        for task in errored:
            lines += [f"{task.code}:", *(f"  {line}" for line in (task.error or "").splitlines())]
    if pipelines:
        lines += ["", *pipelines]
    lines += [
        "",
        "Look further:",
        f"  etl-craft status --pipeline_code {ctx.pipeline_code} --run-id {run.pipeline_run_id}",
        f"  etl-craft history --pipeline_code {ctx.pipeline_code}",
    ]
    return "\n".join(lines) + "\n"
