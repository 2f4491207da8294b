"""The factory on a real Airflow (the `airflow` nox session installs it in a virtual environment of
its own and names its interpreter in ETL_CRAFT_AIRFLOW_PYTHON).

Every demo pipeline's YAML is generated (the three client pipelines use HAS_DATA, which remote mode
refuses with exit 18); Airflow's DagBag loads the rest through the factory, and each DAG's tasks,
edges, trigger rules, schedule and commands must match etl-craft's graph. Then `airflow dags test`
runs a demo DAG against the SQLite Engine DB, twice; the second run gets a task step and its
finalize step delivered again, and nothing is doubled.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
import yaml

from etl_craft.config.loader import load_config
from etl_craft.engine import reads
from etl_craft.engine.database import open_engine_db
from etl_craft.engine.schema import tables as t
from etl_craft.execution.graph import Graph, load_graph
from etl_craft.services.dag_yaml import DEFAULT_RANGE, dump
from etl_craft.services.dag_yaml.airflow_range import parse_range
from etl_craft.services.dag_yaml.check import check_document
from etl_craft.services.dag_yaml.global_dag import build_global_dag
from etl_craft.services.demo.walkthrough import create_warehouse, write_project
from tests.fixtures.cli import ETL_CRAFT, run_cli

pytestmark = pytest.mark.airflow

CLIENTS = ("client_alpha", "client_beta", "client_gamma")
EXPRESSIBLE = ("support_reference", "support_setup")
RUN_DAG = "support_reference"
START = "2026-01-01"
DAG_FILE = """\
from etl_craft_airflow import dags_from_folder

globals().update(dags_from_folder({folder!r}))
"""
# Run inside the Airflow environment: the DagBag as plain data (tasks, edges, rules, commands).
DESCRIBE = """\
import json, sys
try:
    from airflow.dag_processing.dagbag import DagBag
except ImportError:
    from airflow.models.dagbag import DagBag

bag = DagBag(dag_folder=sys.argv[1])  # examples are off: AIRFLOW__CORE__LOAD_EXAMPLES
dags = {}
for dag_id, dag in bag.dags.items():
    timetable = dag.timetable
    dags[dag_id] = {
        "schedule": getattr(timetable, "_expression", None) or getattr(timetable, "expression", None),
        "timezone": str(dag.timezone.name if hasattr(dag.timezone, "name") else dag.timezone),
        "catchup": dag.catchup,
        "tags": sorted(dag.tags),
        "max_active_runs": dag.max_active_runs,
        "tasks": {
            task.task_id: {
                "type": type(task).__name__,
                "upstream": sorted(task.upstream_task_ids),
                "trigger_rule": str(getattr(task.trigger_rule, "value", task.trigger_rule)),
                "command": getattr(task, "bash_command", None),
                "trigger_dag_id": getattr(task, "trigger_dag_id", None),
            }
            for task in dag.tasks
        },
    }
with open(sys.argv[2], "w") as out:  # Airflow logs to stdout; the answer goes to its own file
    json.dump({"dags": dags, "errors": {k: str(v) for k, v in bag.import_errors.items()}}, out)
"""


# Run inside the Airflow environment: each DAG run's id, data interval end (as `ds`) and state.
DAG_RUNS = """\
import json, sys
from sqlalchemy import select
from airflow.models.dagrun import DagRun
from airflow.utils.session import create_session

with create_session() as session:
    found = session.scalars(select(DagRun).where(DagRun.dag_id == sys.argv[1])).all()
    answer = sorted([r.run_id, r.data_interval_end.strftime("%Y-%m-%d"), str(r.state)] for r in found)
with open(sys.argv[2], "w") as out:
    json.dump(answer, out)
