"""A run created by the `ci-bot` token names ci-bot as its requester, and writes over the API change
runs as the CLI does (test_parity_every_operation compares every endpoint's document with its command's)."""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.engine.schema import tables as t

P = "/api/v1/projects/default"


def _cli(api, *args: str) -> dict:
    return api.cli(*args)


def test_a_run_created_by_ci_bot_names_it_in_audit_and_status(fresh_api) -> None:
    api = fresh_api
    created = api.post(f"{P}/pipelines/sales/runs", {"run_date": "2026-03-04"}, kind="ci-bot")
    assert created.status_code == 200, created.text
    doc = created.json()
    run_id = doc["run"]["pipeline_run_id"]
    assert (doc["status"], doc["run"]["started_by"], doc["run"]["run_date"]) == ("IN-PROGRESS", "ci-bot", "2026-03-04")
    with api.ctx.db.read() as conn:
        run = conn.execute(sa.select(t.aud_pipelines_run_log)).one()
        action = conn.execute(sa.select(t.aud_actions).where(t.aud_actions.c.command == "run")).one()
    assert (run.pipeline_run_id, run.started_by, run.trigger_kind, run.status) == (
        run_id,
        "ci-bot",
        "MANUAL",
        "IN-PROGRESS",
    )
    assert (action.actor, action.actor_kind, action.pipeline_run_id) == ("ci-bot", "HUMAN", run_id)
    audit = _cli(api, "audit", "--pipeline_code", "sales")
    assert [(a["actor"], a["command"]) for a in audit["actions"]] == [("ci-bot", "run")]
    status = _cli(api, "status", "--pipeline_code", "sales", "--run-id", str(run_id))
    assert status["run"]["started_by"] == "ci-bot"


def test_rerun_and_mark_over_the_api_change_the_run_as_the_cli_does(fresh_api) -> None:
    """A finished run's task run again from a request (its task process started by the API's
    process), then a task marked; each recorded with the token as the actor."""
    api = fresh_api
    run_id = api.post(f"{P}/pipelines/sales/runs", {}, kind="ci-bot").json()["run"]["pipeline_run_id"]
    finished = api.cli("run", "--pipeline_code", "sales", "--run-id", str(run_id))
    assert finished["status"] == "SUCCESS", finished
    rerun = api.post(f"{P}/pipelines/sales/runs/{run_id}/tasks/extract/rerun", {"reason": "vendor resent the file"})
    assert rerun.status_code == 200, rerun.text
    assert (rerun.json()["schema"], rerun.json()["task"]["status"]) == ("etl-craft/operation/1", "SUCCESS")
    marked = api.post(
        f"{P}/pipelines/sales/runs/{run_id}/mark", {"status": "FAILED", "reason": "bad data", "task_code": "load"}
    )
    assert marked.status_code == 200, marked.text
    assert [a.status for a in api.harness.attempts("extract")] == ["SUCCESS", "SUCCESS"]
    with api.ctx.db.read() as conn:
        interventions = conn.execute(
            sa.select(t.aud_run_interventions.c.action, t.aud_run_interventions.c.requested_by).order_by(
                t.aud_run_interventions.c.intervention_id
            )
        ).all()
        load_status = conn.execute(
            sa.select(t.aud_task_run_log.c.status)
            .join(t.cfg_tasks, t.cfg_tasks.c.task_id == t.aud_task_run_log.c.task_id)
            .where(t.cfg_tasks.c.task_code == "load", t.aud_task_run_log.c.pipeline_run_id == run_id)
        ).scalar_one()
    assert load_status == "FAILED"
    assert all(by == "operator-token" for _action, by in interventions) and interventions
