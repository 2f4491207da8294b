"""The web UI's dependency editor: a task dependency in a pipeline added or retired through a form.

Each change goes through the metadata editor's trial (`judged_write`): written and judged by
`validate` for the pipeline in a rolled-back transaction, then written for real only when no check
fails, so a cycle or a dependency validate refuses never lands. A saved change is in
AUD_METADATA_CHANGES (the guard triggers) and AUD_ACTIONS (`metadata edit`) with the user as actor.
Dependencies on another pipeline's tasks stay in project migrations: the form offers the
pipeline's own tasks only.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlalchemy as sa

from etl_craft.core.enums import DependencyType
from etl_craft.core.errors import UnknownCodeError, UsageError
from etl_craft.core.text import did_you_mean
from etl_craft.engine import reads
from etl_craft.engine.records.actions import record_request
from etl_craft.engine.records.task_dependencies import add_dependency, retire_dependency
from etl_craft.services.context import OperationContext
from etl_craft.services.metadata_editor import judged_write
from etl_craft.services.validate import ValidationReport


@dataclass(frozen=True)
class DependencyEdit:
    """Add (`task_code` waits on `upstream_code` with `dependency_type`) or retire (`dependency_id`)."""

    pipeline_code: str
    task_code: str = ""
    upstream_code: str = ""
    dependency_type: str = DependencyType.SUCCESS.value
    dependency_id: int | None = None


@dataclass(frozen=True)
class DependencyEditResult:
    edit: DependencyEdit
    saved: bool
    report: ValidationReport

    @property
    def message(self) -> str:
        e = self.edit
        what = (
            f"{e.pipeline_code}: dependency {e.dependency_id} retired"
            if e.dependency_id is not None
            else f"{e.pipeline_code}: {e.task_code} waits on {e.upstream_code} ({e.dependency_type})"
        )
        if self.saved:
            return f"{what}; saved, {self.report.summary}"
        return f"{what}: not saved, validate refused it ({self.report.summary})"


@dataclass(frozen=True)
class DependencyView:
    task_dependency_id: int
    task_code: str
    upstream: str  # TASK, or PIPELINE.TASK for a task of another pipeline
    dependency_type: str
    editable: bool  # a dependency on another pipeline's task is edited in project migrations


@dataclass(frozen=True)
class PipelineDependencies:
    pipeline_code: str
    task_codes: tuple[str, ...]
    dependencies: tuple[DependencyView, ...]


def pipeline_dependencies(ctx: OperationContext, pipeline_code: str) -> PipelineDependencies:
    """The pipeline's active tasks and task dependencies, for the editor (a fixed number of statements)."""
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        tasks = reads.pipeline_tasks(conn, pipeline.pipeline_id)
        edges = reads.pipeline_edges(conn, pipeline.pipeline_id)
        codes = reads.task_codes(conn, {e.task_id for e in edges} | {e.depends_on_task_id for e in edges})
    views = []
    for edge in edges:
        upstream_pipeline, upstream_task, _ = codes[edge.depends_on_task_id]
        own = upstream_pipeline == pipeline_code
        views.append(
            DependencyView(
                edge.task_dependency_id,
                codes[edge.task_id][1],
                upstream_task if own else f"{upstream_pipeline}.{upstream_task}",
                edge.dependency_type,
                own,
            )
        )
    return PipelineDependencies(pipeline_code, tuple(t.task_code for t in tasks), tuple(views))


def pipeline_task_ids(ctx: OperationContext, pipeline_code: str) -> tuple[int, dict[str, int]]:
    """(pipeline id, task code -> task id of its active tasks)."""
    with ctx.db.read() as conn:
        pipeline = reads.find_pipeline(conn, pipeline_code)
        tasks = {t.task_code: t.task_id for t in reads.pipeline_tasks(conn, pipeline.pipeline_id)}
    return pipeline.pipeline_id, tasks


def known_task(tasks: dict[str, int], pipeline_code: str, code: str, role: str) -> int:
    if code not in tasks:
        raise UnknownCodeError(
            f"the {role} task {pipeline_code}.{code}",
            found="no active task with this code in the pipeline",
            expected="the code of an active task of the pipeline",
            remedy="pick the task from the form's list" + did_you_mean(code, list(tasks)),
        )
    return tasks[code]


def add_task_dependency(ctx: OperationContext, edit: DependencyEdit) -> DependencyEditResult:
    """`task_code` waits on `upstream_code`; refused with validate's findings when the graph breaks."""
    if edit.dependency_type not in {d.value for d in DependencyType}:
        raise UsageError(
            "the dependency type",
            found=repr(edit.dependency_type[:32]),
            expected=", ".join(d.value for d in DependencyType),
            remedy="pick one of the form's dependency types",
        )
    pipeline_id, tasks = pipeline_task_ids(ctx, edit.pipeline_code)
    task_id = known_task(tasks, edit.pipeline_code, edit.task_code, "waiting")
    upstream_id = known_task(tasks, edit.pipeline_code, edit.upstream_code, "upstream")
    added, report, saved = judged_write(
        ctx,
        edit.pipeline_code,
        lambda conn: add_dependency(conn, pipeline_id, task_id, upstream_id, edit.dependency_type),
    )
    if saved:
        arguments = {
            "pipeline_code": edit.pipeline_code,
            "task_code": edit.task_code,
            "depends_on": edit.upstream_code,
            "dependency_type": edit.dependency_type,
            "task_dependency_id": added,
        }
        record_request(ctx.db, ctx.actor, "metadata edit", arguments, pipeline_id=pipeline_id, task_id=task_id)
    return DependencyEditResult(edit, saved, report)


def retire_task_dependency(ctx: OperationContext, edit: DependencyEdit) -> DependencyEditResult:
    """Retire the pipeline's active dependency `dependency_id` (validate judges the pipeline without it)."""
    pipeline_id, _ = pipeline_task_ids(ctx, edit.pipeline_code)
    dependency_id = edit.dependency_id
    assert dependency_id is not None  # the route always names one

    def write(conn: sa.Connection) -> None:
        if retire_dependency(conn, pipeline_id, dependency_id) != 1:
            raise UnknownCodeError(
                f"dependency {dependency_id} of pipeline {edit.pipeline_code}",
                found="no active dependency with this id in the pipeline",
                expected="the id of an active CFG_TASK_DEPENDENCY row of the pipeline",
                remedy="reload the dependencies page: it may have been retired already",
            )

    _, report, saved = judged_write(ctx, edit.pipeline_code, write)
    if saved:
        arguments = {"pipeline_code": edit.pipeline_code, "retired_task_dependency_id": dependency_id}
        record_request(ctx.db, ctx.actor, "metadata edit", arguments, pipeline_id=pipeline_id)
    return DependencyEditResult(edit, saved, report)