"""


def _airflow_python() -> Path:
    found = os.environ.get("ETL_CRAFT_AIRFLOW_PYTHON")
    if not found:
        if os.environ.get("ETL_CRAFT_REQUIRE_AIRFLOW"):
            pytest.fail("ETL_CRAFT_AIRFLOW_PYTHON is not set; run these tests with: uv run --frozen nox -s airflow")
        pytest.skip("no Airflow environment (run: uv run --frozen nox -s airflow)")
    return Path(found)


@dataclass
class AirflowProject:
    python: Path
    folder: Path  # the demo project
    yaml_dir: Path
    home: Path  # AIRFLOW_HOME
    generated: dict[str, Any]  # pipeline code -> the CLI result of generate-yml

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        env.update(
            AIRFLOW_HOME=str(self.home),
            AIRFLOW__CORE__DAGS_FOLDER=str(self.home / "dags"),
            AIRFLOW__CORE__LOAD_EXAMPLES="False",
            AIRFLOW__CORE__UNIT_TEST_MODE="False",
            ETL_CRAFT_CONFIG=str(self.folder / "craft-connector.yml"),
            # The workers run `etl-craft` from PATH: the workspace's.
            PATH=f"{Path(ETL_CRAFT).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        )
        return env

    def airflow(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess[str]:
        command = [str(self.python.parent / "airflow"), *args]
        return subprocess.run(command, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False)

    def describe(self, dags: Path | None = None) -> dict[str, Any]:
        """The DagBag of a DAGs folder (by default the project's), as Airflow loaded it."""
        answer = self.home / "described.json"
        done = subprocess.run(
            [str(self.python), "-c", DESCRIBE, str(dags or self.home / "dags"), str(answer)],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        found: dict[str, Any] = json.loads(answer.read_text())
        return found

    def dag_runs(self, dag_id: str) -> list[list[str]]:
        """Airflow's own record of the DAG's runs: [run_id, data_interval_end as ds, state]."""
        answer = self.home / "dag-runs.json"
        done = subprocess.run(
            [str(self.python), "-c", DAG_RUNS, dag_id, str(answer)],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-4000:]
        found: list[list[str]] = json.loads(answer.read_text())
        return found

    def rows(self, query: sa.Select[Any]) -> list[Any]:
        db = open_engine_db(load_config(self.folder / "craft-connector.yml", os.environ))
        try:
            with db.read() as conn:
                return list(conn.execute(query).all())
        finally:
            db.dispose()

    def graph(self, code: str) -> Graph:
        db = open_engine_db(load_config(self.folder / "craft-connector.yml", os.environ))
        try:
            with db.read() as conn:
                return load_graph(conn, reads.find_pipeline(conn, code))
        finally:
            db.dispose()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AirflowProject]:
    python = _airflow_python()
    root = tmp_path_factory.mktemp("airflow")
    folder = root / "demo"
    folder.mkdir()
    write_project(folder)
    create_warehouse(folder)
    # Airflow runs nothing for a logical date before the DAG's start date (the pipeline's
    # SCHEDULE_START_DATE, else the day its row was added): the DAG runs below are in November.
    (folder / "migrations" / "0100_start_dates.sql").write_text(
        f"UPDATE CFG_PIPELINES SET SCHEDULE_START_DATE = '{START}' WHERE PIPELINE_CODE IN ('support_reference', "
        "'support_setup');\n"
    )
    config = folder / "craft-connector.yml"
    env = {k: v for k, v in os.environ.items() if k != "ETL_CRAFT_CONFIG"}
    assert run_cli("setup", env=env, cwd=folder).returncode == 0
    # The warehouse tables first, as the demo makes them (locally); then Airflow takes over.
    made_tables = run_cli("run", "--pipeline_code", "support_setup", env=env, cwd=folder)
    assert made_tables.returncode == 0, str(made_tables)
    config.write_text(config.read_text().replace("  Mode: local\n", "  Mode: remote\n  Tags: [demo]\n"))
    yaml_dir = root / "yaml"
    yaml_dir.mkdir()
    generated = {}
    for code in (*EXPRESSIBLE, *CLIENTS):
        generated[code] = run_cli(
            "generate-yml", "--pipeline_code", code, "--output", str(yaml_dir / f"{code}.yml"), env=env, cwd=folder
        )
    home = root / "airflow-home"
    (home / "dags").mkdir(parents=True)
    (home / "dags" / "etl_craft_dags.py").write_text(DAG_FILE.format(folder=str(yaml_dir)))
    made = AirflowProject(python, folder, yaml_dir, home, generated)
    migrated = made.airflow("db", "migrate")
    assert migrated.returncode == 0, migrated.stderr[-4000:]
    yield made


def test_remote_mode_refuses_the_client_pipelines_naming_their_has_data_dependency(project: AirflowProject) -> None:
    for code in CLIENTS:
        refused = project.generated[code]
        prefix = code.split("_")[1]
        assert refused.returncode == 18, str(refused)
        assert f"task {code}.{prefix}_lnd_to_prs: found a HAS_DATA dependency" in refused.stderr
        assert not (project.yaml_dir / f"{code}.yml").exists()


def _expected_upstream(graph: Graph, code: str) -> list[str]:
    node = graph.by_code(code)
    assert node is not None
    local = sorted(graph.tasks[e.upstream].code for e in graph.local_edges(node.task_id))
    return local or ["__init__"]


def test_every_generated_dag_loads_and_matches_the_etl_craft_graph(project: AirflowProject) -> None:
    found = project.describe()
    assert found["errors"] == {}
    assert sorted(found["dags"]) == sorted(EXPRESSIBLE)
    for code in EXPRESSIBLE:
        assert project.generated[code].returncode == 0, str(project.generated[code])
        document = yaml.safe_load((project.yaml_dir / f"{code}.yml").read_text())
        graph = project.graph(code)
        dag = found["dags"][code]
        tasks = dag["tasks"]
        assert sorted(tasks) == sorted(["__init__", "__finalize__", *(n.code for n in graph.tasks.values())])
        assert (dag["schedule"], dag["catchup"], dag["max_active_runs"]) == (graph.pipeline.run_schedule, False, 1)
        assert dag["timezone"] == (graph.pipeline.schedule_timezone or "Europe/Paris")
        assert dag["tags"] == sorted({"etl-craft", *document["tags"]})
        assert document["start_date"] == START
        for node in graph.tasks.values():
            task = tasks[node.code]
            assert (task["type"], task["upstream"], task["trigger_rule"]) == (
                "BashOperator",
                _expected_upstream(graph, node.code),
                "all_success",
            )
            words = shlex.split(task["command"])
            assert words[-2:] == ["--run-key", "orchestrator:{{ run_id }}"]
            assert words[3:9] == ["etl-craft", "run", "--pipeline_code", code, "--task_code", node.code]
        assert tasks["__finalize__"]["trigger_rule"] == "all_done"
        assert tasks["__finalize__"]["upstream"] == sorted(tasks.keys() - {"__finalize__"})
        assert "--init-only" in shlex.split(tasks["__init__"]["command"])
        steps = {s["task_id"]: s["command"] for s in document["tasks"]}
        assert {k: v["command"] for k, v in tasks.items()} == steps


def test_an_invalid_file_is_an_import_error_naming_it(project: AirflowProject, tmp_path: Path) -> None:
    bad_dir = tmp_path / "yaml"
    bad_dir.mkdir()
    (bad_dir / "future.yml").write_text("etl_craft_yaml_version: 2\ndag_id: later\n")
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "etl_craft_dags.py").write_text(DAG_FILE.format(folder=str(bad_dir)))
    found = project.describe(dags)
    assert found["dags"] == {}
    (message,) = found["errors"].values()
    assert f"etl-craft DAG file {bad_dir / 'future.yml'}: found etl_craft_yaml_version 2" in message


