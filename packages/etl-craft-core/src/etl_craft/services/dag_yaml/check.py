"""Checks of a generated DAG document before anything is written: the shipped JSON Schema, and the
graph rules a schema can't state (S2.H.2: no step depends on itself; a pipeline DAG has its control steps
exactly once, a global DAG only trigger steps, the catalog DAG its one docs step alone)."""

from __future__ import annotations

import json
from collections import Counter
from functools import cache
from importlib import resources
from typing import Any

from etl_craft.core.errors import GraphError
from etl_craft.services.dag_yaml.build import FINALIZE, INIT

SCHEMA_FILE = "dag-yaml-v1.json"


def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        resources.files("etl_craft").joinpath("schemas", SCHEMA_FILE).read_text(encoding="utf-8")
    )
    return loaded


@cache
def _validator() -> Any:
    import jsonschema

    return jsonschema.Draft202012Validator(schema())


def _broken(dag_id: str, found: str, expected: str) -> GraphError:
    # A document that fails these checks is a defect of generation, never of the user's metadata.
    return GraphError(
        f"the generated DAG {dag_id}",
        found=found,
        expected=expected,
        remedy="report this as an etl-craft bug, with the pipeline's etl-craft graph output",
    )


def check_document(document: dict[str, Any]) -> None:
    """Raise GraphError if the document breaks the schema or the graph rules."""
    dag_id = str(document.get("dag_id"))
    problem = next(iter(sorted(_validator().iter_errors(document), key=lambda e: list(e.absolute_path))), None)
    if problem is not None:
        where = "/".join(str(p) for p in problem.absolute_path) or "(top)"
        raise _broken(dag_id, f"{where}: {problem.message}", f"a document valid against {SCHEMA_FILE}")
    steps = document["tasks"]
    if any(step["kind"] == "docs" for step in steps) and len(steps) != 1:
        raise _broken(dag_id, f"a docs step among {len(steps)} steps", "the catalog DAG's docs step alone")
    counts = Counter(step["task_id"] for step in steps)
    pipeline_dag = any(step["kind"] in ("command", "sensor") for step in steps)
    if pipeline_dag and any(step["kind"] == "trigger" for step in steps):
        raise _broken(dag_id, "trigger steps beside a pipeline's steps", "a pipeline DAG or a global DAG")
    for control in (INIT, FINALIZE) if pipeline_dag else ():
        if counts[control] != 1:
            raise _broken(dag_id, f"{counts[control]} {control} step(s)", f"exactly one {control} step")
    repeated = sorted(step_id for step_id, n in counts.items() if n > 1)
    if repeated:
        raise _broken(dag_id, f"repeated step ids: {', '.join(repeated)}", "unique step ids")
    earlier: set[str] = set()
    for step in steps:
        if step["task_id"] in step["depends_on"]:
            raise _broken(dag_id, f"step {step['task_id']} depends on itself", "no self-dependency")
        later = [u for u in step["depends_on"] if u not in earlier]
        if later:
            raise _broken(
                dag_id,
                f"step {step['task_id']} depends on {', '.join(later)}, not before it",
                "steps listed after everything they depend on",
            )
        earlier.add(step["task_id"])
    if pipeline_dag and (steps[0]["task_id"] != INIT or steps[-1]["task_id"] != FINALIZE):
        raise _broken(dag_id, "control steps out of place", f"{INIT} first and {FINALIZE} last")
