"""generate-yml through the real CLI: the document, its settings, its refusals (exit 18), and
remote mode's first and last steps refusing what an orchestrator can't express."""

from __future__ import annotations

import json
import shlex

import pytest
import yaml

from etl_craft.services.dag_yaml.check import check_document
from tests.fixtures.harness import Harness, TaskSpec, cross_dependency, pipeline_dependency

pytestmark = pytest.mark.parametrize("dialect", [pytest.param("sqlite", marks=pytest.mark.sqlite)])

KEY = "'orchestrator:{{ run_id }}'"


def _remote(harness: Harness, extra: str = "") -> None:
    harness.project.orchestration = "  Mode: remote\n" + extra
    harness.project.write_config()


def _steps(document: dict) -> dict[str, dict]:
    return {step["task_id"]: step for step in document["tasks"]}


def test_a_pipeline_becomes_a_dag_with_control_steps_sensors_and_trigger_rules(harness: Harness) -> None:
    _remote(harness, "  Tags: [team_a]\n  Retries: 2\n  Gate_wait_minutes: 5\n")
    harness.pipeline("up", [TaskSpec("u")])
    harness.pipeline(
        "p",
        [TaskSpec("a"), TaskSpec("b"), TaskSpec("alert", run_condition="ANY"), TaskSpec("c")],
        [("b", "a", "SUCCESS"), ("alert", "a", "FAILURE"), ("alert", "b", "FAILURE")],
    )
    harness.migrate(pipeline_dependency("p", "up", "ALWAYS") + cross_dependency("p", "c", "up", "u"))
    out = harness.project.root / "p.yml"
    made = harness.cli("generate-yml", "--pipeline_code", "p", "--output", str(out))
    assert made.returncode == 0, str(made)
    assert made.stdout == "" and f"wrote DAG p to {out}" in made.stderr
    document = yaml.safe_load(out.read_text())
    check_document(document)
    assert [s["task_id"] for s in document["tasks"]] == [
        "__init__",
        "__wait_for_up__",
        "__wait_for_up.u__",
        "a",
        "c",
        "b",
        "alert",
        "__finalize__",
    ]
    steps = _steps(document)
    assert steps["__wait_for_up__"] | {"depends_on": None} == {
        "task_id": "__wait_for_up__",
        "kind": "sensor",
        "external_dag_id": "up",
        "external_task_id": None,
        "allowed_states": ["success", "failed"],
        "failed_states": [],
        "timeout_seconds": 300,
        "poke_interval_seconds": 60,
        "depends_on": None,
        "trigger_rule": "all_success",
    }
    assert (steps["__wait_for_up.u__"]["external_task_id"], steps["__wait_for_up.u__"]["allowed_states"]) == (
        "u",
        ["success"],
    )
    assert [(s["depends_on"], s["trigger_rule"]) for s in (steps["a"], steps["c"], steps["b"], steps["alert"])] == [
        (["__init__", "__wait_for_up__"], "all_success"),
        (["__init__", "__wait_for_up__", "__wait_for_up.u__"], "all_success"),
        (["a"], "all_success"),
        (["a", "b"], "one_failed"),
    ]
    assert steps["__finalize__"]["trigger_rule"] == "all_done"
    assert len(steps["__finalize__"]["depends_on"]) == 7
    assert steps["__init__"]["command"] == (
        "env ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR 'ETL_CRAFT_ACTOR=airflow:{{ run_id }}' etl-craft run "
        f"--pipeline_code p --init-only --run-key {KEY} --run-date '{{{{ data_interval_end | ds }}}}'"
    )
    assert steps["b"]["command"].endswith(f"etl-craft run --pipeline_code p --task_code b --run-key {KEY}")
    assert steps["__finalize__"]["command"].endswith(f"--pipeline_code p --finalize-only --run-key {KEY}")
    assert (document["tags"], document["default_args"]["retries"], document["max_active_runs"]) == (
        ["etl-craft", "team_a"],
        2,
        1,
    )
    assert document["etl_craft_yaml_version"] == 1 and document["airflow_version"] == ">=2.2.0"