def test_the_global_dag_loads_and_triggers_the_pipeline_dags_in_order(project: AirflowProject) -> None:
    # On the whole demo the global DAG is refused: it would trigger the client pipelines' DAGs, which
    # remote mode can't express (HAS_DATA).
    global_config = project.folder / "global-connector.yml"
    main_config = (project.folder / "craft-connector.yml").read_text()
    global_config.write_text(main_config.replace("  Mode: remote\n", "  Mode: remote\n  Global_dag: true\n"))
    refused = run_cli("generate-yml", "--global", "--config", str(global_config), env=project.env(), cwd=project.folder)
    assert (
        refused.returncode == 18 and "task client_alpha.alpha_lnd_to_prs: found a HAS_DATA dependency" in refused.stderr
    )
    config = load_config(project.folder / "craft-connector.yml", os.environ)
    settings = dataclasses.replace(config.orchestration, global_dag=True)
    db = open_engine_db(config)
    try:
        with db.read() as conn:
            pipelines = [p for p in reads.pipelines(conn) if p.pipeline_code in EXPRESSIBLE]
            rows = reads.pipeline_dependencies(conn, None)
    finally:
        db.dispose()
    document = build_global_dag(pipelines, rows, settings, date.fromisoformat(START), parse_range(DEFAULT_RANGE))
    check_document(document)
    folder = project.home / "global-yaml"
    folder.mkdir()
    for code in EXPRESSIBLE:
        (folder / f"{code}.yml").write_text((project.yaml_dir / f"{code}.yml").read_text())
    (folder / "etl_craft_global.yml").write_text(dump(document))
    dags = project.home / "global-dags"
    dags.mkdir()
    (dags / "etl_craft_dags.py").write_text(DAG_FILE.format(folder=str(folder)))
    found = project.describe(dags)
    assert found["errors"] == {}
    assert sorted(found["dags"]) == sorted([*EXPRESSIBLE, "etl_craft_global"])
    tasks = found["dags"]["etl_craft_global"]["tasks"]
    ups = {code: sorted(r.depends_on_pipeline_code for r in rows if r.pipeline_code == code) for code in EXPRESSIBLE}
    assert {k: (v["type"], v["trigger_dag_id"], v["upstream"], v["trigger_rule"]) for k, v in tasks.items()} == {
        code: ("TriggerDagRunOperator", code, ups[code], "all_success") for code in EXPRESSIBLE
    }
    assert found["dags"]["etl_craft_global"]["tags"] == sorted({"etl-craft", "demo"})


