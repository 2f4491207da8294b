"""Pipeline rows: codes, PIPELINE_PARAMETERS, schedules and time zones, and dependencies between pipelines."""

from __future__ import annotations

import json
import zoneinfo
from collections import defaultdict
from decimal import Decimal
from typing import Any

from etl_craft.core import cron
from etl_craft.core.text import CODE_RULE, close_matches, did_you_mean, is_valid_code
from etl_craft.services.validate.email_alerts import is_email_address
from etl_craft.services.validate.findings import Findings
from etl_craft.services.validate.project import Pipeline, Project

_MIGRATION = "in a project migration or config/pipelines.csv"
# PIPELINE_PARAMETERS key -> (kind, what it must be)
PIPELINE_PARAMETERS: dict[str, tuple[str, str]] = {
    "CATCHUP": ("bool", "true or false"),
    "DEPENDS_ON_PAST": ("bool", "true or false"),
    "EMAIL_ON_FAILURE": ("bool", "true or false"),
    "RETRIES": ("count", "a whole number of 0 or more"),
    "RETRY_DELAY_MINUTES": ("count", "a whole number of 0 or more"),
    "TAGS": ("texts", "a list of strings"),
    "EMAIL_RECIPIENTS": ("emails", "a list of email addresses"),
}


def check_codes(project: Project, findings: Findings) -> None:
    """S2.H.1: codes start with a letter and hold only letters, digits and _ (at most 128)."""
    for pipeline in project.checked_pipelines():
        if not is_valid_code(pipeline.code):
            findings.fail(
                pipeline.code,
                None,
                "PIPELINE_CODE",
                found=repr(pipeline.code),
                expected=f"a code matching {CODE_RULE}",
                remedy=f"retire the pipeline and add it again under a valid code {_MIGRATION}",
            )
        for task in project.tasks_of(pipeline.pipeline_id):
            if not is_valid_code(task.code):
                findings.fail(
                    pipeline.code,
                    task.code,
                    "TASK_CODE",
                    found=repr(task.code),
                    expected=f"a code matching {CODE_RULE}",
                    remedy=f"retire the task and add it again under a valid code {_MIGRATION}",
                )


def _parameter_problem(kind: str, value: Any) -> bool:
    if kind == "bool":
        return not isinstance(value, bool)
    if kind == "count":
        return isinstance(value, bool) or not isinstance(value, int) or value < 0
    if kind == "texts":
        return not (isinstance(value, list) and all(isinstance(v, str) for v in value))
    return not (isinstance(value, list) and all(isinstance(v, str) and is_email_address(v) for v in value))


def check_pipeline_parameters(pipeline: Pipeline, findings: Findings) -> None:
    text = pipeline.row["pipeline_parameters"]
    if text is None:
        return
    where = "PIPELINE_PARAMETERS"
    try:
        value = json.loads(text)
    except ValueError as exc:
        findings.fail(
            pipeline.code,
            None,
            where,
            found=f"text that is not JSON ({exc})",
            expected='a JSON object, e.g. {"RETRIES": 2, "TAGS": ["sales"]}',
            remedy=f"correct PIPELINE_PARAMETERS {_MIGRATION}",
        )
        return
    if value is None:
        return
    if not isinstance(value, dict):
        findings.fail(
            pipeline.code,
            None,
            where,
            found=f"a JSON {type(value).__name__}",
            expected="a JSON object",
            remedy=f"correct PIPELINE_PARAMETERS {_MIGRATION}",
        )
        return
    for key, item in value.items():
        known = PIPELINE_PARAMETERS.get(key)
        if known is None:
            findings.warn(
                pipeline.code,
                None,
                f"PIPELINE_PARAMETERS key {key!r}",
                found="a key etl-craft does not read",
                expected="one of " + ", ".join(PIPELINE_PARAMETERS),
                remedy="remove it or correct its name" + did_you_mean(key, PIPELINE_PARAMETERS),
            )
        elif _parameter_problem(known[0], item):
            findings.fail(
                pipeline.code,
                None,
                f"PIPELINE_PARAMETERS.{key}",
                found=json.dumps(item),
                expected=known[1],
                remedy=f"correct PIPELINE_PARAMETERS {_MIGRATION}",
            )


def check_schedule(pipeline: Pipeline, project: Project, findings: Findings) -> None:
    """S4.C: RUN_SCHEDULE is a cron expression or macro; SCHEDULE_TIMEZONE an IANA name."""
    schedule = pipeline.row["run_schedule"]
    if schedule is not None:
        try:
            cron.parse(schedule)
        except cron.CronError as error:
            findings.fail(
                pipeline.code,
                None,
                "RUN_SCHEDULE",
                found=f"{schedule!r} ({error.problem})",
                expected=cron.EXPECTED,
                remedy=f"correct RUN_SCHEDULE {_MIGRATION}, or set it to NULL for no automatic runs",
            )
    zone = pipeline.row["schedule_timezone"]
    if zone is not None:
        try:
            zoneinfo.ZoneInfo(zone)
        except (zoneinfo.ZoneInfoNotFoundError, ValueError):
            near = close_matches(zone, zoneinfo.available_timezones())
            findings.fail(
                pipeline.code,
                None,
                "SCHEDULE_TIMEZONE",
                found=repr(zone),
                expected="an IANA time zone name such as Europe/Paris, or NULL for Orchestration.Timezone "
                f"({project.config.orchestration.timezone})",
                remedy="correct SCHEDULE_TIMEZONE" + (f" (did you mean {', '.join(near)}?)" if near else ""),
            )
    sla = pipeline.row["sla_in_hours"]
    if sla is not None and Decimal(sla) <= 0:
        findings.fail(
            pipeline.code,
            None,
            "SLA_IN_HOURS",
            found=str(sla),
            expected="a number of hours above 0, or NULL for no SLA",
            remedy=f"correct SLA_IN_HOURS {_MIGRATION}",
        )


