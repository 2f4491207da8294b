"""list, graph, steps, status, history and audit through the real CLI, over the runs of `daily` and
`sales` that have ended (tests/core/inspect/scenario.py)."""

from __future__ import annotations

import socket
from datetime import UTC, datetime

import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from etl_craft.services import inspect
from etl_craft.services.runs.selection import RunSelector
from tests.core.inspect.scene import ACTOR, Scene, tabbed, when

SYSTEM = f"etl-craft@{socket.gethostname()}"
FLAKY_ERROR = (
    "ingestion script flaky.py: found RuntimeError raised in run: the feed is down; expected run to finish without "
    "an exception (raising one is how a script fails its task). The script failed the task: see its traceback in "
    "the attempt log, fix the cause, then rerun the task"
)


def seconds(start: str, end: str) -> str:
    return f"{(datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds():.1f}"


# --- list --------------------------------------------------------------------------------------------


def test_list_shows_every_active_pipeline_by_code_with_its_pause(scene: Scene) -> None:
    result = scene.ok("list")
    doc = scene.document("pipeline-list", inspect.list_pipelines)
    paused_at = doc["pipelines"][0]["pause"]["paused_at"]
    assert result.stdout.splitlines() == [
        tabbed("PIPELINE_CODE", "PIPELINE_NAME", "REFRESH_TYPE", "RUN_SCHEDULE", "SLA_IN_HOURS", "PAUSED"),
        tabbed(
            "daily", "Daily snapshot", "FULL", "-", "-", f"paused by bob@test since {when(paused_at)}: quarter close"
        ),
        tabbed("loop", "Loop", "FULL", "-", "-", "-"),
        tabbed("repair", "Repair", "FULL", "-", "1", "-"),
        tabbed("report", "Sales report", "FULL", "@daily", "24", "-"),
        tabbed("sales", "Sales", "INCREMENTAL", "0 6 * * * (Europe/Paris)", "2.5", "-"),
    ]
    as_json = scene.json("list")
    assert as_json == doc
    assert as_json["schema"] == "etl-craft/pipeline-list/1"
    sales = as_json["pipelines"][4]
    assert {k: v for k, v in sales.items() if k != "pipeline_id"} == {
        "pipeline_code": "sales",
        "pipeline_name": "Sales",
        "description": None,
        "refresh_type": "INCREMENTAL",
        "run_schedule": "0 6 * * *",
        "schedule_timezone": "Europe/Paris",
        "sla_in_hours": 2.5,
        "pause": None,
    }
    assert as_json["pipelines"][0]["pause"] == {
        "paused_at": paused_at,
        "paused_by": "bob@test",
        "reason": "quarter close",
    }


# --- graph -------------------------------------------------------------------------------------------


def test_graph_shows_waves_early_starters_and_dependencies_both_ways(scene: Scene) -> None:
    result = scene.ok("graph", "--pipeline_code", "sales")
    assert result.stdout.splitlines() == [
        "sales: 5 task(s) in 3 wave(s)",
        "wave 1: extract, flaky",
        "wave 2: combine, transform",
        "wave 3: publish",
        "early starters: combine (ANY: 1 of 2)",
        "Task dependencies:",
        tabbed("TASK", "DEPENDS_ON", "TYPE"),
        tabbed("combine", "extract", "SUCCESS"),
        tabbed("combine", "flaky", "SUCCESS"),
        tabbed("transform", "flaky", "SUCCESS"),
        tabbed("transform", "daily.snapshot", "SUCCESS"),
        tabbed("publish", "transform", "SUCCESS"),
        "Pipeline dependencies:",
        tabbed("PIPELINE", "DEPENDS_ON", "TYPE"),
        tabbed("sales", "daily", "SUCCESS"),
        tabbed("report", "sales", "ALWAYS"),
    ]
    as_json = scene.json("graph", "--pipeline_code", "sales")
    assert as_json == scene.document("graph", inspect.pipeline_graph, "sales")
    assert as_json["schema"] == "etl-craft/graph/1"
    assert as_json["waves"] == [["extract", "flaky"], ["combine", "transform"], ["publish"]]
    assert as_json["early_starters"] == [
        {"task_code": "combine", "run_condition": "ANY", "required": 1, "dependencies": 2}
    ]
    assert as_json["task_dependencies"][3] == {
        "task_code": "transform",
        "depends_on": "daily.snapshot",
        "dependency_type": "SUCCESS",
        "cross_pipeline": True,
        "consume_repairs": True,
    }
    assert as_json["pipeline_dependencies"] == [
        {
            "pipeline_code": "sales",
            "depends_on_pipeline_code": "daily",
            "dependency_type": "SUCCESS",
            "consume_repairs": True,
            "active": True,
        },
        {
            "pipeline_code": "report",
            "depends_on_pipeline_code": "sales",
            "dependency_type": "ALWAYS",
            "consume_repairs": True,
            "active": True,
        },
    ]