def test_allow_schedule_false_writes_no_schedule_and_pipeline_parameters_win(harness: Harness) -> None:
    _remote(harness, "  Allow_schedule: false\n  Tags: [everyone]\n")
    harness.pipeline("p", [TaskSpec("a")])
    harness.migrate(
        "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 6 * * *', SCHEDULE_TIMEZONE = 'Europe/Paris', "
        'PIPELINE_PARAMETERS = \'{"TAGS": ["sales"], "RETRIES": 4, "CATCHUP": true}\' '
        "WHERE PIPELINE_CODE = 'p';\n"
    )
    made = harness.cli("generate-yml", "--pipeline_code", "p")
    assert made.returncode == 0, str(made)
    document = yaml.safe_load(made.stdout)
    assert (document["schedule"], document["timezone"], document["tags"]) == (
        None,
        "Europe/Paris",
        ["etl-craft", "sales"],
    )
    assert (document["default_args"]["retries"], document["catchup"]) == (4, True)
    _remote(harness)
    as_json = harness.cli("generate-yml", "--pipeline_code", "p", "--format", "json")
    found = json.loads(as_json.stdout)
    assert (found["schema"], found["dag_id"], found["output"]) == ("etl-craft/dag-yaml/1", "p", None)
    scheduled = yaml.safe_load(found["text"])
    assert (scheduled["schedule"], scheduled["tags"]) == ("0 6 * * *", ["etl-craft", "sales"])


@pytest.mark.parametrize(
    ("tasks", "deps", "feature"),
    [
        ([TaskSpec("a"), TaskSpec("b")], [("b", "a", "HAS_DATA")], "task p.b: found a HAS_DATA dependency"),
        (
            [TaskSpec("a"), TaskSpec("c"), TaskSpec("b", run_condition="N", count=1)],
            [("b", "a", "SUCCESS"), ("b", "c", "SUCCESS")],
            "task p.b: found RUN_CONDITION N (RUN_CONDITION_COUNT 1)",
        ),
        (
            [TaskSpec("a"), TaskSpec("c"), TaskSpec("b")],
            [("b", "a", "SUCCESS"), ("b", "c", "ALWAYS")],
            "task p.b: found mixed dependency types (ALWAYS, SUCCESS)",
        ),
    ],
    ids=["has-data", "run-condition-n", "mixed-types"],
)
def test_what_remote_mode_cant_express_is_refused_with_exit_18(
    harness: Harness, tasks: list[TaskSpec], deps: list[tuple[str, str, str]], feature: str
) -> None:
    _remote(harness)
    harness.pipeline("p", tasks, deps)
    out = harness.project.root / "p.yml"
    refused = harness.cli("generate-yml", "--pipeline_code", "p", "--output", str(out))
    assert refused.returncode == 18 and feature in refused.stderr, str(refused)
    assert refused.stdout == "" and not out.exists()
    init = harness.cli("run", "--pipeline_code", "p", "--init-only", "--run-key", "orchestrator:x")
    assert init.returncode == 18 and feature in init.stderr
    assert harness.runs() == []


def test_the_airflow_range_and_the_other_forms_are_refused_with_their_reasons(harness: Harness) -> None:
    _remote(harness)
    harness.pipeline(
        "p",
        [TaskSpec("a"), TaskSpec("c"), TaskSpec("b", run_condition="ANY")],
        [("b", "a", "ALWAYS"), ("b", "c", "ALWAYS")],
    )
    old = harness.cli("generate-yml", "--pipeline_code", "p", "--airflow-version", ">=2.0,<3")
    assert old.returncode == 18 and "which Airflow has only since 2.2.0" in old.stderr
    one_done = harness.cli("generate-yml", "--pipeline_code", "p", "--airflow-version", ">=2.2")
    assert one_done.returncode == 18 and "task p.b: found RUN_CONDITION ANY over ALWAYS (one_done)" in one_done.stderr
    fine = harness.cli("generate-yml", "--pipeline_code", "p", "--airflow-version", "~=2.11")
    assert fine.returncode == 0 and _steps(yaml.safe_load(fine.stdout))["b"]["trigger_rule"] == "one_done"
    unbounded = harness.cli("generate-yml", "--pipeline_code", "p", "--airflow-version", "<3")
    assert unbounded.returncode == 2 and "which has no lower bound" in unbounded.stderr
    whole = harness.cli("generate-yml", "--global")
    assert whole.returncode == 3 and "Orchestration.Global_dag false" in whole.stderr
    assert harness.runs() == []


