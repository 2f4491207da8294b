"""Reading one etl-craft DAG YAML file (`etl_craft_yaml_version: 1`) without Airflow or etl-craft.

etl-craft validated the file against its JSON Schema when it wrote it; this module checks again what
the factory relies on, so a hand-edited, truncated or newer file is refused with its path and the
problem, never half-built into a DAG.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

SUPPORTED_VERSIONS = (1,)
COMMAND_KEYS = ("task_id", "kind", "command", "depends_on", "trigger_rule")
SENSOR_KEYS = (
    "task_id",
    "kind",
    "external_dag_id",
    "external_task_id",
    "allowed_states",
    "failed_states",
    "timeout_seconds",
    "poke_interval_seconds",
    "depends_on",
    "trigger_rule",
)
TRIGGER_KEYS = (
    "task_id",
    "kind",
    "trigger_dag_id",
    "allowed_states",
    "failed_states",
    "poke_interval_seconds",
    "depends_on",
    "trigger_rule",
)
DAG_KEYS = (
    "etl_craft_yaml_version",
    "airflow_version",
    "dag_id",
    "description",
    "schedule",
    "timezone",
    "start_date",
    "catchup",
    "tags",
    "default_args",
    "max_active_runs",
    "tasks",
)
TRIGGER_RULES = ("all_success", "all_failed", "all_done", "one_success", "one_failed", "one_done")


class DagFileError(ValueError):
    """A YAML file the factory refuses; Airflow shows the message as the DAG file's import error."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"etl-craft DAG file {path}: {problem}")


@dataclass(frozen=True)
class DagFile:
    path: Path
    document: dict[str, Any]

    @property
    def dag_id(self) -> str:
        return str(self.document["dag_id"])


def _require(condition: bool, path: Path, problem: str) -> None:
    if not condition:
        raise DagFileError(path, problem)


def _check_step(path: Path, step: Any, earlier: set[str]) -> None:
    _require(isinstance(step, dict), path, f"found a step that is a {type(step).__name__}; expected a mapping")
    kind = step.get("kind")
    keys = {"command": COMMAND_KEYS, "docs": COMMAND_KEYS, "sensor": SENSOR_KEYS, "trigger": TRIGGER_KEYS}.get(kind)
    _require(
        keys is not None,
        path,
        f"step {step.get('task_id')!r} has kind {kind!r}; expected command, docs, sensor or trigger",
    )
    assert keys is not None
    missing = [k for k in keys if k not in step]
    _require(not missing, path, f"step {step.get('task_id')!r} lacks {', '.join(missing)}")
    step_id = step["task_id"]
    _require(isinstance(step_id, str) and bool(step_id), path, f"found step id {step_id!r}; expected a name")
    _require(step_id not in earlier, path, f"step {step_id} appears twice")
    _require(
        step["trigger_rule"] in TRIGGER_RULES,
        path,
        f"step {step_id} has trigger rule {step['trigger_rule']!r}; expected one of {', '.join(TRIGGER_RULES)}",
    )
    upstream = step["depends_on"]
    _require(isinstance(upstream, list), path, f"step {step_id}: depends_on is not a list")
    unknown = [u for u in upstream if u not in earlier]
    _require(not unknown, path, f"step {step_id} depends on {unknown}, which are not steps listed before it")
    if kind in ("command", "docs"):
        _require(isinstance(step["command"], str), path, f"step {step_id}: command is not text")


def check_document(path: Path, document: Any) -> DagFile:
    """The file's document if the factory can build it, else DagFileError naming what is wrong."""
    _require(isinstance(document, dict), path, "found no mapping at the top; expected an etl-craft DAG document")
    version = document.get("etl_craft_yaml_version")
    _require(
        version in SUPPORTED_VERSIONS,
        path,
        f"found etl_craft_yaml_version {version!r}; this etl-craft-airflow reads version "
        + ", ".join(str(v) for v in SUPPORTED_VERSIONS)
        + " (upgrade etl-craft-airflow, or generate the file with a matching etl-craft)",
    )
    missing = [k for k in DAG_KEYS if k not in document]
    _require(not missing, path, f"lacks {', '.join(missing)}")
    steps = document["tasks"]
    _require(isinstance(steps, list) and bool(steps), path, "tasks is not a list of steps")
    earlier: set[str] = set()
    for step in steps:
        _check_step(path, step, earlier)
        earlier.add(step["task_id"])
    return DagFile(path, document)


def read_dag_file(path: Path) -> DagFile:
    import yaml

    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as error:
        raise DagFileError(path, f"can't be read as YAML ({error})") from None
    return check_document(path, document)


def read_folder(folder: Path) -> list[DagFile]:
    """Every *.yml and *.yaml file of the folder (not below it), in name order; two files of one
    DAG id are refused, as Airflow would keep only one of them."""
    files = sorted(p for p in folder.iterdir() if p.suffix in (".yml", ".yaml") and p.is_file())
    found: dict[str, DagFile] = {}
    for path in files:
        dag_file = read_dag_file(path)
        other = found.get(dag_file.dag_id)
        _require(other is None, path, f"DAG {dag_file.dag_id} is defined already by {other and other.path}")
        found[dag_file.dag_id] = dag_file
    return list(found.values())