def test_graph_of_a_single_task_pipeline_says_none_for_what_it_lacks(scene: Scene) -> None:
    result = scene.ok("graph", "--pipeline_code", "report")
    assert result.stdout.splitlines() == [
        "report: 1 task(s) in 1 wave(s)",
        "wave 1: mail",
        "early starters: (none)",
        "Task dependencies: (none)",
        "Pipeline dependencies:",
        tabbed("PIPELINE", "DEPENDS_ON", "TYPE"),
        tabbed("report", "sales", "ALWAYS"),
    ]


def test_a_graph_error_exits_with_its_own_code_and_an_unknown_pipeline_with_4(scene: Scene) -> None:
    for command in ("graph", "steps", "status"):
        cycle = (scene.cli if command == "graph" else scene.main)(command, "--pipeline_code", "loop")
        assert cycle.returncode == 7, cycle
        assert cycle.stderr.startswith("error: pipeline loop: found a dependency cycle: ")
    unknown = scene.cli("graph", "--pipeline_code", "salse")
    assert unknown.returncode == 4
    assert unknown.stderr.splitlines()[-1] == (
        "error: pipeline 'salse': found no active pipeline with this code; expected the code of an active "
        "CFG_PIPELINES row. Did you mean sales? etl-craft list shows every pipeline"
    )
    as_json = scene.main("history", "--pipeline_code", "salse", "--format", "json")
    assert as_json.returncode == 4 and as_json.json()["schema"] == "etl-craft/error/1"


# --- steps -------------------------------------------------------------------------------------------

STEP_PARAMETERS = [
    "Parameters:",
    tabbed("TASK", "PARAMETER", "VALUE"),
    tabbed("extract", "INPUT_PARAMS", '{"page_size": 1000}'),
    tabbed("extract", "SCRIPT_NAME", "ok.py"),
    tabbed("flaky", "SCRIPT_NAME", "flaky.py"),
    tabbed("combine", "SCRIPT_NAME", "ok.py"),
    tabbed("transform", "SCRIPT_NAME", "ok.py"),
    tabbed("publish", "SCRIPT_NAME", "ok.py"),
]


def test_steps_without_an_unfinished_run_show_the_tasks_without_statuses(scene: Scene) -> None:
    result = scene.ok("steps", "--pipeline_code", "sales")
    assert result.stdout.splitlines() == [
        "sales: no unfinished run; name a run with --run-id or --run-key to see task statuses",
        tabbed("TASK", "STATUS", "HANDLER", "TASK_TYPE", "RUN_CONDITION"),
        tabbed("extract", "-", "PYTHON", "INGESTION", "ALL"),
        tabbed("flaky", "-", "PYTHON", "INGESTION", "ALL"),
        tabbed("combine", "-", "PYTHON", "ETL", "ANY"),
        tabbed("transform", "-", "PYTHON", "ETL", "ALL"),
        tabbed("publish", "-", "PYTHON", "ETL", "ALL"),
        *STEP_PARAMETERS,
    ]
    as_json = scene.json("steps", "--pipeline_code", "sales")
    assert as_json == scene.document("steps", inspect.pipeline_steps, "sales")
    assert as_json["schema"] == "etl-craft/steps/1" and as_json["run"] is None
    assert [s["status"] for s in as_json["steps"]] == [None] * 5
    assert as_json["steps"][0]["parameters"] == {"INPUT_PARAMS": '{"page_size": 1000}', "SCRIPT_NAME": "ok.py"}