def _runs(project: AirflowProject) -> list[Any]:
    runs = t.aud_pipelines_run_log
    return project.rows(
        sa.select(runs)
        .join(t.cfg_pipelines, t.cfg_pipelines.c.pipeline_id == runs.c.pipeline_id)
        .where(t.cfg_pipelines.c.pipeline_code == RUN_DAG)
        .order_by(runs.c.pipeline_run_id)
    )


def _task_runs(project: AirflowProject, run_id: int) -> dict[str, tuple[str, int]]:
    found = project.rows(
        sa.select(t.cfg_tasks.c.task_code, t.aud_task_run_log.c.status, t.aud_task_run_log.c.attempt_count)
        .join(t.cfg_tasks, t.cfg_tasks.c.task_id == t.aud_task_run_log.c.task_id)
        .where(t.aud_task_run_log.c.pipeline_run_id == run_id)
    )
    return {r.task_code: (r.status, r.attempt_count) for r in found}


def _deliver(project: AirflowProject, step: str, run_id: str, ds: str = "") -> subprocess.CompletedProcess[str]:
    """A worker running a step of the DAG run again, as Airflow would have rendered it."""
    document = yaml.safe_load((project.yaml_dir / f"{RUN_DAG}.yml").read_text())
    command = next(s["command"] for s in document["tasks"] if s["task_id"] == step)
    words = [
        w.replace("{{ run_id }}", run_id).replace("{{ data_interval_end | ds }}", ds) for w in shlex.split(command)
    ]
    return subprocess.run(words, env=project.env(), capture_output=True, text=True, timeout=300, check=False)


def test_airflow_runs_a_demo_dag_and_etl_craft_records_it_once(project: AirflowProject) -> None:
    graph = project.graph(RUN_DAG)
    codes = sorted(n.code for n in graph.tasks.values())
    for number, day in enumerate(("2026-11-02", "2026-11-03"), start=1):
        tested = project.airflow("dags", "test", RUN_DAG, day)
        said = (tested.stdout + tested.stderr)[-8000:]
        assert tested.returncode == 0 and len(_runs(project)) == number, said
    first, second = _runs(project)
    for run in (first, second):
        assert (run.status, run.trigger_kind) == ("SUCCESS", "ORCHESTRATOR")
        assert run.run_key.startswith("orchestrator:") and "{{" not in run.run_key
        assert _task_runs(project, run.pipeline_run_id) == dict.fromkeys(codes, ("SUCCESS", 1))
    # Each run is the DAG run's: its key names the Airflow run id, its date the data interval's end
    # (Airflow 3's cron timetable ends the interval at the logical date, Airflow 2's at the last tick).
    airflow_runs = {run_id: (ds, state) for run_id, ds, state in project.dag_runs(RUN_DAG)}
    assert {r.run_key: (str(r.run_date), "success") for r in (first, second)} == {
        f"orchestrator:{run_id}": found for run_id, found in airflow_runs.items()
    }
    assert first.run_date < second.run_date
    airflow_run_id = second.run_key.removeprefix("orchestrator:")

    again = _deliver(project, "load_seeds", airflow_run_id)
    assert again.returncode == 0, again.stdout + again.stderr
    late = _deliver(project, "__finalize__", airflow_run_id)
    assert late.returncode == 0, late.stdout + late.stderr
    once_more = _deliver(project, "__finalize__", airflow_run_id)
    assert once_more.returncode == 0 and "ended already; nothing was changed" in once_more.stdout

    first_after, second_after = _runs(project)
    assert (first_after.status, first_after.output_revision) == ("SUCCESS", first.output_revision)
    assert (second_after.status, second_after.run_key) == ("SUCCESS", second.run_key)
    assert (second_after.ended_by, second_after.ended_by_kind) == (f"airflow:{airflow_run_id}", "ORCHESTRATOR")
    expected = dict.fromkeys(codes, ("SUCCESS", 1)) | {"load_seeds": ("SUCCESS", 2)}
    assert _task_runs(project, second.pipeline_run_id) == expected
    actions = project.rows(
        sa.select(t.aud_actions.c.actor, t.aud_actions.c.actor_kind).where(
            t.aud_actions.c.pipeline_run_id == second.pipeline_run_id
        )
    )
    assert {(a.actor, a.actor_kind) for a in actions} == {(f"airflow:{airflow_run_id}", "ORCHESTRATOR")}

    # Clearing the older DAG run re-runs that run, as of its own date; the newer one is untouched.
    # `airflow dags test` always makes a new DAG run, so the cleared run's steps are delivered as
    # Airflow's workers would run them after the clear: rendered with that DAG run's id and date.
    before = {r.pipeline_run_id: r for r in _runs(project)}
    older_run_id = first.run_key.removeprefix("orchestrator:")
    older_ds = airflow_runs[older_run_id][0]
    cleared = project.airflow("tasks", "clear", "--yes", "--start-date", older_ds, "--end-date", older_ds, RUN_DAG)
    assert cleared.returncode == 0, (cleared.stdout + cleared.stderr)[-4000:]
    # Airflow 3 sets the cleared DAG run back to queued; Airflow 2.11 leaves a `dags test` run's state.
    states = {run_id: state for run_id, _, state in project.dag_runs(RUN_DAG)}
    assert sorted(states) == sorted([older_run_id, airflow_run_id]) and states[airflow_run_id] == "success"
    document = yaml.safe_load((project.yaml_dir / f"{RUN_DAG}.yml").read_text())
    for step in document["tasks"]:
        done = _deliver(project, step["task_id"], older_run_id, older_ds)
        assert done.returncode == 0, (step["task_id"], done.stdout + done.stderr)
    first_again, second_again = _runs(project)
    assert (first_again.pipeline_run_id, second_again.pipeline_run_id) == (
        first.pipeline_run_id,
        second.pipeline_run_id,
    )
    assert (first_again.status, first_again.run_key, first_again.run_date) == ("SUCCESS", first.run_key, first.run_date)
    assert _task_runs(project, first.pipeline_run_id) == dict.fromkeys(codes, ("SUCCESS", 2))
    newer = before[second.pipeline_run_id]
    assert (second_again.status, second_again.end_date, second_again.output_revision) == (
        newer.status,
        newer.end_date,
        newer.output_revision,
    )
    assert _task_runs(project, second.pipeline_run_id) == expected


