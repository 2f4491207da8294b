"""`etl-craft purge` on both Engine DBs: old history goes, oldest first, in batches, and every row a
retained run's consumption, gate decisions, interventions or standing flags reach back to stays."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from etl_craft.core.clock import utc_now
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t
from tests.fixtures.cli import run_cli
from tests.fixtures.project import Project
from tests.fixtures.seed import _insert

NOW = utc_now()
OLD = NOW - timedelta(days=500)
RECENT = NOW - timedelta(days=10)
AUD_TABLES = (
    t.aud_pipelines_run_log,
    t.aud_task_run_log,
    t.aud_task_attempts,
    t.aud_dependency_consumption,
    t.aud_gate_decisions,
    t.aud_run_interventions,
    t.aud_business_rules_run_log,
    t.aud_business_rules_results,
    t.aud_gate_waits,
    t.aud_alert_deliveries,
)


def _run(
    conn: sa.Connection, pipeline: int, task: int, started: object, attempts: tuple[object, ...] = ()
) -> tuple[int, int]:
    """An ended run with one task run, and attempts that ended at the given times."""
    run = _insert(
        conn, t.aud_pipelines_run_log, pipeline_id=pipeline, status="SUCCESS", start_date=started, end_date=started
    )
    task_run = _insert(
        conn, t.aud_task_run_log, task_id=task, pipeline_run_id=run, status="SUCCESS", start_date=started
    )
    for number, ended in enumerate(attempts, start=1):
        _insert(
            conn, t.aud_task_attempts, task_run_id=task_run, attempt_number=number, status="SUCCESS", ended_at=ended
        )
    assert run is not None and task_run is not None
    return run, task_run


def _build(db: EngineDb) -> dict[str, int]:
    """Two pipelines, DOWN depending on UP, with runs on both sides of Run_history_days (400)."""
    ids: dict[str, int] = {}
    with db.write() as conn:
        up = _insert(conn, t.cfg_pipelines, pipeline_code="up", pipeline_name="Up", refresh_type="FULL")
        down = _insert(conn, t.cfg_pipelines, pipeline_code="down", pipeline_name="Down", refresh_type="FULL")
        u1 = _insert(conn, t.cfg_tasks, task_code="u1", task_type="ETL", pipeline_id=up, handler="PYTHON")
        d1 = _insert(conn, t.cfg_tasks, task_code="d1", task_type="ETL", pipeline_id=down, handler="PYTHON")
        dep = _insert(
            conn, t.cfg_pipeline_dependency, pipeline_id=down, depends_on_pipeline_id=up, dependency_type="SUCCESS"
        )
        rule = _insert(
            conn, t.cfg_business_rules, business_rule_name="r", pipeline_id=up, task_id=u1,
            business_rule_sql="SELECT 1", business_rule_type="REJECT", business_rule_key_column="id",
            target_table="s.t", sequence_number=1,
        )  # fmt: skip
        # UP: four old runs, each in a different relation to what stays, and the newest (recent) one.
        ids["up_free"], _ = _run(conn, up, u1, OLD, (OLD,))  # consumed only by a run that goes too
        ids["up_consumed"], _ = _run(conn, up, u1, OLD + timedelta(days=1))  # a retained run consumed it
        ids["up_selected"], ids["up_selected_task_run"] = _run(conn, up, u1, OLD + timedelta(days=2))
        ids["up_intervened"], _ = _run(conn, up, u1, OLD + timedelta(days=3))
        ids["up_flagged"], flagged_task_run = _run(conn, up, u1, OLD + timedelta(days=4))
        ids["up_new"], _ = _run(conn, up, u1, RECENT, (OLD, RECENT))
        _insert(
            conn, t.aud_run_interventions, pipeline_id=up, pipeline_run_id=ids["up_intervened"], action="MARK",
            reason="fixed by hand", requested_by="ada",
        )  # fmt: skip
        rule_run = _insert(
            conn, t.aud_business_rules_run_log, business_rule_id=rule, task_run_id=flagged_task_run, status="SUCCESS"
        )
        _insert(
            conn, t.aud_business_rules_results, business_rule_run_id=rule_run, business_rule_id=rule,
            business_rule_key="7", target_table="s.t", status="REJECT",
        )  # fmt: skip
        # DOWN: an old run that consumed up_free (goes, and frees it), and a recent one that reaches
        # back past the retention to up_consumed (consumption) and up_selected (a gate decision).
        ids["down_old"], _ = _run(conn, down, d1, OLD + timedelta(hours=1))
        _insert(
            conn, t.aud_dependency_consumption, pipeline_dependency_id=dep, pipeline_id=down,
            pipeline_run_id=ids["down_old"], depends_on_pipeline_id=up, consumed_pipeline_run_id=ids["up_free"],
            consumed_at=OLD + timedelta(hours=1),
        )  # fmt: skip
        _insert(
            conn, t.aud_gate_decisions, pipeline_run_id=ids["down_old"], pipeline_dependency_id=dep,
            selected_pipeline_run_id=ids["up_free"], result="SATISFIED", reason="r", decided_at=OLD,
        )  # fmt: skip
        _insert(conn, t.aud_gate_waits, pipeline_run_id=ids["down_old"], first_check_at=OLD, looks=1, wait_until=OLD)
        ids["down_new"], _ = _run(conn, down, d1, RECENT, (RECENT,))
        _insert(
            conn, t.aud_dependency_consumption, pipeline_dependency_id=dep, pipeline_id=down,
            pipeline_run_id=ids["down_new"], depends_on_pipeline_id=up, consumed_pipeline_run_id=ids["up_consumed"],
            consumed_at=RECENT,
        )  # fmt: skip
        _insert(
            conn, t.aud_gate_decisions, pipeline_run_id=ids["down_new"], pipeline_dependency_id=dep,
            selected_pipeline_run_id=ids["up_new"], selected_task_run_id=ids["up_selected_task_run"],
            result="SATISFIED", reason="r", decided_at=RECENT,
        )  # fmt: skip
        ids["action"] = _insert(
            conn, t.aud_actions, actor="ada", actor_kind="HUMAN", host="h", command="run", arguments={},
            outcome="REQUESTED", pipeline_run_id=ids["up_free"], started_at=OLD, ended_at=OLD,
        )  # fmt: skip
    return ids


def _counts(db: EngineDb) -> dict[str, int]:
    with db.read() as conn:
        return {
            table.name.upper(): conn.execute(sa.select(sa.func.count()).select_from(table)).scalar_one()
            for table in AUD_TABLES
        }


def test_purge_keeps_what_retained_runs_reach_back_to(project: Project) -> None:
    db = project.open_db()
    ids = _build(db)
    before = _counts(db)

    dry = run_cli("purge", "--dry-run", "--format", "json", env=project.env())
    assert dry.returncode == 0, dry
    dry_doc = dry.json()
    assert dry_doc["schema"] == "etl-craft/purge/1" and dry_doc["dry_run"] is True and dry_doc["action_id"] is None
    expected = {
        "AUD_TASK_ATTEMPTS": 2,  # up_free's old attempt and up_new's old one (its recent one stays)
        "AUD_DEPENDENCY_CONSUMPTION": 1,  # down_old's, older than Consumption_days
        "AUD_RUN_INTERVENTIONS": 0,  # Interventions_days: never
        "AUD_PIPELINES_RUN_LOG": 2,  # down_old, then up_free (down_old's decision named it)
        "AUD_GATE_DECISIONS": 1,
        "AUD_GATE_WAITS": 1,
        "AUD_ALERT_DELIVERIES": 0,
        "AUD_BUSINESS_RULES_RESULTS": 0,
        "AUD_BUSINESS_RULES_RUN_LOG": 0,
        "AUD_TASK_RUN_LOG": 2,
        "AUD_UI_SESSIONS": 0,
    }
    assert dry_doc["removed"] == expected
    assert _counts(db) == before  # the dry run removed nothing
    with db.read() as conn:
        assert (
            conn.execute(
                sa.select(sa.func.count()).select_from(t.aud_actions).where(t.aud_actions.c.command == "purge")
            ).scalar_one()
            == 0
        )

    done = run_cli("purge", "--format", "json", env=project.env(ETL_CRAFT_ACTOR="ops"))
    assert done.returncode == 0, done
    doc = done.json()
    assert doc["dry_run"] is False and doc["removed"] == expected
    after = _counts(db)
    assert after == {name: before[name] - expected.get(name, 0) for name in before}
    with db.read() as conn:
        runs = set(conn.execute(sa.select(t.aud_pipelines_run_log.c.pipeline_run_id)).scalars())
        assert runs == {
            ids[k] for k in ("up_consumed", "up_selected", "up_intervened", "up_flagged", "up_new", "down_new")
        }
        attempts = conn.execute(sa.select(t.aud_task_attempts.c.ended_at)).scalars().all()
        assert len(attempts) == 2 and all(ended > NOW - timedelta(days=90) for ended in attempts)
        # The action that named up_free stays, unlinked; the purge's own action records its counts.
        old_action = conn.execute(sa.select(t.aud_actions).where(t.aud_actions.c.action_id == ids["action"])).one()
        assert old_action.pipeline_run_id is None and old_action.command == "run"
        purge_action = conn.execute(sa.select(t.aud_actions).where(t.aud_actions.c.command == "purge")).one()
    assert purge_action.action_id == doc["action_id"]
    assert (purge_action.actor, purge_action.outcome, purge_action.exit_code) == ("ops", "COMPLETED", 0)
    assert purge_action.arguments["removed"] == expected and purge_action.arguments["dry_run"] is False
    assert purge_action.arguments["log_files"] == 0 and "archive_to" not in purge_action.arguments

    again = run_cli("purge", "--format", "json", env=project.env())
    assert again.returncode == 0, again
    assert sum(again.json()["removed"].values()) == 0


def test_retention_days_come_from_the_section(project: Project) -> None:
    """Run_history_days: 1000 keeps every run this test builds; the attempt and consumption days still apply."""
    project.extra_sections = "Retention:\n  Run_history_days: 1000\n  Consumption_days: 1000\n  Attempt_log_days: 600\n"
    project.write_config()
    db = project.open_db()
    _build(db)
    before = _counts(db)
    done = run_cli("purge", "--format", "json", env=project.env())
    assert done.returncode == 0, done
    assert sum(done.json()["removed"].values()) == 0
    assert _counts(db) == before


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("  Run_history_days: 0\n", "a whole number from 1 to 36500"),
        ("  Daily_at: 25:00\n", "a time of day HH:MM"),
        ("  Keep_forever: true\n", "Keep_forever"),
    ],
)
def test_retention_settings_are_checked(project: Project, body: str, message: str) -> None:
    project.extra_sections = "Retention:\n" + body
    project.write_config()
    refused = run_cli("purge", "--dry-run", env=project.env())
    assert refused.returncode == 3, refused
    assert message in refused.stderr
