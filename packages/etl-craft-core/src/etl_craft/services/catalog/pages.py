"""What each catalog page shows, built from the set-query facts in memory (no query per page).

Every page is a plain dict (JSON-ready), so the site can fingerprint it: a page whose facts did not
change since the last build is not rendered or written again (see site.py).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from etl_craft.core.sensitive import SensitiveNames
from etl_craft.engine.reads.catalog import CatalogFacts, Row
from etl_craft.services.catalog.graphs import lineage_graph, task_graph
from etl_craft.services.documents import plain

KPI_KINDS = ("scheduled", "manual", "backfill", "repair")
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Page:
    path: str  # relative to the site root, with / separators
    template: str
    context: dict[str, Any]


def table_file(name: str) -> str:
    """The page of a table: its lower-case name made safe for a file name (never hidden)."""
    return "tables/" + _UNSAFE.sub("_", name.lower()).lstrip(".") + ".html"


def _by(rows: Iterable[Row], key: str) -> dict[Any, list[Row]]:
    grouped: dict[Any, list[Row]] = defaultdict(list)
    for row in rows:
        grouped[row[key]].append(row)
    return grouped


def script_summary(scripts_dir: Path, script_name: str | None) -> str | None:
    """The ingestion script's module docstring, read without importing it; None if unreadable."""
    if not script_name:
        return None
    path = (scripts_dir / script_name).resolve()
    if not path.is_relative_to(scripts_dir.resolve()) or not path.is_file():
        return None
    try:
        return ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None


def _kpis(rows: list[Row]) -> dict[str, dict[str, int]]:
    """Runs by kind (scheduled, manual, backfill, repair) and outcome, and SLA met/breached."""
    kpis = {kind: {"runs": 0, "SUCCESS": 0, "FAILED": 0, "other": 0, "MET": 0, "BREACHED": 0} for kind in KPI_KINDS}
    for row in rows:
        entry = kpis[row["run_kind"]]
        entry["runs"] += row["runs"]
        entry[row["status"] if row["status"] in ("SUCCESS", "FAILED") else "other"] += row["runs"]
        if row["sla_status"] in ("MET", "BREACHED"):
            entry[row["sla_status"]] += row["runs"]
    return kpis


_RUN_KEYS = (
    "pipeline_run_id", "run_key", "status", "sla_status", "start_date", "end_date", "run_date", "trigger_kind",
    "run_kind",
)  # fmt: skip

NOT_IN_WAREHOUSE: dict[str, Any] = {"comment": None, "columns": []}