def test_the_docs_dag_loads_and_airflow_builds_the_catalog_site(project: AirflowProject) -> None:
    # A config of its own, so the other tests' project keeps no Docs_site section.
    docs_config = project.folder / "docs-connector.yml"
    main_config = (project.folder / "craft-connector.yml").read_text()
    docs_config.write_text(main_config + "Docs_site:\n  Schedule: '15 4 * * 1-5'\n  Output: catalog-site\n")
    folder = project.home / "docs-yaml"
    folder.mkdir()
    made = run_cli(
        "generate-yml",
        "--docs",
        "--config",
        str(docs_config),
        "--output",
        str(folder / "etl_craft_docs.yml"),
        env=project.env(),
        cwd=project.folder,
    )
    assert made.returncode == 0, str(made)
    document = yaml.safe_load((folder / "etl_craft_docs.yml").read_text())
    check_document(document)
    dags = project.home / "docs-dags"
    dags.mkdir()
    (dags / "etl_craft_dags.py").write_text(DAG_FILE.format(folder=str(folder)))
    found = project.describe(dags)
    assert found["errors"] == {}
    assert sorted(found["dags"]) == ["etl_craft_docs"]
    dag = found["dags"]["etl_craft_docs"]
    zone = load_config(docs_config, os.environ).orchestration.timezone  # the demo's Europe/Paris
    assert (dag["schedule"], dag["timezone"], dag["catchup"], dag["tags"]) == (
        "15 4 * * 1-5",
        zone,
        False,
        sorted({"etl-craft", "docs", "demo"}),
    )
    command = "env ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR 'ETL_CRAFT_ACTOR=airflow:{{ run_id }}' etl-craft generate-docs"
    assert dag["tasks"] == {
        "generate_docs": {
            "type": "BashOperator",
            "upstream": [],
            "trigger_rule": "all_success",
            "command": command,
            "trigger_dag_id": None,
        }
    }
    # Airflow runs the step on a worker whose config names the Docs_site: the site appears there.
    env = project.env() | {"AIRFLOW__CORE__DAGS_FOLDER": str(dags), "ETL_CRAFT_CONFIG": str(docs_config)}
    tested = subprocess.run(
        [str(project.python.parent / "airflow"), "dags", "test", "etl_craft_docs"],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert tested.returncode == 0, (tested.stdout + tested.stderr)[-8000:]
    site = project.folder / "catalog-site"
    assert (site / "index.html").is_file() and (site / "pipelines" / f"{RUN_DAG}.html").is_file()
