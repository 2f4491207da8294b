"""The factory's reading of YAML files, without Airflow: what it accepts, and that every refusal
names the file and the problem (Airflow shows it as the DAG file's import error)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from etl_craft_airflow import DagFileError, read_folder

pytestmark = pytest.mark.unit

GOOD = {
    "etl_craft_yaml_version": 1,
    "generated_by": "etl-craft 0.1.0",
    "airflow_version": ">=2.2.0",
    "dag_id": "p",
    "description": "",
    "schedule": None,
    "timezone": "UTC",
    "start_date": "2026-01-01",
    "sla_hours": None,
    "refresh_type": "FULL",
    "catchup": False,
    "tags": ["etl-craft"],
    "default_args": {
        "retries": 0,
        "retry_delay_minutes": 5,
        "depends_on_past": False,
        "email_on_failure": False,
        "email": [],
    },
    "max_active_runs": 1,
    "tasks": [
        {"task_id": "__init__", "kind": "command", "command": "true", "depends_on": [], "trigger_rule": "all_success"},
        {
            "task_id": "__finalize__",
            "kind": "command",
            "command": "true",
            "depends_on": ["__init__"],
            "trigger_rule": "all_done",
        },
    ],
}


def _write(folder: Path, name: str, document: object) -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(document) if not isinstance(document, str) else document)
    return path


def _refusal(folder: Path) -> str:
    with pytest.raises(DagFileError) as refused:
        read_folder(folder)
    return str(refused.value)


def test_a_folder_of_good_files_reads_in_name_order(tmp_path: Path) -> None:
    _write(tmp_path, "b.yml", GOOD | {"dag_id": "b"})
    _write(tmp_path, "a.yaml", GOOD | {"dag_id": "a"})
    _write(tmp_path, "notes.txt", "not a DAG")
    assert [(f.path.name, f.dag_id) for f in read_folder(tmp_path)] == [("a.yaml", "a"), ("b.yml", "b")]


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        (
            GOOD | {"etl_craft_yaml_version": 2},
            "found etl_craft_yaml_version 2; this etl-craft-airflow reads version 1",
        ),
        ({k: v for k, v in GOOD.items() if k != "tasks"}, "lacks tasks"),
        ("dag_id: [unclosed", "can't be read as YAML"),
        (["a list"], "found no mapping at the top"),
        (
            GOOD | {"tasks": [GOOD["tasks"][1], GOOD["tasks"][0]]},
            "step __finalize__ depends on ['__init__'], which are not steps listed before it",
        ),
        (
            GOOD | {"tasks": [GOOD["tasks"][0] | {"trigger_rule": "none_failed"}]},
            "step __init__ has trigger rule 'none_failed'",
        ),
        (
            GOOD | {"tasks": [GOOD["tasks"][0] | {"kind": "python"}]},
            "has kind 'python'; expected command, docs, sensor or trigger",
        ),
        (
            GOOD
            | {
                "tasks": [{"task_id": "generate_docs", "kind": "docs", "depends_on": [], "trigger_rule": "all_success"}]
            },
            "step 'generate_docs' lacks command",
        ),
    ],
    ids=["version", "missing-key", "not-yaml", "not-mapping", "order", "trigger-rule", "kind", "docs-command"],
)
def test_a_bad_file_is_refused_naming_it(tmp_path: Path, document: object, problem: str) -> None:
    _write(tmp_path, "a.yml", GOOD | {"dag_id": "a"})
    bad = _write(tmp_path, "bad.yml", document)
    message = _refusal(tmp_path)
    assert message.startswith(f"etl-craft DAG file {bad}: ") and problem in message


def test_two_files_of_one_dag_are_refused(tmp_path: Path) -> None:
    first = _write(tmp_path, "a.yml", GOOD)
    second = _write(tmp_path, "b.yml", GOOD)
    assert _refusal(tmp_path) == f"etl-craft DAG file {second}: DAG p is defined already by {first}"