def test_steps_under_a_named_run_show_each_status(scene: Scene) -> None:
    result = scene.ok("steps", "--pipeline_code", "sales", "--run-key", "sales-0131")
    assert result.stdout.splitlines() == [
        "sales: pipeline_run_id=2 key=sales-0131 kind=MANUAL run_date=2026-01-31 status=FAILED",
        tabbed("TASK", "STATUS", "HANDLER", "TASK_TYPE", "RUN_CONDITION"),
        tabbed("extract", "SUCCESS", "PYTHON", "INGESTION", "ALL"),
        tabbed("flaky", "FAILED", "PYTHON", "INGESTION", "ALL"),
        tabbed("combine", "SUCCESS", "PYTHON", "ETL", "ANY"),
        tabbed("transform", "SKIPPED", "PYTHON", "ETL", "ALL"),
        tabbed("publish", "SKIPPED", "PYTHON", "ETL", "ALL"),
        *STEP_PARAMETERS,
    ]
    as_json = scene.json("steps", "--pipeline_code", "sales", "--run-id", "2")
    assert as_json == scene.document("steps", inspect.pipeline_steps, "sales", RunSelector(run_id=2))
    assert as_json["run"]["run_key"] == "sales-0131"
    missing = scene.main("steps", "--pipeline_code", "sales", "--run-key", "nope")
    assert missing.returncode == 24 and "run --run-key nope of sales: found no such run" in missing.stderr


# --- status ------------------------------------------------------------------------------------------


def test_status_of_an_ended_run_names_what_the_failure_held_back(scene: Scene) -> None:
    result = scene.ok("status", "--pipeline_code", "sales", "--run-key", "sales-0131")
    doc = scene.document("status", inspect.run_status, "sales", RunSelector(run_key="sales-0131"))
    run = doc["run"]
    tasks = {t["task_code"]: t for t in doc["tasks"]}

    def took(code: str) -> str:
        return seconds(tasks[code]["start_date"], tasks[code]["end_date"])

    assert result.stdout.splitlines() == [
        "sales: pipeline_run_id=2 key=sales-0131 kind=MANUAL run_date=2026-01-31 status=FAILED",
        f"start={when(run['start_date'])} duration_seconds={seconds(run['start_date'], run['end_date'])} "
        "SLA=MET sla_hours=2.5",
        tabbed("TASK", "STATUS", "ATTEMPTS", "ROWS_WRITTEN", "DURATION_SECONDS", "ERROR"),
        tabbed("extract", "SUCCESS", 1, 1, took("extract"), "-"),
        tabbed("flaky", "FAILED", 2, "-", took("flaky"), FLAKY_ERROR),
        tabbed("combine", "SUCCESS", 1, 1, took("combine"), "-"),
        tabbed(
            "transform", "SKIPPED", 0, "-", "-", "its dependencies can no longer be met: flaky (FAILED, SUCCESS needed)"
        ),
        tabbed(
            "publish",
            "SKIPPED",
            0,
            "-",
            "-",
            "its dependencies can no longer be met: transform (SKIPPED, SUCCESS needed)",
        ),
        "blocked by failures: transform, publish",
    ]
    as_json = scene.json("status", "--pipeline_code", "sales", "--run-id", "2")
    assert as_json == doc
    assert as_json["schema"] == "etl-craft/status/1"
    assert run["status"] == "FAILED" and run["started_by"] == ACTOR and run["ended_by"] == SYSTEM
    assert as_json["blocked_by_failures"] == ["transform", "publish"]
    assert [a["status"] for a in tasks["flaky"]["attempts"]] == ["FAILED", "FAILED"]
    assert tasks["transform"]["attempts"] == []


