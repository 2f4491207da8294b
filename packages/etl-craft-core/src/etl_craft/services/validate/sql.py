"""SQL tasks: the pre-run checks of the SQL handler, the SELECT's output names, and rules across writers.

The handler's own parse (parse_spec) runs with stand-in run identities, so a task fails validate for
exactly the reasons it would fail before running. No warehouse is connected: the dialect is loaded
only for its SQL flavour, case folding, table formats, storage parameters and state-changing functions.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import date

from etl_craft.core.enums import Handler
from etl_craft.core.errors import SqlGuardError
from etl_craft.handlers.sql import check_warehouse_fit
from etl_craft.handlers.sql.catalog import key_of
from etl_craft.handlers.sql.columns import (
    ACTION_COLUMNS,
    refuse_engine_columns,
    refuse_repeated_names,
    refuse_unquotable,
)
from etl_craft.handlers.sql.outputs import output_names
from etl_craft.handlers.sql.spec import STORAGE_PARAMETERS, SqlTaskSpec, TaskIdentity, parse_spec
from etl_craft.services.validate.findings import Findings
from etl_craft.services.validate.project import Project, Task

STANDIN_RUN_DATE = date(2000, 1, 1)
WRITERS = frozenset(ACTION_COLUMNS) - {"SETUP_TABLE"}  # actions that shape a target's engine columns
REBUILDERS = ("CREATE_TABLE", "OVERWRITE_TABLE")  # actions that regenerate ROW_ID


def _spec(project: Project, task: Task, findings: Findings) -> SqlTaskSpec | None:
    dialect = project.dialect
    pipeline = project.pipelines[task.pipeline_id]
    identity = TaskIdentity(task.code, task.pipeline_id, 0, 0, pipeline.row["refresh_type"], STANDIN_RUN_DATE)
    try:
        spec = parse_spec(
            task.values,
            identity,
            project.config.sql_files_dir,
            dialect.sqlglot_dialect if dialect else "",
            dialect.storage_parameters if dialect else STORAGE_PARAMETERS,
            dialect.state_changing_functions if dialect else frozenset(),
        )
        if dialect is not None:
            check_warehouse_fit(spec, dialect, task.code)
    except SqlGuardError as error:
        findings.error(error, pipeline.code, task.code)
        return None
    except OSError as error:
        findings.fail(
            pipeline.code,
            task.code,
            f"SOURCE_SQL_FILE={task.values.get('SOURCE_SQL_FILE')!r}",
            found=f"a file that can't be read ({error})",
            expected="a readable UTF-8 file in sql_files/",
            remedy="check the file's permissions and save it as UTF-8",
        )
        return None
    return spec


def _check_outputs(project: Project, task: Task, spec: SqlTaskSpec, findings: Findings) -> None:
    """B12, B45, S2.D.2: output names usable unquoted, none engine-managed, merge columns present."""
    if spec.select is None:
        return
    dialect = project.dialect
    outputs = output_names(
        spec.select, dialect.sqlglot_dialect if dialect else "", dialect.identifier_case if dialect else None
    )
    if outputs is None:
        return
    pipeline = project.code_of(task)
    where = f"task {task.code}: {spec.source_label}"
    for check in (
        lambda: refuse_unquotable(outputs.names, dialect.identifier_case if dialect else None, where),
        lambda: refuse_repeated_names(outputs.names, where),
        lambda: refuse_engine_columns(outputs.names, where),
    ):
        try:
            check()
        except SqlGuardError as error:
            findings.error(error, pipeline, task.code)
    if not outputs.complete:
        return  # * or an unaliased expression: the warehouse names some columns
    returned = {name.lower() for name in outputs.names}
    for parameter, columns in (("MERGE_KEY", spec.merge_key), ("MERGE_COMPARE_COLUMNS", spec.compare_columns)):
        missing = [c for c in columns if c.lower() not in returned]
        if missing:
            findings.fail(
                pipeline,
                task.code,
                parameter,
                found=f"{', '.join(missing)}, which the SELECT does not return (it returns {', '.join(outputs.names)})",
                expected=f"{parameter} columns among the SELECT's output columns",
                remedy=f"return the column from the SELECT, or correct {parameter}",
            )


def _check_siblings(project: Project, task: Task, spec: SqlTaskSpec) -> list[str]:
    """Problems with the other SQL tasks of the pipeline: SETUP_TABLE's writer, DROP_TABLE's creator."""
    database = project.dialect.database_name() if project.dialect else None
    key = key_of(spec.target_name, database)
    same = [
        other.values.get("SQL_ACTION")
        for other in project.tasks_of(task.pipeline_id)
        if other.handler == Handler.SQL.value
        and other.task_id != task.task_id
        and key_of(other.values.get("TARGET_OBJECT"), database) == key
    ]
    if spec.action == "SETUP_TABLE" and spec.setup_for is None:
        writers = sorted({a for a in same if a in WRITERS})
        if len(writers) != 1:
            return [
                "SETUP_FOR",
                "no other SQL task of this pipeline writing the target"
                if not writers
                else f"tasks writing it with different actions: {', '.join(writers)}",
                "one action whose audit columns the new table gets",
                "set SETUP_FOR to the action that writes the target, e.g. SCD1_MERGE",
            ]
    if spec.action == "DROP_TABLE" and "CREATE_TABLE" not in same:
        return [
            "SQL_ACTION DROP_TABLE",
            f"no CREATE_TABLE task of {spec.target_name} in this pipeline, so the drop would always be refused",
            "DROP_TABLE only for a table a CREATE_TABLE task of the same pipeline creates",
            "add the CREATE_TABLE task (and make DROP_TABLE depend on it), or retire the DROP_TABLE task",
        ]
    return []


def sql_specs(project: Project, findings: Findings | None = None) -> dict[int, SqlTaskSpec]:
    """The parsed spec of every active SQL task; problems of checked tasks go to `findings`."""
    specs: dict[int, SqlTaskSpec] = {}
    for task in project.active_tasks(Handler.SQL):
        checked = task.pipeline_id in project.scope
        spec = _spec(project, task, findings if (checked and findings is not None) else Findings())
        if spec is not None:
            specs[task.task_id] = spec
    return specs


def check_sql_tasks(project: Project, findings: Findings) -> dict[int, SqlTaskSpec]:
    specs = sql_specs(project, findings)
    for task_id, spec in specs.items():
        task = project.tasks[task_id]
        if task.pipeline_id not in project.scope:
            continue
        _check_outputs(project, task, spec, findings)
        problem = _check_siblings(project, task, spec)
        if problem:
            subject, found, expected, remedy = problem
            findings.fail(project.code_of(task), task.code, subject, found=found, expected=expected, remedy=remedy)
    _check_table_formats(project, findings)
    return specs


def _check_table_formats(project: Project, findings: Findings) -> None:
    """S3.G.6: every writer of a target, in any pipeline, resolves to one table format."""
    default = project.config.warehouse.table_format if project.config.warehouse else "native"
    database = project.dialect.database_name() if project.dialect else None
    by_target: dict[str, list[tuple[Task, str]]] = defaultdict(list)
    for task in project.active_tasks(Handler.SQL):
        key = key_of(task.values.get("TARGET_OBJECT"), database)
        if key is not None:
            by_target[key].append((task, task.values.get("TABLE_FORMAT") or default))
    for target, writers in sorted(by_target.items()):
        in_scope = [t for t, _ in writers if t.pipeline_id in project.scope]
        if not in_scope:
            continue
        formats = {fmt for _, fmt in writers}
        if len(formats) > 1:
            listed = ", ".join(f"{project.label(t.task_id)} ({fmt})" for t, fmt in writers)
            first = in_scope[0]
            findings.fail(
                project.code_of(first),
                first.code,
                f"TABLE_FORMAT of {target}",
                found=f"writers with different table formats: {listed}",
                expected="one table format for every task writing a target, in every pipeline",
                remedy=f"set the same TABLE_FORMAT on all of them (unset means Warehouse.Table_format, {default})",
            )
