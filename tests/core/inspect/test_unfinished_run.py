"""status, steps and history of `repair`'s run, left unfinished by a repair (tests/core/inspect/scenario.py):
feed_a was fixed and rerun, load_a reset and not run yet, load_b still held back by feed_b's failure."""

from __future__ import annotations

from datetime import datetime

from etl_craft.services import inspect
from etl_craft.services.runs.selection import RunSelector
from tests.core.inspect.scene import ACTOR, Scene, tabbed, when

FEED_B_ERROR = (
    "ingestion script feed_b.py: found RuntimeError raised in run: the feed is down; expected run to finish without "
    "an exception (raising one is how a script fails its task). The script failed the task: see its traceback in "
    "the attempt log, fix the cause, then rerun the task"
)


def test_status_picks_the_single_unfinished_run_and_names_what_is_still_blocked(scene: Scene) -> None:
    result = scene.ok("status", "--pipeline_code", "repair")
    doc = scene.document("status", inspect.run_status, "repair")
    run = doc["run"]
    tasks = {t["task_code"]: t for t in doc["tasks"]}

    def took(code: str) -> str:
        start, end = (tasks[code][k] for k in ("start_date", "end_date"))
        return f"{(datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds():.1f}"

    assert result.stdout.splitlines() == [
        "repair: pipeline_run_id=4 key=r1 kind=MANUAL run_date=2026-02-01 status=IN-PROGRESS",
        f"start={when(run['start_date'])} duration_seconds=- SLA=MET sla_hours=1",  # kept from its first end
        tabbed("TASK", "STATUS", "ATTEMPTS", "ROWS_WRITTEN", "DURATION_SECONDS", "ERROR"),
        tabbed("feed_a", "SUCCESS", 2, 1, took("feed_a"), "-"),
        tabbed("feed_b", "FAILED", 1, "-", took("feed_b"), FEED_B_ERROR),
        tabbed("load_a", "NOT RUN", 0, "-", "-", "-"),
        tabbed(
            "load_b", "SKIPPED", 0, "-", "-", "its dependencies can no longer be met: feed_b (FAILED, SUCCESS needed)"
        ),
        "blocked by failures: load_b",
    ]
    assert scene.json("status", "--pipeline_code", "repair") == doc
    assert run["status"] == "IN-PROGRESS" and run["repair_pending"] is True and run["end_date"] is None
    assert doc["duration_seconds"] is None and doc["pause"] is None
    assert tasks["load_a"] == {
        "task_id": tasks["load_a"]["task_id"],
        "task_code": "load_a",
        "pipeline_run_id": None,
        "task_run_id": None,
        "status": "NOT RUN",
        "attempt_count": 0,
        "source_count": None,
        "target_count": None,
        "insert_count": None,
        "update_count": None,
        "delete_count": None,
        "rows_written": None,
        "start_date": None,
        "end_date": None,
        "error_message": None,
        "attempts": [],
    }
    assert [a["status"] for a in tasks["feed_a"]["attempts"]] == ["FAILED", "SUCCESS"]


def test_steps_show_statuses_under_the_unfinished_run(scene: Scene) -> None:
    result = scene.ok("steps", "--pipeline_code", "repair")
    assert result.stdout.splitlines() == [
        "repair: pipeline_run_id=4 key=r1 kind=MANUAL run_date=2026-02-01 status=IN-PROGRESS",
        tabbed("TASK", "STATUS", "HANDLER", "TASK_TYPE", "RUN_CONDITION"),
        tabbed("feed_a", "SUCCESS", "PYTHON", "INGESTION", "ALL"),
        tabbed("feed_b", "FAILED", "PYTHON", "INGESTION", "ALL"),
        tabbed("load_a", "NOT RUN", "PYTHON", "ETL", "ALL"),
        tabbed("load_b", "SKIPPED", "PYTHON", "ETL", "ALL"),
        "Parameters:",
        tabbed("TASK", "PARAMETER", "VALUE"),
        tabbed("feed_a", "SCRIPT_NAME", "feed_a.py"),
        tabbed("feed_b", "SCRIPT_NAME", "feed_b.py"),
        tabbed("load_a", "SCRIPT_NAME", "feed_a.py"),
        tabbed("load_b", "SCRIPT_NAME", "feed_b.py"),
    ]
    doc = scene.document("steps", inspect.pipeline_steps, "repair")
    assert scene.json("steps", "--pipeline_code", "repair") == doc
    assert doc["run"]["pipeline_run_id"] == 4
    assert [(s["task_code"], s["status"], s["task_run_id"] is None) for s in doc["steps"]] == [
        ("feed_a", "SUCCESS", False),
        ("feed_b", "FAILED", False),
        ("load_a", "NOT RUN", True),
        ("load_b", "SKIPPED", False),
    ]


def test_history_shows_the_reset_the_rerun_and_the_reopening(scene: Scene) -> None:
    result = scene.ok("history", "--pipeline_code", "repair")
    doc = scene.document("history", inspect.run_history, "repair")
    (run,) = doc["runs"]
    reset, rerun, reopen = doc["interventions"]
    assert result.stdout.splitlines() == [
        tabbed(
            "PIPELINE_RUN_ID",
            "STATUS",
            "TRIGGER_KIND",
            "RUN_DATE",
            "START_DATE",
            "END_DATE",
            "SLA_STATUS",
            "STARTED_BY",
            "ENDED_BY",
        ),
        tabbed(4, "IN-PROGRESS", "MANUAL", "2026-02-01", when(run["start_date"]), "-", "MET", ACTOR, "-"),
        "Interventions:",
        tabbed("PIPELINE_RUN_ID", "TASK", "ACTION", "FROM", "TO", "BY", "AT", "REASON"),
        tabbed(4, "load_a", "RESET", "SKIPPED", "(reset)", ACTOR, when(reset["requested_at"]), "feed a is back"),
        tabbed(4, "feed_a", "RERUN", "FAILED", "-", ACTOR, when(rerun["requested_at"]), "feed a is back"),
        tabbed(4, "feed_a", "REOPEN", "FAILED", "IN-PROGRESS", ACTOR, when(reopen["requested_at"]), "feed a is back"),
    ]
    assert scene.json("history", "--pipeline_code", "repair") == doc
    assert reset["to_status"] is None and reset["previous_message"] == (
        "its dependencies can no longer be met: feed_a (FAILED, SUCCESS needed)"
    )


def test_history_of_a_reset_task_shows_it_not_run_and_only_its_interventions(scene: Scene) -> None:
    doc = scene.document(
        "history", inspect.run_history, "repair", task_code="load_a", selector=RunSelector(run_key="r1")
    )
    assert scene.json("history", "--pipeline_code", "repair", "--task_code", "load_a", "--run-key", "r1") == doc
    assert doc["limit"] is None
    assert [(t["pipeline_run_id"], t["status"]) for t in doc["task_runs"]] == [(4, "NOT RUN")]
    assert [(i["task_code"], i["action"]) for i in doc["interventions"]] == [("load_a", "RESET")]
    text = scene.main("history", "--pipeline_code", "repair", "--task_code", "load_a").stdout.splitlines()
    assert text[1] == tabbed(4, "NOT RUN", "MANUAL", 0, "-", "-", "-", "-", "-")
    assert text[2:4] == [
        "Interventions:",
        tabbed("PIPELINE_RUN_ID", "TASK", "ACTION", "FROM", "TO", "BY", "AT", "REASON"),
    ]