def test_status_of_a_paused_pipeline_shows_the_pause(scene: Scene) -> None:
    result = scene.ok("status", "--pipeline_code", "daily", "--run-key", "daily-0201")
    doc = scene.document("status", inspect.run_status, "daily", RunSelector(run_key="daily-0201"))
    run = doc["run"]
    assert result.stdout.splitlines() == [
        f"daily: pipeline_run_id=3 key=daily-0201 kind=MANUAL run_date={run['run_date']} status=SKIPPED",
        f"start={when(run['start_date'])} duration_seconds={seconds(run['start_date'], run['end_date'])} "
        "SLA=- sla_hours=-",
        f"paused by bob@test since {when(doc['pause']['paused_at'])}: quarter close",
        tabbed("TASK", "STATUS", "ATTEMPTS", "ROWS_WRITTEN", "DURATION_SECONDS", "ERROR"),
        tabbed("snapshot", "NOT RUN", 0, "-", "-", "-"),
        "blocked by failures: (none)",
    ]
    assert doc["pause"]["paused_by"] == "bob@test" and doc["blocked_by_failures"] == []


def test_status_without_an_unfinished_run_refuses_with_the_remedy(scene: Scene) -> None:
    result = scene.cli("status", "--pipeline_code", "report")
    assert result.returncode == 9, result
    assert result.stderr.splitlines()[-1] == (
        "error: pipeline report: found no unfinished run; expected one unfinished run, or a run named with "
        "--run-id or --run-key. Start one with etl-craft run --pipeline_code report, or name an ended run with --run-id"
    )


def test_status_refuses_a_run_of_another_pipeline_and_an_unknown_run(scene: Scene) -> None:
    other = scene.main("status", "--pipeline_code", "sales", "--run-id", "1")
    assert other.returncode == 9
    assert "run 1: found a run of another pipeline" in other.stderr
    unknown = scene.main("status", "--pipeline_code", "sales", "--run-id", "999")
    assert unknown.returncode == 24 and "run 999: found no such run" in unknown.stderr


# --- history -----------------------------------------------------------------------------------------

RUN_HEADER = tabbed(
    "PIPELINE_RUN_ID",
    "STATUS",
    "TRIGGER_KIND",
    "RUN_DATE",
    "START_DATE",
    "END_DATE",
    "SLA_STATUS",
    "STARTED_BY",
    "ENDED_BY",
)
INTERVENTION_HEADER = tabbed("PIPELINE_RUN_ID", "TASK", "ACTION", "FROM", "TO", "BY", "AT", "REASON")


def test_history_lists_runs_newest_first_with_who_started_and_ended_them(scene: Scene) -> None:
    result = scene.ok("history", "--pipeline_code", "daily")
    doc = scene.document("history", inspect.run_history, "daily")
    skipped, first = doc["runs"]
    assert result.stdout.splitlines() == [
        RUN_HEADER,
        tabbed(
            3,
            "SKIPPED",
            "MANUAL",
            skipped["run_date"],
            when(skipped["start_date"]),
            when(skipped["end_date"]),
            "-",
            ACTOR,
            ACTOR,
        ),
        tabbed(
            1, "SUCCESS", "MANUAL", "2026-01-31", when(first["start_date"]), when(first["end_date"]), "-", ACTOR, SYSTEM
        ),
        "Interventions: (none)",
    ]
    as_json = scene.json("history", "--pipeline_code", "daily")
    assert as_json == doc
    assert as_json["schema"] == "etl-craft/history/1"
    assert as_json["limit"] == 20 and as_json["task_code"] is None and as_json["task_runs"] == []
    assert [r["run_key"] for r in as_json["runs"]] == ["daily-0201", "daily-0131"]


