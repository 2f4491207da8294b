"""The project as validate sees it: every CFG_ row, which pipelines are checked, and the settings around them."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, fields
from functools import cached_property

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.enums import Handler
from etl_craft.core.errors import ConfigurationError
from etl_craft.engine.reads import EdgeRow, PipelineRow, TaskRow
from etl_craft.engine.reads.cfg_rows import CfgRows, Row
from etl_craft.warehouse.dialect import WarehouseDialect, load_dialect


@dataclass(frozen=True)
class Pipeline:
    pipeline_id: int
    code: str
    active: bool
    row: Row = field(repr=False)

    @property
    def as_row(self) -> PipelineRow:
        return PipelineRow(**{f.name: self.row[f.name] for f in fields(PipelineRow)})


@dataclass(frozen=True)
class Task:
    task_id: int
    pipeline_id: int
    code: str
    handler: str
    active: bool
    row: Row = field(repr=False)
    # Active parameters by name; a NULL value is kept here (validate names it) and left out of `values`.
    parameters: dict[str, str | None] = field(default_factory=dict)

    @property
    def values(self) -> dict[str, str]:
        return {name: value for name, value in self.parameters.items() if value is not None}

    @property
    def as_row(self) -> TaskRow:
        return TaskRow(**{f.name: self.row[f.name] for f in fields(TaskRow)})


@dataclass
class Project:
    config: ConnectorConfig
    pipelines: dict[int, Pipeline]
    tasks: dict[int, Task]
    task_dependencies: list[Row]  # active rows
    pipeline_dependencies: list[Row]  # active rows
    business_rules: list[Row]  # active rows
    scope: set[int]  # ids of the active pipelines being checked

    @classmethod
    def build(cls, rows: CfgRows, config: ConnectorConfig, scope: set[int] | None) -> Project:
        parameters: dict[int, dict[str, str | None]] = defaultdict(dict)
        for p in rows.task_parameters:
            if p["active_flag"] == "Y":
                parameters[p["task_id"]][p["parameter_name"]] = p["parameter_value"]
        pipelines = {
            r["pipeline_id"]: Pipeline(r["pipeline_id"], r["pipeline_code"], r["active_flag"] == "Y", r)
            for r in rows.pipelines
        }
        tasks = {
            r["task_id"]: Task(
                r["task_id"],
                r["pipeline_id"],
                r["task_code"],
                r["handler"],
                r["active_flag"] == "Y" and pipelines[r["pipeline_id"]].active,
                r,
                parameters.get(r["task_id"], {}),
            )
            for r in rows.tasks
        }
        active_ids = {p.pipeline_id for p in pipelines.values() if p.active}
        return cls(
            config=config,
            pipelines=pipelines,
            tasks=tasks,
            task_dependencies=[r for r in rows.task_dependencies if r["active_flag"] == "Y"],
            pipeline_dependencies=[r for r in rows.pipeline_dependencies if r["active_flag"] == "Y"],
            business_rules=[r for r in rows.business_rules if r["active_flag"] == "Y"],
            scope=active_ids if scope is None else scope & active_ids,
        )

    # -- what is checked ----------------------------------------------------------------------------
    def checked_pipelines(self) -> list[Pipeline]:
        return sorted((self.pipelines[i] for i in self.scope), key=lambda p: p.code)

    def tasks_of(self, pipeline_id: int) -> list[Task]:
        return sorted(
            (t for t in self.tasks.values() if t.pipeline_id == pipeline_id and t.active), key=lambda t: t.code
        )

    def checked_tasks(self, handler: Handler | None = None) -> list[Task]:
        found = [t for p in self.checked_pipelines() for t in self.tasks_of(p.pipeline_id)]
        return [t for t in found if handler is None or t.handler == handler.value]

    def active_tasks(self, handler: Handler | None = None) -> list[Task]:
        """Active tasks of every active pipeline, checked or not (for rules that span pipelines)."""
        found = [t for t in self.tasks.values() if t.active]
        return [t for t in found if handler is None or t.handler == handler.value]

    # -- names --------------------------------------------------------------------------------------
    def code_of(self, task: Task) -> str:
        return self.pipelines[task.pipeline_id].code

    def label(self, task_id: int) -> str:
        task = self.tasks.get(task_id)
        if task is None:
            return f"task id {task_id}"
        return f"{self.pipelines[task.pipeline_id].code}.{task.code}"

    # -- dependencies -------------------------------------------------------------------------------
    def edges_of(self, pipeline_id: int) -> list[EdgeRow]:
        """The dependency rows a run of the pipeline reads: its own rows whose downstream task is active."""
        return [
            EdgeRow(**{f.name: r[f.name] for f in fields(EdgeRow)})
            for r in self.task_dependencies
            if r["pipeline_id"] == pipeline_id and r["task_id"] in self.tasks and self.tasks[r["task_id"]].active
        ]

    def upstream_names(self) -> dict[int, tuple[str, str, bool]]:
        return {
            t.task_id: (self.pipelines[t.pipeline_id].code, t.code, t.row["active_flag"] == "Y")
            for t in self.tasks.values()
        }

    def dependents(self, pipeline_id: int) -> dict[int, list[Row]]:
        """Within a pipeline: upstream task id -> the active rows of tasks that depend on it."""
        found: dict[int, list[Row]] = defaultdict(list)
        for r in self.task_dependencies:
            if r["pipeline_id"] == pipeline_id and r["depends_on_pipeline_id"] in (None, pipeline_id):
                found[r["depends_on_task_id"]].append(r)
        return found

    # -- the warehouse ------------------------------------------------------------------------------
    @cached_property
    def warehouse(self) -> tuple[WarehouseDialect | None, ConfigurationError | None]:
        """The configured warehouse's dialect (loaded, never connected), or why it can't be loaded."""
        if self.config.warehouse is None:
            return None, None
        try:
            return load_dialect(self.config), None
        except ConfigurationError as error:
            return None, error

    @property
    def dialect(self) -> WarehouseDialect | None:
        return self.warehouse[0]
