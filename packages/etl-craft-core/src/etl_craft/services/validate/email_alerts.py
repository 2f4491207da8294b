"""EMAIL_ALERT tasks: recipients, outcomes, `$$` tokens, subjects and bodies, and what an alert depends on."""

from __future__ import annotations

import re
from collections import Counter

from etl_craft.core.enums import Handler
from etl_craft.core.errors import TaskParameterError
from etl_craft.core.text import did_you_mean
from etl_craft.execution.graph import Graph, assemble_graph
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


def _check_dependencies(project: Project, task: Task, findings: Findings, outcomes: tuple[str, ...]) -> set[str]:
    """The alert's dependencies on its pipeline's last tasks and their types; returns the codes of the
    last tasks it fails for not depending on."""
    pipeline = project.code_of(task)
    rows = [r for r in project.task_dependencies if r["task_id"] == task.task_id]
    kinds = {r["dependency_type"] for r in rows}
    if rows and kinds == {"FAILURE"}:
        return set()  # watches only those tasks' failures
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
    return set(missing)


def ended_before_start(graph: Graph) -> dict[int, frozenset[int]]:
    """Task id -> the tasks of its pipeline certain to have ended before it starts, however they end.

    A task starts once enough of its dependencies in the pipeline are met (all of them, one, or
    RUN_CONDITION_COUNT), and a met dependency has ended, as has everything it waited for. So a task
    is certain to have ended only if no choice of that many dependencies leaves it out: a path of
    dependencies is not enough when a RUN_CONDITION ANY or N on the way lets a task start early.
    """
    before: dict[int, frozenset[int]] = {}
    for wave in graph.waves():
        for node in wave:
            local = graph.local_edges(node.task_id)
            needed = min(node.required, len(local))
            counts = Counter(task for e in local for task in before[e.upstream] | {e.upstream})
            before[node.task_id] = frozenset(task for task, n in counts.items() if len(local) - n < needed)
    return before


def _check_start(project: Project, task: Task, graph: Graph, findings: Findings, named: set[str]) -> None:
    """Warn when the alert can start before a task it reports on has ended (S2.F: it would then
    report that task as not finished, COMPLETED_WITH_ERRORS, in a run that succeeds)."""
    rows = [r for r in project.task_dependencies if r["task_id"] == task.task_id]
    if rows and {r["dependency_type"] for r in rows} == {"FAILURE"}:
        return  # it reports only the failures of its FAILURE upstreams, which have ended when it starts
    waited = ended_before_start(graph).get(task.task_id, frozenset())
    early = [
        t.code
        for t in project.tasks_of(task.pipeline_id)
        if t.handler != Handler.EMAIL_ALERT.value and t.task_id not in waited and t.code not in named
    ]
    if early:
        listed = ", ".join(early)
        findings.warn(
            project.code_of(task),
            task.code,
            "dependencies",
            found=f"no chain of dependencies that {task.code} waits for in full from {listed}, so {task.code} can "
            f"start while {listed} still run(s) and report them as not finished (COMPLETED_WITH_ERRORS) in a run "
            "that succeeds",
            expected="an alert that starts only after every task it reports on has ended",
            remedy=f"make {task.code} depend (ALWAYS) on {listed} or on tasks waiting for them, "
            "with RUN_CONDITION ALL on the way",
        )


def check_alerts(project: Project, findings: Findings) -> None:
    graphs: dict[int, Graph | None] = {}
    names = project.upstream_names()
    for task in project.checked_tasks(Handler.EMAIL_ALERT):
        outcomes = _check_parameters(project, task, findings)
        named = _check_dependencies(project, task, findings, outcomes)
        if task.pipeline_id not in graphs:
            pipeline = project.pipelines[task.pipeline_id]
            tasks = [t.as_row for t in project.tasks_of(task.pipeline_id)]
            built, problems = assemble_graph(pipeline.as_row, tasks, project.edges_of(task.pipeline_id), {}, names)
            graphs[task.pipeline_id] = None if problems else built  # a broken graph fails on its own
        graph = graphs[task.pipeline_id]
        if graph is not None:
            _check_start(project, task, graph, findings, named)