def test_history_shows_each_intervention_and_its_actor(scene: Scene) -> None:
    result = scene.ok("history", "--pipeline_code", "sales")
    doc = scene.document("history", inspect.run_history, "sales")
    (run,) = doc["runs"]
    rerun, reopen = doc["interventions"]
    assert result.stdout.splitlines() == [
        RUN_HEADER,
        tabbed(
            2, "FAILED", "MANUAL", "2026-01-31", when(run["start_date"]), when(run["end_date"]), "MET", ACTOR, SYSTEM
        ),
        "Interventions:",
        INTERVENTION_HEADER,
        tabbed(2, "flaky", "RERUN", "FAILED", "-", ACTOR, when(rerun["requested_at"]), "retry the feed"),
        tabbed(2, "flaky", "REOPEN", "FAILED", "IN-PROGRESS", ACTOR, when(reopen["requested_at"]), "retry the feed"),
    ]
    assert scene.json("history", "--pipeline_code", "sales") == doc
    assert {k: reopen[k] for k in ("action", "from_status", "to_status", "requested_by", "requested_by_kind")} == {
        "action": "REOPEN",
        "from_status": "FAILED",
        "to_status": "IN-PROGRESS",
        "requested_by": ACTOR,
        "requested_by_kind": "HUMAN",
    }


def test_history_of_a_task_shows_its_row_in_each_run(scene: Scene) -> None:
    result = scene.ok("history", "--pipeline_code", "sales", "--task_code", "flaky")
    doc = scene.document("history", inspect.run_history, "sales", task_code="flaky")
    (row,) = doc["task_runs"]
    assert result.stdout.splitlines()[:2] == [
        tabbed(
            "PIPELINE_RUN_ID",
            "STATUS",
            "TRIGGER_KIND",
            "ATTEMPTS",
            "SOURCE_COUNT",
            "TARGET_COUNT",
            "START_DATE",
            "END_DATE",
            "ERROR_MESSAGE",
        ),
        tabbed(2, "FAILED", "MANUAL", 2, "-", "-", when(row["start_date"]), when(row["end_date"]), FLAKY_ERROR),
    ]
    assert result.stdout.splitlines()[2:4] == ["Interventions:", INTERVENTION_HEADER]
    assert len(result.stdout.splitlines()) == 6
    assert scene.json("history", "--pipeline_code", "sales", "--task_code", "flaky") == doc

    never = scene.main("history", "--pipeline_code", "daily", "--task_code", "snapshot", "--limit", "5")
    assert never.stdout.splitlines()[1].startswith(tabbed(3, "NOT RUN", "MANUAL", 0, "-", "-", "-", "-", "-"))
    assert never.stdout.splitlines()[2].startswith(tabbed(1, "SUCCESS", "MANUAL", 1, 1, 1))
    unknown = scene.main("history", "--pipeline_code", "sales", "--task_code", "flakey")
    assert unknown.returncode == 4 and "(did you mean flaky?)" in unknown.stderr


def test_history_is_bounded_by_limit_all_or_a_named_run(scene: Scene) -> None:
    newest = scene.main("history", "--pipeline_code", "daily", "--limit", "1")
    assert [line.split("\t")[0] for line in newest.stdout.splitlines()] == [
        "PIPELINE_RUN_ID",
        "3",
        "Interventions: (none)",
    ]
    every = scene.json("history", "--pipeline_code", "daily", "--all")
    assert every["limit"] is None and [r["pipeline_run_id"] for r in every["runs"]] == [3, 1]
    named = scene.json("history", "--pipeline_code", "sales", "--run-key", "sales-0131")
    assert [r["pipeline_run_id"] for r in named["runs"]] == [2] and len(named["interventions"]) == 2
    never_run = scene.main("history", "--pipeline_code", "report")
    assert never_run.stdout == "no runs yet\n"
    zero = scene.main("history", "--pipeline_code", "sales", "--limit", "0")
    assert zero.returncode == 2
    assert zero.stderr.splitlines()[-1] == (
        "error: argument --limit: found '0'; expected a whole number from 1 to 9223372036854775807. "
        "Give a limit of 1 or more, or use --all for every run"
    )
    for bad in (["--limit", "0"], ["--run-id", "2", "--all"], ["--limit", "2", "--all"]):
        refused = scene.main("history", "--pipeline_code", "sales", *bad)
        assert refused.returncode == 2, (bad, refused)


