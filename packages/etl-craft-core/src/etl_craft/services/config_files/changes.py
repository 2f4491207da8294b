"""The changes that make the Engine DB say what the files say, and carrying them out in one transaction.

Rows are matched on their merge key, with codes turned into the ids of the rows they name: a key
that matches an active row updates it in place (the id is kept), one that matches only retired rows
reactivates the newest, and any other is inserted. An active row the files don't keep is retired,
never deleted; with it go the rows that hang from it. Rows already dead before (under a retired
pipeline or task) are left as they are, so exporting and applying again changes nothing.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from datetime import date
from decimal import Decimal
from typing import Any

import sqlalchemy as sa

from etl_craft.core.errors import ConfigFilesError
from etl_craft.core.text import one_line
from etl_craft.engine.reads.cfg_rows import CfgRows, Row
from etl_craft.services.config_files.files import FILES, SPECS, ConfigFolder, CsvRow, FileSpec, key_label


@dataclass(frozen=True)
class ConfigChange:
    operation: str  # insert | update | retire
    file: str
    key: str
    detail: str
    row_id: int | None = None  # the Engine DB row an update or retire changes

    @property
    def line(self) -> str:
        return f"{self.operation}  {self.file}  {self.key}  ({self.detail})"


class NewRow:
    """Stands for the id of a row the change inserts, until it is inserted."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __repr__(self) -> str:
        return f"<new {self.label}>"


Ref = int | NewRow


@dataclass
class Step:
    change: ConfigChange
    spec: FileSpec
    values: dict[str, Any] = field(default_factory=dict)
    new: NewRow | None = None


def _kinds(spec: FileSpec) -> dict[str, str]:
    return {c.db: c.kind for c in (*spec.key_columns, *spec.values)}


