"""Task dependencies: each pipeline's graph, dependencies on other pipelines' tasks, HAS_DATA and remote mode."""

from __future__ import annotations

from etl_craft.core.enums import DependencyType, Handler, RunCondition
from etl_craft.execution.graph import assemble_graph
from etl_craft.services.validate.findings import Findings
from etl_craft.services.validate.project import Pipeline, Project, Task

# SQL actions whose runs write no rows that HAS_DATA could count.
NO_ROWS_ACTIONS = ("SETUP_TABLE", "DROP_TABLE", "DELETE_ROWS")


def never_reports_rows(task: Task) -> bool:
    if task.handler in (Handler.BUSINESS_RULES.value, Handler.EMAIL_ALERT.value):
        return True
    return task.handler == Handler.SQL.value and task.values.get("SQL_ACTION") in NO_ROWS_ACTIONS


def _task_of_subject(subject: str, pipeline: Pipeline) -> str | None:
    prefix = f"task {pipeline.code}."
    return subject[len(prefix) :] if subject.startswith(prefix) else None


def check_task_dependencies(project: Project, findings: Findings) -> None:
    names = project.upstream_names()
    remote = project.config.orchestration.mode == "remote"
    for pipeline in project.checked_pipelines():
        tasks = project.tasks_of(pipeline.pipeline_id)
        graph, problems = assemble_graph(
            pipeline.as_row, [t.as_row for t in tasks], project.edges_of(pipeline.pipeline_id), {}, names
        )
        for problem in problems:
            findings.error(problem, pipeline.code, _task_of_subject(problem.subject, pipeline))
        _check_rows(project, pipeline, findings)
        for node in graph.tasks.values():
            for edge in node.edges:
                upstream = project.tasks[edge.upstream]
                if edge.type is DependencyType.HAS_DATA and never_reports_rows(upstream):
                    kind = upstream.handler + (
                        f" {upstream.values['SQL_ACTION']}" if upstream.handler == Handler.SQL.value else ""
                    )
                    findings.fail(
                        pipeline.code,
                        node.code,
                        f"HAS_DATA dependency on {project.label(upstream.task_id)}",
                        found=f"an upstream {kind} task, which never reports rows written",
                        expected="HAS_DATA only on tasks that write rows (PYTHON, or SQL that creates, "
                        "overwrites, appends or merges)",
                        remedy="use SUCCESS for this dependency",
                    )
            if remote:
                _check_remote(pipeline, node.code, node.run_condition, [e.type for e in node.edges], findings)


def _check_rows(project: Project, pipeline: Pipeline, findings: Findings) -> None:
    """Rows a graph can't judge: dependencies on other pipelines' tasks, and rows filed under the wrong pipeline."""
    for row in project.task_dependencies:
        down = project.tasks.get(row["task_id"])
        if down is None or not down.active:
            continue
        if down.pipeline_id == pipeline.pipeline_id and row["pipeline_id"] != pipeline.pipeline_id:
            other = project.pipelines[row["pipeline_id"]].code
            findings.fail(
                pipeline.code,
                down.code,
                f"dependency on {project.label(row['depends_on_task_id'])}",
                found=f"CFG_TASK_DEPENDENCY row {row['task_dependency_id']} filed under pipeline {other}",
                expected=f"PIPELINE_ID of the task's own pipeline ({pipeline.code})",
                remedy="retire the row and add it again under the task's pipeline; runs never read it as it is",
            )
        if row["pipeline_id"] != pipeline.pipeline_id:
            continue
        named = row["depends_on_pipeline_id"]
        if named is None or named == pipeline.pipeline_id:
            continue  # within the pipeline: the graph check judged it
        upstream = project.tasks.get(row["depends_on_task_id"])
        subject = f"dependency on {project.label(row['depends_on_task_id'])}"
        named_code = project.pipelines[named].code
        if upstream is None or upstream.pipeline_id != named:
            findings.fail(
                pipeline.code,
                down.code,
                subject,
                found=f"DEPENDS_ON_PIPELINE_ID naming {named_code}, but the task belongs to "
                + (project.pipelines[upstream.pipeline_id].code if upstream else "no pipeline"),
                expected="DEPENDS_ON_PIPELINE_ID of the pipeline that holds DEPENDS_ON_TASK_ID",
                remedy="correct DEPENDS_ON_PIPELINE_ID or DEPENDS_ON_TASK_ID",
            )
        elif not project.pipelines[named].active:
            findings.fail(
                pipeline.code,
                down.code,
                subject,
                found=f"pipeline {named_code}, which is retired",
                expected="dependencies on tasks of active pipelines",
                remedy=f"retire the dependency, or reactivate {named_code}",
            )
        elif upstream.row["active_flag"] != "Y":
            findings.fail(
                pipeline.code,
                down.code,
                subject,
                found="a retired task (ACTIVE_FLAG N)",
                expected="dependencies on active tasks",
                remedy="retire the dependency, or reactivate the task",
            )


def _check_remote(
    pipeline: Pipeline, task: str, condition: RunCondition, types: list[DependencyType], findings: Findings
) -> None:
    """Rules an external orchestrator can't carry out (refused in remote mode, exit 18 at run time)."""
    remedy = "change the rule, or run the pipeline in local mode"
    if condition is RunCondition.N:
        findings.fail(
            pipeline.code,
            task,
            "RUN_CONDITION",
            found="N in remote mode",
            expected="ALL or ANY: an orchestrator has no 'N of M' trigger rule",
            remedy=remedy,
        )
    if DependencyType.HAS_DATA in types:
        findings.fail(
            pipeline.code,
            task,
            "dependencies",
            found="a HAS_DATA dependency in remote mode",
            expected="SUCCESS, FAILURE or ALWAYS: an orchestrator can't see rows written",
            remedy=remedy,
        )
    if len(set(types)) > 1:
        findings.fail(
            pipeline.code,
            task,
            "dependencies",
            found=f"mixed dependency types ({', '.join(sorted({t.value for t in types}))}) in remote mode",
            expected="one dependency type per task: a trigger rule waits for one kind of outcome",
            remedy=remedy,
        )