# --- audit -------------------------------------------------------------------------------------------

ACTION_HEADER = tabbed("AT", "ACTOR", "KIND", "COMMAND", "OUTCOME", "ARGUMENTS")
CHANGE_HEADER = tabbed("AT", "ACTOR", "KIND", "TABLE", "ROW", "OPERATION", "BEFORE", "AFTER", "MIGRATION")


def test_audit_of_a_pipeline_lists_its_requests_then_its_metadata_changes(scene: Scene) -> None:
    result = scene.ok("audit", "--pipeline_code", "daily")
    doc = scene.document("audit", inspect.audit, "daily")
    ran, skipped = (when(a["at"]) for a in doc["actions"])
    # Each change has its own time: a migration's statements can straddle a second on SQLite.
    changed = iter([when(c["at"]) for c in doc["metadata_changes"]])
    migration = "0001_pipelines.sql"
    assert result.stdout.splitlines() == [
        ACTION_HEADER,
        tabbed(
            ran,
            ACTOR,
            "HUMAN",
            "run",
            "REQUESTED",
            '{"pipeline_code":"daily","run_date":"2026-01-31","run_key":"daily-0131"}',
        ),
        tabbed(
            skipped,
            ACTOR,
            "HUMAN",
            "run",
            "REQUESTED",
            '{"pipeline_code":"daily","reason":"holiday","run_key":"daily-0201","skip":true}',
        ),
        CHANGE_HEADER,
        tabbed(
            next(changed),
            ACTOR,
            "HUMAN",
            "CFG_PIPELINES",
            1,
            "INSERT",
            "-",
            '{"ACTIVE_FLAG":"Y","CATCHUP":"N","DESCRIPTION":null,"MAX_CATCHUP_RUNS":1,"MAX_PARALLEL_TASKS":null,"OVERLAP_POLICY":"SKIP","PIPELINE_CODE":"daily","PIPELINE_ID":1,"PIPELINE_NAME":"Daily snapshot","PIPELINE_PARAMETERS":null,"PRIORITY":0,"REFRESH_TYPE":"FULL","RUN_SCHEDULE":null,"SCHEDULE_START_DATE":null,"SCHEDULE_TIMEZONE":null,"SLA_IN_HOURS":null}',
            migration,
        ),
        tabbed(
            next(changed),
            ACTOR,
            "HUMAN",
            "CFG_TASKS",
            1,
            "INSERT",
            "-",
            '{"ACTIVE_FLAG":"Y","HANDLER":"PYTHON","PIPELINE_ID":1,"RUN_CONDITION":null,"RUN_CONDITION_COUNT":null,"TASK_CODE":"snapshot","TASK_ID":1,"TASK_TYPE":"INGESTION"}',
            migration,
        ),
        tabbed(
            next(changed),
            ACTOR,
            "HUMAN",
            "CFG_TASK_PARAMETERS",
            1,
            "INSERT",
            "-",
            '{"ACTIVE_FLAG":"Y","PARAMETER_NAME":"SCRIPT_NAME","PARAMETER_VALUE":"ok.py","TASK_ID":1,"TASK_PARAMETER_ID":1}',
            migration,
        ),
        tabbed(
            next(changed),
            ACTOR,
            "HUMAN",
            "CFG_TASK_DEPENDENCY",
            4,
            "INSERT",
            "-",
            '{"ACTIVE_FLAG":"Y","CONSUME_REPAIRS":"Y","DEPENDENCY_TYPE":"SUCCESS","DEPENDS_ON_PIPELINE_ID":1,"DEPENDS_ON_TASK_ID":1,"PIPELINE_ID":2,"TASK_DEPENDENCY_ID":4,"TASK_ID":5}',
            migration,
        ),
        tabbed(
            next(changed),
            ACTOR,
            "HUMAN",
            "CFG_PIPELINE_DEPENDENCY",
            1,
            "INSERT",
            "-",
            '{"ACTIVE_FLAG":"Y","CONSUME_REPAIRS":"Y","DEPENDENCY_TYPE":"SUCCESS","DEPENDS_ON_PIPELINE_ID":1,"PIPELINE_DEPENDENCY_ID":1,"PIPELINE_ID":2}',
            migration,
        ),
    ]
    as_json = scene.json("audit", "--pipeline_code", "daily")
    assert as_json == doc
    assert as_json["schema"] == "etl-craft/audit/1" and as_json["pipeline_code"] == "daily"
    assert as_json["actions"][1]["arguments"]["task_code"] is None  # JSON keeps every argument
    assert as_json["metadata_changes"][1]["after"]["CREATED_BY"] == ACTOR  # and the stamp columns