def _stored_json(text: Any) -> Any:
    """A stored PIPELINE_PARAMETERS text as a value (JSON null is NULL); unreadable text stays unequal."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return ("unreadable", text)


def same(kind: str, new: Any, old: Any) -> bool:
    """Whether a file value and a stored value mean the same (an empty text cell is NULL)."""
    if kind == "text":
        return (new or None) == (old or None)
    if kind == "json":
        return bool(new == _stored_json(old))
    if new is None or old is None:
        return new is None and old is None
    if kind == "decimal":
        return Decimal(str(new)) == Decimal(str(old))
    if kind == "date":
        return bool(new == (old if isinstance(old, date) else date.fromisoformat(str(old))))
    return bool(new == old)


def show(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, NewRow):
        return value.label
    if isinstance(value, dict | list):
        value = json.dumps(value, ensure_ascii=False)
    return one_line(str(value), 60)


class Planner:
    """Compares the files with the Engine DB's rows, table by table, parents first."""

    def __init__(self, folder: ConfigFolder, rows: CfgRows) -> None:
        self.folder = folder
        self.rows = rows
        self.steps: list[Step] = []
        self.pipelines = {r["pipeline_id"]: r for r in rows.pipelines}
        self.tasks = {r["task_id"]: r for r in rows.tasks}
        self.live_pipelines = {i for i, r in self.pipelines.items() if r["active_flag"] == "Y"}
        self.live_tasks = {
            i for i, r in self.tasks.items() if r["active_flag"] == "Y" and r["pipeline_id"] in self.live_pipelines
        }
        self.alive_pipelines: dict[str, Ref] = {}  # code -> id after the change
        self.alive_tasks: dict[tuple[str, str], Ref] = {}

    # -- names of stored rows --------------------------------------------------------------------
    def pipeline_code(self, pipeline_id: int | None) -> str | None:
        return None if pipeline_id is None else self.pipelines[pipeline_id]["pipeline_code"]

    def task_key(self, task_id: int) -> tuple[str, str]:
        task = self.tasks[task_id]
        return self.pipelines[task["pipeline_id"]]["pipeline_code"], task["task_code"]

    # -- references from the files ---------------------------------------------------------------
    def _pipeline(self, row: CsvRow, code: str | None, column: str = "PIPELINE_CODE") -> Ref:
        found = self.alive_pipelines.get(code or "")
        if found is None:
            raise ConfigFilesError(
                f"config file {self.folder.directory / row.spec.file}, line {row.line}, column {column}",
                found=f"pipeline {code!r}, which pipelines.csv does not hold as an active row",
                expected="a pipeline that pipelines.csv keeps active (ACTIVE_FLAG Y)",
                remedy="add the pipeline to pipelines.csv, or retire this row (ACTIVE_FLAG N)",
            )
        return found

    def _task(self, row: CsvRow, pipeline: str, task: str, column: str = "TASK_CODE") -> Ref:
        found = self.alive_tasks.get((pipeline, task))
        if found is None:
            raise ConfigFilesError(
                f"config file {self.folder.directory / row.spec.file}, line {row.line}, column {column}",
                found=f"task {pipeline}.{task}, which tasks.csv does not hold as an active row",
                expected="a task that tasks.csv keeps active (ACTIVE_FLAG Y)",
                remedy="add the task to tasks.csv, or retire this row (ACTIVE_FLAG N)",
            )
        return found

    # -- one table -------------------------------------------------------------------------------
    def merge(
        self,
        spec: FileSpec,
        stored: Sequence[Row],
        identity: Callable[[Row], Hashable],
        code_key: Callable[[Row], tuple[str | None, ...]],
        live: Callable[[Row], bool],
        desired: Sequence[tuple[CsvRow, Hashable, dict[str, Any]]],
        parents_alive: Callable[[Row], bool],
    ) -> dict[tuple[str | None, ...], Ref]:
        pk = next(iter(spec.table.primary_key.columns)).name
        kinds = _kinds(spec)
        index: dict[Hashable, list[Row]] = defaultdict(list)
        for row in stored:
            index[identity(row)].append(row)
        matched: set[int] = set()
        resolved: dict[tuple[str | None, ...], Ref] = {}
        for csv_row, ident, values in desired:
            candidates = [r for r in index.get(ident, []) if r[pk] not in matched]
            active = [r for r in candidates if r["active_flag"] == "Y"]
            retired = [r for r in candidates if r["active_flag"] != "Y"]
            target = active[0] if active else (retired[-1] if retired else None)
            if target is None:
                new = NewRow(csv_row.label)
                shown = ", ".join(f"{c.name}={show(values[c.db])}" for c in spec.values if values[c.db] is not None)
                self.steps.append(
                    Step(ConfigChange("insert", spec.file, csv_row.label, shown or "a new row"), spec, values, new)
                )
                resolved[csv_row.key] = new
                continue
            matched.add(target[pk])
            resolved[csv_row.key] = target[pk]
            changed = {k: v for k, v in values.items() if not same(kinds.get(k, "ref"), v, target[k])}
            notes = [f"{k.upper()}: {show(target[k])} -> {show(v)}" for k, v in changed.items()]
            if target["active_flag"] != "Y":
                changed["active_flag"] = "Y"
                notes.insert(0, "ACTIVE_FLAG: N -> Y")
            if changed:
                change = ConfigChange("update", spec.file, csv_row.label, ", ".join(notes), target[pk])
                self.steps.append(Step(change, spec, changed))
        switched_off = {r.key for r in self.folder.rows[spec.file] if not r.active}
        kept = {d[1] for d in desired}
        for row in stored:
            if row["active_flag"] != "Y" or row[pk] in matched:
                continue
            if not (live(row) or parents_alive(row)):
                continue  # already dead under a retired parent: left as it is
            key = code_key(row)
            reason = "ACTIVE_FLAG N in the file" if key in switched_off else "not in the files"
            if identity(row) in kept:
                reason = "another active row has the same key"
            change = ConfigChange("retire", spec.file, key_label(spec, key), reason, row[pk])
            self.steps.append(Step(change, spec, {"active_flag": "N"}))
        return resolved

    def _active(self, file: str) -> list[CsvRow]:
        return [r for r in self.folder.rows[file] if r.active]

    # -- the six files ---------------------------------------------------------------------------
    def plan(self) -> list[Step]:
        self._pipelines()
        self._tasks()
        self._task_parameters()
        self._task_dependencies()
        self._pipeline_dependencies()
        self._business_rules()
        return self.steps

    def _pipelines(self) -> None:
        desired = [(r, r.key[0], {"pipeline_code": r.key[0], **r.values}) for r in self._active("pipelines.csv")]
        resolved = self.merge(
            SPECS["pipelines.csv"],
            self.rows.pipelines,
            lambda s: s["pipeline_code"],
            lambda s: (s["pipeline_code"],),
            lambda s: s["active_flag"] == "Y",
            desired,
            lambda s: False,
        )
        self.alive_pipelines = {str(k[0]): v for k, v in resolved.items()}

    def _tasks(self) -> None:
        desired = []
        for r in self._active("tasks.csv"):
            pipeline = self._pipeline(r, r.key[0])
            desired.append((r, (pipeline, r.key[1]), {"pipeline_id": pipeline, "task_code": r.key[1], **r.values}))
        alive = set(self.alive_pipelines.values())
        resolved = self.merge(
            SPECS["tasks.csv"],
            self.rows.tasks,
            lambda s: (s["pipeline_id"], s["task_code"]),
            lambda s: (self.pipeline_code(s["pipeline_id"]), s["task_code"]),
            lambda s: s["task_id"] in self.live_tasks,
            desired,
            lambda s: s["pipeline_id"] in alive,
        )
        self.alive_tasks = {(str(k[0]), str(k[1])): v for k, v in resolved.items()}

    def _task_parameters(self) -> None:
        desired = []
        for r in self._active("task_parameters.csv"):
            task = self._task(r, str(r.key[0]), str(r.key[1]))
            desired.append((r, (task, r.key[2]), {"task_id": task, "parameter_name": r.key[2], **r.values}))
        alive = set(self.alive_tasks.values())
        self.merge(
            SPECS["task_parameters.csv"],
            self.rows.task_parameters,
            lambda s: (s["task_id"], s["parameter_name"]),
            lambda s: (*self.task_key(s["task_id"]), s["parameter_name"]),
            lambda s: s["task_id"] in self.live_tasks,
            desired,
            lambda s: s["task_id"] in alive,
        )

    def _task_dependencies(self) -> None:
        desired = []
        for r in self._active("task_dependencies.csv"):
            pipeline_code, task_code, up_pipeline_code, up_task_code, kind = r.key
            assert pipeline_code and task_code and up_task_code
            task = self._task(r, pipeline_code, task_code)
            up_pipeline = (
                None if up_pipeline_code is None else self._pipeline(r, up_pipeline_code, "DEPENDS_ON_PIPELINE_CODE")
            )
            up_task = self._task(r, up_pipeline_code or pipeline_code, up_task_code, "DEPENDS_ON_TASK_CODE")
            values = {
                "pipeline_id": self.alive_pipelines[pipeline_code],
                "task_id": task,
                "depends_on_pipeline_id": up_pipeline,
                "depends_on_task_id": up_task,
                "dependency_type": kind,
                **r.values,
            }
            desired.append((r, (task, up_pipeline, up_task, kind), values))
        alive = set(self.alive_tasks.values())
        self.merge(
            SPECS["task_dependencies.csv"],
            self.rows.task_dependencies,
            lambda s: (s["task_id"], s["depends_on_pipeline_id"], s["depends_on_task_id"], s["dependency_type"]),
            lambda s: (
                *self.task_key(s["task_id"]),
                self.pipeline_code(s["depends_on_pipeline_id"]),
                self.tasks[s["depends_on_task_id"]]["task_code"],
                s["dependency_type"],
            ),
            lambda s: s["task_id"] in self.live_tasks and s["depends_on_task_id"] in self.live_tasks,
            desired,
            lambda s: s["task_id"] in alive and s["depends_on_task_id"] in alive,
        )

    def _pipeline_dependencies(self) -> None:
        desired = []
        for r in self._active("pipeline_dependencies.csv"):
            pipeline = self._pipeline(r, r.key[0])
            upstream = self._pipeline(r, r.key[1], "DEPENDS_ON_PIPELINE_CODE")
            values = {"pipeline_id": pipeline, "depends_on_pipeline_id": upstream, "dependency_type": r.key[2]}
            desired.append((r, (pipeline, upstream, r.key[2]), {**values, **r.values}))
        alive = set(self.alive_pipelines.values())
        self.merge(
            SPECS["pipeline_dependencies.csv"],
            self.rows.pipeline_dependencies,
            lambda s: (s["pipeline_id"], s["depends_on_pipeline_id"], s["dependency_type"]),
            lambda s: (
                self.pipeline_code(s["pipeline_id"]),
                self.pipeline_code(s["depends_on_pipeline_id"]),
                s["dependency_type"],
            ),
            lambda s: s["pipeline_id"] in self.live_pipelines and s["depends_on_pipeline_id"] in self.live_pipelines,
            desired,
            lambda s: s["pipeline_id"] in alive and s["depends_on_pipeline_id"] in alive,
        )

    def _business_rules(self) -> None:
        desired = []
        for r in self._active("business_rules.csv"):
            pipeline_code, task_code, name = r.key
            assert pipeline_code and task_code
            task = self._task(r, pipeline_code, task_code)
            values = {
                "pipeline_id": self.alive_pipelines[pipeline_code],
                "task_id": task,
                "business_rule_name": name,
                **r.values,
            }
            desired.append((r, (task, name), values))
        alive = set(self.alive_tasks.values())
        self.merge(
            SPECS["business_rules.csv"],
            self.rows.business_rules,
            lambda s: (s["task_id"], s["business_rule_name"]),
            lambda s: (*self.task_key(s["task_id"]), s["business_rule_name"]),
            lambda s: s["task_id"] in self.live_tasks,
            desired,
            lambda s: s["task_id"] in alive,
        )