class _Catalog:
    """The facts indexed the ways the pages look them up, and the links between pages."""

    def __init__(self, facts: CatalogFacts, sensitive: SensitiveNames, scripts_dir: Path) -> None:
        self.facts, self.sensitive, self.scripts_dir = facts, sensitive, scripts_dir
        self.pipelines = {row["pipeline_id"]: row for row in facts.pipelines}
        self.tasks = {row["task_id"]: row for row in facts.tasks}
        self.parameters: dict[int, dict[str, str]] = defaultdict(dict)
        for row in facts.parameters:
            self.parameters[row["task_id"]][row["parameter_name"]] = row["parameter_value"]
        self.runs_of = _by(facts.recent_runs, "pipeline_id")
        self.task_runs_of = _by(facts.recent_task_runs, "task_id")
        self.kpis_of = _by(facts.run_kpis, "pipeline_id")
        self.rules_of = _by(facts.business_rules, "task_id")
        self.paused = {row["pipeline_id"]: row for row in facts.pauses}
        self.doc_versions = {row["task_id"]: row["version"] for row in facts.documentation_versions}
        self.lineage_of_task = _by(facts.lineage, "task_id")
        self.tasks_of = _by(facts.tasks, "pipeline_id")
        self.deps_of = _by(facts.task_dependencies, "pipeline_id")
        self.upstream_of = _by(facts.pipeline_dependencies, "pipeline_id")
        self.downstream_of = _by(facts.pipeline_dependencies, "depends_on_pipeline_id")
        self.warehouse: dict[str, dict[str, Any]] | None = None
        self._index_tables()

    def _index_tables(self) -> None:
        """Who writes each table (TARGET_OBJECT, lineage targets, rule targets) and who reads it
        (lineage sources), and the lineage into it."""
        facts, tasks = self.facts, self.tasks
        self.writers: dict[str, set[int]] = defaultdict(set)
        self.readers: dict[str, set[int]] = defaultdict(set)
        for task_id, params in self.parameters.items():
            if task_id in tasks and params.get("TARGET_OBJECT"):
                self.writers[params["TARGET_OBJECT"].lower()].add(task_id)
        for row in facts.lineage:
            if row["task_id"] in tasks:
                self.writers[row["target_object"].lower()].add(row["task_id"])
                if row["source_object"]:
                    self.readers[row["source_object"].lower()].add(row["task_id"])
        self.rule_tables: dict[str, list[Row]] = defaultdict(list)
        for row in facts.business_rules:
            if row["task_id"] in tasks:
                self.rule_tables[row["target_table"].lower()].append(row)
                self.readers[row["target_table"].lower()].add(row["task_id"])
        self.table_names = sorted(set(self.writers) | set(self.readers))
        self.lineage_into = _by(
            ({**row, "target": row["target_object"].lower()} for row in facts.lineage if row["task_id"] in tasks),
            "target",
        )

    def task_ref(self, task_id: int) -> dict[str, str]:
        row = self.tasks.get(task_id)
        if row is None:
            return {"label": f"task {task_id} (inactive)", "href": ""}
        code = self.pipelines[row["pipeline_id"]]["pipeline_code"]
        return {"label": f"{code}.{row['task_code']}", "href": f"pipelines/{code}.html#task-{row['task_code']}"}

    def pipeline_ref(self, pipeline_id: int) -> dict[str, str]:
        row = self.pipelines.get(pipeline_id)
        if row is None:
            return {"label": f"pipeline {pipeline_id} (inactive)", "href": ""}
        return {"label": row["pipeline_code"], "href": f"pipelines/{row['pipeline_code']}.html"}

    @staticmethod
    def table_ref(name: str) -> dict[str, str]:
        return {"label": name, "href": table_file(name)}

    def task_view(self, row: Row) -> dict[str, Any]:
        task_id = row["task_id"]
        params = self.parameters.get(task_id, {})
        return {
            "code": row["task_code"],
            "type": row["task_type"],
            "handler": row["handler"],
            "run_condition": row["run_condition"] or "ALL",
            "run_condition_count": row["run_condition_count"],
            "parameters": sorted(
                (name, value)
                for name, value in self.sensitive.shown(row["handler"], params).items()
                if name != "DOCUMENTATION"
            ),
            "documentation": params.get("DOCUMENTATION"),
            "documentation_version": self.doc_versions.get(task_id),
            "writes": sorted({self.table_ref(n)["label"] for n, ids in self.writers.items() if task_id in ids}),
            "reads": sorted({self.table_ref(n)["label"] for n, ids in self.readers.items() if task_id in ids}),
            "rules": [
                {
                    "name": rule["business_rule_name"],
                    "type": rule["business_rule_type"],
                    "table": rule["target_table"].lower(),
                    "key": rule["business_rule_key_column"],
                    "sql": rule["business_rule_sql"],
                }
                for rule in self.rules_of.get(task_id, [])
            ],
            "script": params.get("SCRIPT_NAME"),
            "script_doc": script_summary(self.scripts_dir, params.get("SCRIPT_NAME"))
            if row["handler"] == "PYTHON"
            else None,
            "last_run": self.task_runs_of.get(task_id, [None])[0],
        }

    def edges(self, pipeline_id: int) -> list[dict[str, Any]]:
        codes = {row["task_id"]: row["task_code"] for row in self.tasks_of.get(pipeline_id, [])}
        return [
            {
                "from": codes.get(dep["depends_on_task_id"]) or self.task_ref(dep["depends_on_task_id"])["label"],
                "from_href": ""
                if dep["depends_on_task_id"] in codes
                else self.task_ref(dep["depends_on_task_id"])["href"],
                "to": codes.get(dep["task_id"], str(dep["task_id"])),
                "type": dep["dependency_type"],
                "cross": dep["depends_on_pipeline_id"] not in (None, pipeline_id),
            }
            for dep in self.deps_of.get(pipeline_id, [])
            if dep["task_id"] in codes
        ]

    def pipeline_page(self, pipeline_id: int, pipe: Row) -> tuple[Page, dict[str, Any]]:
        """A pipeline's page, and its row on the index."""
        code = pipe["pipeline_code"]
        runs = self.runs_of.get(pipeline_id, [])
        task_views = [self.task_view(row) for row in self.tasks_of.get(pipeline_id, [])]
        edges = self.edges(pipeline_id)
        pause = self.paused.get(pipeline_id)
        owner = pipe["updated_by"] or pipe["created_by"]
        last_run = runs[0] if runs else None
        context = {
            "pipeline": {
                "code": code,
                "name": pipe["pipeline_name"],
                "description": pipe["description"],
                "schedule": pipe["run_schedule"],
                "timezone": pipe["schedule_timezone"],
                "sla_hours": plain(pipe["sla_in_hours"]),
                "refresh_type": pipe["refresh_type"],
                "owner": owner,
                "paused": {"by": pause["paused_by"], "reason": pause["reason"], "at": pause["paused_at"]}
                if pause
                else None,
            },
            "tasks": task_views,
            "edges": edges,
            "graph_svg": task_graph(code, task_views, edges),
            "upstream": [
                self.pipeline_ref(d["depends_on_pipeline_id"]) | {"type": d["dependency_type"]}
                for d in self.upstream_of.get(pipeline_id, [])
            ],
            "downstream": [
                self.pipeline_ref(d["pipeline_id"]) | {"type": d["dependency_type"]}
                for d in self.downstream_of.get(pipeline_id, [])
            ],
            "runs": [{key: run[key] for key in _RUN_KEYS} for run in runs],
            "kpis": _kpis(self.kpis_of.get(pipeline_id, [])),
        }
        index_row = {
            "code": code,
            "name": pipe["pipeline_name"],
            "schedule": pipe["run_schedule"],
            "owner": owner,
            "last_status": last_run["status"] if last_run else None,
            "last_start": last_run["start_date"] if last_run else None,
            "paused": pause is not None,
            "href": f"pipelines/{code}.html",
        }
        return Page(f"pipelines/{code}.html", "pipeline.html", context), index_row

    def table_page(self, name: str) -> Page:
        columns = [
            {
                "column": row["target_column"],
                "source": f"{row['source_object'].lower()}.{row['source_column']}" if row["source_object"] else None,
                "source_href": table_file(row["source_object"]) if row["source_object"] else "",
                "how": row["transformation"] or "copy",
                "task": self.task_ref(row["task_id"]),
            }
            for row in self.lineage_into.get(name, [])
        ]
        context = {
            "table": name,
            "writers": [self.task_ref(i) for i in sorted(self.writers.get(name, ()))],
            "readers": [self.task_ref(i) for i in sorted(self.readers.get(name, ()))],
            "rules": [
                {"name": r["business_rule_name"], "type": r["business_rule_type"], "task": self.task_ref(r["task_id"])}
                for r in self.rule_tables.get(name, [])
            ],
            "columns": columns,
            "lineage_svg": lineage_graph(name, columns),
            # None without --with-warehouse; no columns when the warehouse holds no such table.
            "warehouse": None if self.warehouse is None else self.warehouse.get(name, NOT_IN_WAREHOUSE),
        }
        return Page(table_file(name), "table.html", context)

    def index_page(self, index_rows: list[dict[str, Any]]) -> Page:
        untraced = [
            self.task_ref(task_id)
            for task_id, row in self.tasks.items()
            if row["handler"] == "SQL" and task_id not in self.lineage_of_task
        ]
        context = {
            "pipelines": index_rows,
            "tables": [self.table_ref(n) for n in self.table_names],
            "untraced": untraced,
            "counts": {"pipelines": len(self.pipelines), "tasks": len(self.tasks), "tables": len(self.table_names)},
        }
        return Page("index.html", "index.html", context)