def test_the_docs_dag_runs_generate_docs_on_docs_site_schedule(harness: Harness, tmp_path) -> None:
    _remote(harness, "  Timezone: Europe/Paris\n  Tags: [team_a]\n  Retries: 2\n")
    catalog = tmp_path / "site with space"
    harness.project.extra_sections = f"Docs_site:\n  Schedule: '30 5 * * 1-5'\n  Output: {catalog}\n"
    harness.project.write_config()
    harness.pipeline("p", [TaskSpec("a")], [])
    harness.migrate("UPDATE CFG_PIPELINES SET CREATE_DATE = '2026-02-03 23:30:00' WHERE PIPELINE_CODE = 'p';\n")
    out = harness.project.root / "docs.yml"
    made = harness.cli("generate-yml", "--docs", "--output", str(out))
    assert made.returncode == 0, str(made)
    assert made.stderr == f"generate-yml: wrote DAG etl_craft_docs to {out}\n"
    document = yaml.safe_load(out.read_text(encoding="utf-8"))
    check_document(document)
    assert (document["dag_id"], document["schedule"], document["timezone"], document["start_date"]) == (
        "etl_craft_docs",
        "30 5 * * 1-5",
        "Europe/Paris",
        "2026-02-04",  # 23:30 UTC is the next day in Paris
    )
    assert (document["tags"], document["catchup"], document["default_args"]["retries"]) == (
        ["etl-craft", "docs", "team_a"],
        False,
        2,
    )
    [step] = document["tasks"]
    assert (step["task_id"], step["kind"], step["depends_on"], step["trigger_rule"]) == (
        "generate_docs",
        "docs",
        [],
        "all_success",
    )
    assert shlex.split(step["command"]) == [
        "env",
        "ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR",
        "ETL_CRAFT_ACTOR=airflow:{{ run_id }}",
        "etl-craft",
        "generate-docs",
    ]
    # The command runs on a worker with its own config: it builds the site where Docs_site.Output says.
    built = harness.cli(*shlex.split(step["command"])[4:])
    assert built.returncode == 0 and (catalog / "index.html").is_file(), str(built)
    # --format json carries the same document; Allow_schedule false writes no schedule.
    _remote(harness, "  Allow_schedule: false\n")
    harness.project.extra_sections = "Docs_site:\n  Schedule: '@daily'\n"
    harness.project.write_config()
    shown = json.loads(harness.cli("generate-yml", "--docs", "--format", "json").stdout)
    unscheduled = yaml.safe_load(shown["text"])
    assert (shown["schema"], shown["dag_id"], unscheduled["schedule"], unscheduled["timezone"]) == (
        "etl-craft/dag-yaml/1",
        "etl_craft_docs",
        None,
        "UTC",
    )
    assert (
        unscheduled["tasks"][0]["command"]
        == step["command"]
        == ("env ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR 'ETL_CRAFT_ACTOR=airflow:{{ run_id }}' etl-craft generate-docs")
    )


@pytest.mark.parametrize(
    ("docs_site", "found"),
    [
        ("", "found no Docs_site section"),
        ("Docs_site:\n  Output: site\n", "found an empty Docs_site.Schedule"),
        ("Docs_site:\n  Schedule: '0 25 * * *'\n", "found '0 25 * * *' ("),
    ],
    ids=["no-section", "no-schedule", "not-cron"],
)
def test_the_docs_dag_without_docs_site_schedule_is_refused_with_exit_3(
    harness: Harness, docs_site: str, found: str
) -> None:
    _remote(harness)
    harness.project.extra_sections = docs_site
    harness.project.write_config()
    out = harness.project.root / "docs.yml"
    refused = harness.cli("generate-yml", "--docs", "--output", str(out))
    assert refused.returncode == 3 and refused.stderr.startswith("error: Docs_site.Schedule: "), str(refused)
    assert found in refused.stderr and "Docs_site.Schedule" in refused.stderr.split(". ")[-1]
    assert refused.stdout == "" and not out.exists()