def test_audit_shows_an_update_as_the_columns_it_changed(scene: Scene) -> None:
    lines = scene.ok("audit", "--pipeline_code", "sales").stdout.splitlines()
    assert lines[0] == ACTION_HEADER
    assert [line.split("\t")[3] for line in lines[1:3]] == ["run", "run"]
    assert lines[3] == CHANGE_HEADER
    update = lines[-1].split("\t")
    assert update[1:] == [
        ACTOR, "HUMAN", "CFG_TASK_PARAMETERS", "10", "UPDATE",
        '{"PARAMETER_VALUE":"{\\"page_size\\": 500}"}', '{"PARAMETER_VALUE":"{\\"page_size\\": 1000}"}',
        "0002_retune.sql",
    ]  # fmt: skip
    tables = {line.split("\t")[3] for line in lines[4:]}
    assert tables == {
        "CFG_PIPELINES",
        "CFG_TASKS",
        "CFG_TASK_PARAMETERS",
        "CFG_TASK_DEPENDENCY",
        "CFG_PIPELINE_DEPENDENCY",
    }
    # sales itself, its 5 tasks, 6 parameters, 5 task dependencies, both pipeline dependencies and the update
    assert len(lines) - 4 == 1 + 5 + 6 + 5 + 2 + 1


def test_audit_since_a_time_and_its_refusals(scene: Scene) -> None:
    everything = scene.document("audit", inspect.audit)
    assert [a["command"] for a in everything["actions"]] == ["migrate"] + ["run"] * 6
    # 0001: 4 pipelines, 9 tasks, 10 parameters, 7 task and 2 pipeline dependencies; 0002: one update;
    # 0003: repair, its 4 tasks, 4 parameters and 2 dependencies
    assert len(everything["metadata_changes"]) == 4 + 9 + 10 + 7 + 2 + 1 + 1 + 4 + 4 + 2
    third = everything["actions"][2]["at"]
    later = scene.json("audit", "--since", third)
    assert [a["action_id"] for a in later["actions"]] == [a["action_id"] for a in everything["actions"][2:]]
    assert later["metadata_changes"] == [] and later["since"] == third
    naive = datetime.fromisoformat(third).astimezone(UTC).replace(tzinfo=None).isoformat()
    assert scene.json("audit", "--since", naive)["actions"] == later["actions"]
    assert scene.main("audit", "--since", "2999-01-01").stdout.splitlines() == [ACTION_HEADER, CHANGE_HEADER]
    refused = scene.main("audit", "--since", "last tuesday")
    assert refused.returncode == 2
    assert "error: --since: found 'last tuesday'; expected an ISO 8601 date or timestamp" in refused.stderr


def test_inspection_commands_record_no_action(scene: Scene) -> None:
    def actions() -> int:
        with scene.project.open_db().read() as conn:
            return conn.execute(sa.select(sa.func.count()).select_from(t.aud_actions)).scalar_one()

    before = actions()
    for args in (
        ["list"],
        ["graph", "--pipeline_code", "sales"],
        ["steps", "--pipeline_code", "sales"],
        ["status", "--pipeline_code", "sales", "--run-id", "2"],
        ["history", "--pipeline_code", "sales"],
        ["audit"],
    ):
        assert scene.main(*args).returncode == 0
    assert actions() == before