def build_pages(
    facts: CatalogFacts,
    sensitive: SensitiveNames,
    scripts_dir: Path,
    describe: Callable[[list[str]], dict[str, dict[str, Any]]] | None = None,
) -> list[Page]:
    """Every page of the site: one per pipeline, one per table, and the index. `describe` (from
    --with-warehouse) gives the warehouse's columns of the tables by name."""
    catalog = _Catalog(facts, sensitive, scripts_dir)
    catalog.warehouse = describe(catalog.table_names) if describe else None
    pages: list[Page] = []
    index_rows = []
    for pipeline_id, pipe in catalog.pipelines.items():
        page, index_row = catalog.pipeline_page(pipeline_id, pipe)
        pages.append(page)
        index_rows.append(index_row)
    pages += [catalog.table_page(name) for name in catalog.table_names]
    pages.append(catalog.index_page(index_rows))
    return pages


def search_entries(pages: list[Page]) -> list[dict[str, str]]:
    """The offline search index: names first, then descriptions (the script ranks them)."""
    entries = []
    for page in pages:
        if page.template == "pipeline.html":
            pipe = page.context["pipeline"]
            entries.append(
                {"name": pipe["code"], "text": f"{pipe['name']} {pipe['description'] or ''}", "href": page.path}
            )
            entries.extend(
                {
                    "name": f"{pipe['code']}.{task['code']}",
                    "text": task["documentation"] or task["handler"],
                    "href": f"{page.path}#task-{task['code']}",
                }
                for task in page.context["tasks"]
            )
        elif page.template == "table.html":
            entries.append({"name": page.context["table"], "text": "table", "href": page.path})
    return entries