def test_the_global_dag_triggers_every_pipeline_in_dependency_order(harness: Harness) -> None:
    _remote(harness, "  Global_dag: true\n  Tags: [team_a]\n  Retries: 3\n")
    for code in ("load", "mart", "report", "audit", "alone"):
        harness.pipeline(code, [TaskSpec("a"), TaskSpec("b")], [("b", "a", "SUCCESS")])
    harness.migrate(
        pipeline_dependency("mart", "load")
        + pipeline_dependency("report", "mart")
        + pipeline_dependency("report", "load")
        + pipeline_dependency("audit", "mart", "FAILURE")
        + "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 6 * * *', SCHEDULE_TIMEZONE = 'Europe/Paris', "
        "SCHEDULE_START_DATE = '2026-03-01' WHERE PIPELINE_CODE IN ('load', 'mart');\n"
    )
    made = harness.cli("generate-yml", "--global")
    assert made.returncode == 0, str(made)
    document = yaml.safe_load(made.stdout)
    check_document(document)
    assert (document["dag_id"], document["schedule"], document["timezone"], document["start_date"]) == (
        "etl_craft_global",
        "0 6 * * *",
        "Europe/Paris",
        "2026-03-01",
    )
    assert (document["tags"], document["default_args"]["retries"], document["refresh_type"]) == (
        ["etl-craft", "team_a"],
        3,
        None,
    )
    assert [
        (s["task_id"], s["kind"], s["trigger_dag_id"], s["depends_on"], s["trigger_rule"]) for s in document["tasks"]
    ] == [
        ("alone", "trigger", "alone", [], "all_success"),
        ("load", "trigger", "load", [], "all_success"),
        ("mart", "trigger", "mart", ["load"], "all_success"),
        ("audit", "trigger", "audit", ["mart"], "all_failed"),
        ("report", "trigger", "report", ["load", "mart"], "all_success"),
    ]
    # Each pipeline's own DAG: no schedule and no pipeline sensor, the global DAG triggers it.
    mart = yaml.safe_load(harness.cli("generate-yml", "--pipeline_code", "mart").stdout)
    assert mart["schedule"] is None
    assert [s["task_id"] for s in mart["tasks"]] == ["__init__", "a", "b", "__finalize__"]
    assert _steps(mart)["a"]["depends_on"] == ["__init__"]


@pytest.mark.parametrize(
    ("migration", "feature"),
    [
        (
            "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 6 * * *' WHERE PIPELINE_CODE = 'p';\n"
            "UPDATE CFG_PIPELINES SET RUN_SCHEDULE = '0 7 * * *' WHERE PIPELINE_CODE = 'q';\n",
            "found pipelines with different RUN_SCHEDULEs: 0 6 * * * (p); 0 7 * * * (q)",
        ),
        (
            pipeline_dependency("q", "p", "HAS_DATA"),
            "pipeline q: its dependency on pipeline p: found dependency type HAS_DATA",
        ),
        (
            pipeline_dependency("q", "p") + pipeline_dependency("q", "r", "ALWAYS"),
            "pipeline q: its pipeline dependencies: found mixed dependency types (ALWAYS, SUCCESS) in a global DAG",
        ),
        (
            "UPDATE CFG_TASKS SET RUN_CONDITION = 'N', RUN_CONDITION_COUNT = 1 WHERE TASK_CODE = 'b' "
            "AND PIPELINE_ID = (SELECT PIPELINE_ID FROM CFG_PIPELINES WHERE PIPELINE_CODE = 'r');\n",
            "task r.b: found RUN_CONDITION N (RUN_CONDITION_COUNT 1)",
        ),
    ],
    ids=["two-schedules", "has-data", "mixed-types", "a-pipeline-dag-it-cant-express"],
)
def test_a_global_dag_remote_mode_cant_express_is_refused_with_exit_18(
    harness: Harness, migration: str, feature: str
) -> None:
    _remote(harness, "  Global_dag: true\n")
    for code in ("p", "q", "r"):
        harness.pipeline(
            code, [TaskSpec("a"), TaskSpec("c"), TaskSpec("b")], [("b", "a", "SUCCESS"), ("b", "c", "SUCCESS")]
        )
    harness.migrate(migration)
    out = harness.project.root / "global.yml"
    refused = harness.cli("generate-yml", "--global", "--output", str(out))
    assert refused.returncode == 18 and feature in refused.stderr, str(refused)
    assert refused.stdout == "" and not out.exists()


def test_every_command_splits_back_into_the_arguments_it_was_built_from(harness: Harness) -> None:
    _remote(harness)
    harness.pipeline("Pipe_1", [TaskSpec("Task_a"), TaskSpec("b")], [("b", "Task_a", "SUCCESS")])
    document = yaml.safe_load(harness.cli("generate-yml", "--pipeline_code", "Pipe_1").stdout)
    for step in document["tasks"]:
        words = shlex.split(step["command"])
        assert words[:7] == [
            "env",
            "ETL_CRAFT_ACTOR_KIND=ORCHESTRATOR",
            "ETL_CRAFT_ACTOR=airflow:{{ run_id }}",
            "etl-craft",
            "run",
            "--pipeline_code",
            "Pipe_1",
        ]
        assert "orchestrator:{{ run_id }}" in words