def check_docs_schedule(project: Project, findings: Findings) -> None:
    """Docs_site.Schedule takes the same expressions as RUN_SCHEDULE (generate-yml --docs uses it)."""
    docs = project.config.docs_site
    if docs is None or docs.schedule is None:
        return
    try:
        cron.parse(docs.schedule)
    except cron.CronError as error:
        findings.fail(
            None,
            None,
            "craft-connector.yml: Docs_site.Schedule",
            found=f"{docs.schedule!r} ({error.problem})",
            expected=cron.EXPECTED,
            remedy="correct Docs_site.Schedule",
        )


def check_pipelines(project: Project, findings: Findings) -> None:
    check_codes(project, findings)
    check_docs_schedule(project, findings)
    for pipeline in project.checked_pipelines():
        check_pipeline_parameters(pipeline, findings)
        check_schedule(pipeline, project, findings)
    check_pipeline_dependencies(project, findings)


def check_pipeline_dependencies(project: Project, findings: Findings) -> None:
    """Each dependency names another active pipeline; together they form no cycle."""
    remote = project.config.orchestration.mode == "remote"
    upstreams: dict[int, list[int]] = defaultdict(list)
    types: dict[int, set[str]] = defaultdict(set)
    for row in project.pipeline_dependencies:
        down, up = row["pipeline_id"], row["depends_on_pipeline_id"]
        if not project.pipelines[down].active:
            continue
        upstreams[down].append(up)
        types[down].add(row["dependency_type"])
        if down not in project.scope:
            continue
        code = project.pipelines[down].code
        target = project.pipelines[up]
        if up == down:
            findings.fail(
                code,
                None,
                "pipeline dependency",
                found="a dependency on itself",
                expected="dependencies on other pipelines",
                remedy="retire the CFG_PIPELINE_DEPENDENCY row",
            )
        elif not target.active:
            findings.fail(
                code,
                None,
                "pipeline dependency",
                found=f"the {row['dependency_type']} dependency on {target.code}, which is retired (ACTIVE_FLAG N)",
                expected="dependencies on active pipelines",
                remedy=f"retire the dependency, or reactivate {target.code}",
            )
        if remote and row["dependency_type"] == "HAS_DATA":
            findings.fail(
                code,
                None,
                "pipeline dependency",
                found=f"a HAS_DATA dependency on {target.code} in remote mode",
                expected="SUCCESS, FAILURE or ALWAYS: an orchestrator can't see rows written",
                remedy="use SUCCESS, or run the pipeline in local mode",
            )
    if remote and project.config.orchestration.global_dag:
        for pipeline_id, kinds in sorted(types.items()):
            if pipeline_id in project.scope and len(kinds) > 1:
                findings.fail(
                    project.pipelines[pipeline_id].code,
                    None,
                    "pipeline dependencies",
                    found=f"mixed dependency types ({', '.join(sorted(kinds))}) with Orchestration.Global_dag",
                    expected="one dependency type per pipeline in a global DAG",
                    remedy="give its pipeline dependencies one type, or turn Global_dag off",
                )
    for cycle in _pipeline_cycles(upstreams):
        if project.scope & set(cycle):
            names = " -> ".join(project.pipelines[p].code for p in reversed(cycle))
            findings.fail(
                project.pipelines[cycle[0]].code,
                None,
                "pipeline dependencies",
                found=f"a cycle: {names}",
                expected="pipeline dependencies without cycles",
                remedy="retire one of these pipeline dependencies",
            )


def _pipeline_cycles(upstreams: dict[int, list[int]]) -> list[list[int]]:
    state: dict[int, int] = {}
    path: list[int] = []
    cycles: list[list[int]] = []
    seen: set[frozenset[int]] = set()

    def visit(node: int) -> None:
        state[node] = 1
        path.append(node)
        for up in upstreams.get(node, []):
            if up == node:
                continue  # a self-dependency is reported on its own
            if state.get(up) == 1:
                cycle = [*path[path.index(up) :], up]
                if frozenset(cycle) not in seen:
                    seen.add(frozenset(cycle))
                    cycles.append(cycle)
            elif up not in state:
                visit(up)
        path.pop()
        state[node] = 2

    for node in sorted(upstreams):
        if node not in state:
            visit(node)
    return cycles