def plan_changes(folder: ConfigFolder, rows: CfgRows) -> list[Step]:
    """Every change, in the order plan shows them: file by file, inserts, updates and retires by key."""
    steps = Planner(folder, rows).plan()
    order = {spec.file: i for i, spec in enumerate(FILES)}
    return sorted(steps, key=lambda s: (order[s.spec.file], s.change.key, s.change.operation))


def _stored(spec: FileSpec, column: str, value: Any) -> Any:
    kinds = _kinds(spec)
    if kinds.get(column) == "json" and value is None:
        return sa.null()  # SQL NULL, not the JSON text null
    return value


def carry_out(conn: sa.Connection, steps: Sequence[Step]) -> None:
    """Retire first (children before parents), then update and insert parents before children."""
    order = {spec.file: i for i, spec in enumerate(FILES)}
    retires = sorted((s for s in steps if s.change.operation == "retire"), key=lambda s: -order[s.spec.file])
    writes = sorted(
        (s for s in steps if s.change.operation != "retire"),
        key=lambda s: (order[s.spec.file], s.change.operation == "insert"),
    )
    ids: dict[NewRow, int] = {}
    for step in (*retires, *writes):
        table = step.spec.table
        pk = next(iter(table.primary_key.columns))
        values = {k: _stored(step.spec, k, ids[v] if isinstance(v, NewRow) else v) for k, v in step.values.items()}
        try:
            if step.change.operation == "insert":
                assert step.new is not None
                ids[step.new] = int(conn.execute(table.insert().values(**values).returning(pk)).scalar_one())
            else:
                conn.execute(table.update().where(pk == step.change.row_id).values(**values))
        except sa.exc.DBAPIError as exc:
            message = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
            raise ConfigFilesError(
                f"{step.change.operation} {step.change.file} {step.change.key}",
                found=f"the Engine DB refusing it ({message})",
                expected="rows the Engine DB's rules accept",
                remedy="correct the row in the file; nothing was changed",
            ) from exc
