"""EMAIL_ALERT tasks: recipients, outcomes, `$$` tokens, subjects and bodies, and what an alert depends on."""

from __future__ import annotations

import re

from etl_craft.core.enums import Handler
from etl_craft.core.text import did_you_mean
from etl_craft.execution.settings import TaskParameterError
from etl_craft.handlers.email_alert.template import OUTCOMES, parse_parameters
from etl_craft.services.validate.findings import Findings
from etl_craft.services.validate.project import Project, Task

EMAIL_PARAMETERS = (
    "EMAIL_TO",
    "EMAIL_SUBJECT",
    "EMAIL_BODY",
    *(f"EMAIL_SUBJECT_{o}" for o in OUTCOMES),
    *(f"EMAIL_BODY_{o}" for o in OUTCOMES),
    "EMAIL_ON_STATUS",
    "EMAIL_PIPELINES",
)
# The address rule of EMAIL_TO, for the EMAIL_RECIPIENTS list of PIPELINE_PARAMETERS.
_ADDRESS = re.compile(r"[^@\s<>,|]+@[^@\s<>,|]+")


def is_email_address(text: str) -> bool:
    return bool(_ADDRESS.fullmatch(text))


def _check_parameters(project: Project, task: Task, findings: Findings) -> tuple[str, ...]:
    """The handler's own parameter check (recipients, outcomes, tokens, subjects and bodies), then the
    pipelines a report names; returns the outcomes the alert sends on."""
    pipeline = project.code_of(task)
    try:
        alert = parse_parameters(task.code, task.values)
    except TaskParameterError as error:
        findings.error(error, pipeline, task.code)
        return OUTCOMES
    if alert.pipelines is not None and alert.pipelines != ("ALL",):
        active = {p.code for p in project.pipelines.values() if p.active}
        unknown = [c for c in alert.pipelines if c not in active]
        if unknown:
            findings.fail(
                pipeline,
                task.code,
                "parameter EMAIL_PIPELINES",
                found=", ".join(repr(c) for c in unknown) + ", not active pipeline code(s)",
                expected="ALL, or active pipeline codes separated by |",
                remedy="correct the codes" + did_you_mean(unknown[0], active),
            )
    return alert.on_status


def _check_dependencies(project: Project, task: Task, findings: Findings, outcomes: tuple[str, ...]) -> None:
    pipeline = project.code_of(task)
    rows = [r for r in project.task_dependencies if r["task_id"] == task.task_id]
    kinds = {r["dependency_type"] for r in rows}
    if rows and kinds == {"FAILURE"}:
        return  # watches only those tasks' failures
    upstream = {r["depends_on_task_id"] for r in rows if r["depends_on_pipeline_id"] in (None, task.pipeline_id)}
    dependents = project.dependents(task.pipeline_id)
    data = [t for t in project.tasks_of(task.pipeline_id) if t.handler != Handler.EMAIL_ALERT.value]
    terminal = [
        t
        for t in data
        if not any(
            project.tasks[r["task_id"]].active and project.tasks[r["task_id"]].handler != Handler.EMAIL_ALERT.value
            for r in dependents.get(t.task_id, [])
        )
    ]
    missing = [t.code for t in terminal if t.task_id not in upstream]
    if missing:
        findings.fail(
            pipeline,
            task.code,
            "dependencies",
            found=f"no dependency on the pipeline's last task(s) {', '.join(missing)}",
            expected="an alert that depends on every task nothing else waits for (usually with ALWAYS), "
            "so it reports the whole run, unless all its dependencies are FAILURE",
            remedy=f"add ALWAYS dependencies on {', '.join(missing)}",
        )
    reported = [o for o in outcomes if o in ("FAILED", "COMPLETED_WITH_ERRORS")]
    strict = sorted(
        project.label(r["depends_on_task_id"]) for r in rows if r["dependency_type"] in ("SUCCESS", "HAS_DATA")
    )
    if reported and strict:
        findings.warn(
            pipeline,
            task.code,
            "dependencies",
            found=f"SUCCESS or HAS_DATA dependencies on {', '.join(strict)} while sending on {', '.join(reported)}",
            expected="ALWAYS dependencies for an alert that reports failures: a failed upstream never lets it run",
            remedy="make those dependencies ALWAYS",
        )


def check_alerts(project: Project, findings: Findings) -> None:
    for task in project.checked_tasks(Handler.EMAIL_ALERT):
        outcomes = _check_parameters(project, task, findings)
        _check_dependencies(project, task, findings, outcomes)
