"""Rules for every task: parameter names its handler reads, the run settings, and the sections it needs."""

from __future__ import annotations

from dataclasses import replace

from etl_craft.core.enums import Handler, RunCondition
from etl_craft.core.errors import TaskParameterError
from etl_craft.core.text import close_matches
from etl_craft.execution.graph import TaskNode
from etl_craft.execution.settings import COMMON_PARAMETERS, task_settings
from etl_craft.handlers.sql.spec import SQL_PARAMETERS
from etl_craft.services.validate.email_alerts import EMAIL_PARAMETERS
from etl_craft.services.validate.findings import Findings
from etl_craft.services.validate.project import Project, Task

# What each handler reads besides COMMON_PARAMETERS. PYTHON scripts read whatever they like
# (task.task_params), so their names are never judged.
HANDLER_PARAMETERS: dict[str, tuple[str, ...]] = {
    Handler.SQL.value: SQL_PARAMETERS,
    Handler.BUSINESS_RULES.value: (),
    Handler.EMAIL_ALERT.value: EMAIL_PARAMETERS,
}
SETTINGS = ("TASK_TIMEOUT_SECONDS", "RETRIES", "RETRY_DELAY_SECONDS", "RETRY_BACKOFF")
_WAREHOUSE_HANDLERS = (Handler.SQL.value, Handler.BUSINESS_RULES.value)


def _known(task: Task) -> tuple[str, ...] | None:
    handler_names = HANDLER_PARAMETERS.get(task.handler)
    return None if handler_names is None else (*COMMON_PARAMETERS, *handler_names)


def check_parameters(project: Project, findings: Findings) -> None:
    orchestration = project.config.orchestration
    for task in project.checked_tasks():
        pipeline = project.code_of(task)
        known = _known(task)
        for name, value in sorted(task.parameters.items()):
            if known is not None and name not in known:
                near = close_matches(name, known)
                findings.warn(
                    pipeline,
                    task.code,
                    f"parameter {name}",
                    found=f"a name the {task.handler} handler does not read",
                    expected=f"one of its parameters{' such as ' + ', '.join(near) if near else ''}",
                    remedy="correct the name, or retire the parameter",
                )
            elif value is None:
                findings.warn(
                    pipeline,
                    task.code,
                    f"parameter {name}",
                    found="NULL, which reads as not set",
                    expected="a value",
                    remedy="give it a value, or retire the parameter",
                )
        node = TaskNode(task.task_id, task.code, Handler(task.handler), task.row["task_type"], RunCondition.ALL, None)
        for name in SETTINGS:
            if name not in task.values:
                continue
            single = replace(node, parameters={name: task.values[name]})
            try:
                task_settings(single, orchestration)
            except TaskParameterError as error:
                findings.error(error, pipeline, task.code)
        if task.handler in _WAREHOUSE_HANDLERS and project.config.warehouse is None:
            findings.fail(
                pipeline,
                task.code,
                "craft-connector.yml",
                found=f"no Warehouse section, which {task.handler} tasks need",
                expected="a Warehouse section naming the warehouse's jdbc_url",
                remedy="add the Warehouse section (docs/reference/configuration.md)",
            )
    problem = project.warehouse[1]
    if problem is not None and any(t.handler in _WAREHOUSE_HANDLERS for t in project.checked_tasks()):
        findings.error(problem, None, None)
    alerts = project.checked_tasks(Handler.EMAIL_ALERT)
    if alerts and orchestration.email is None:
        findings.warn(
            None,
            None,
            "craft-connector.yml: Orchestration.Email",
            found=f"no Email section, but {len(alerts)} EMAIL_ALERT task(s) (e.g. {project.label(alerts[0].task_id)})",
            expected="an Email relay for alerts to be sent",
            remedy="add Orchestration.Email; until then alerts go to the outbox and are not sent",
        )
