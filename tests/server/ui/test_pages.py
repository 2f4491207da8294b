"""The pages, signed in through the UI: what each role sees, and every action recorded with the
user as its actor (Engine DB rows, not only the page)."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.server.ui.conftest import Ui, csrf

pytestmark = pytest.mark.sqlite


def _rows(ui: Ui, query: sa.Select) -> list[sa.Row]:  # type: ignore[type-arg]
    with ui.api.ctx.db.read() as conn:
        return list(conn.execute(query))


def _open_pause(ui: Ui) -> list[sa.Row]:
    p = t.aud_pipeline_pauses
    return _rows(ui, sa.select(p.c.paused_by, p.c.reason, p.c.resumed_by).order_by(p.c.pipeline_pause_id))


def test_the_pipelines_page_lists_the_pipeline_and_offers_pause_only_to_operators(ui: Ui) -> None:
    viewer = ui.signed_in("viewer").get("/ui/pipelines")
    assert viewer.status_code == 200
    assert '<a href="/ui/pipelines/sales">sales</a>' in viewer.text and "never ran" in viewer.text
    assert "/pause" not in viewer.text and 'name="reason"' not in viewer.text
    operator = ui.signed_in("operator").get("/ui/pipelines")
    assert 'action="/ui/pipelines/sales/pause"' in operator.text
    filtered = ui.signed_in("viewer").get("/ui/pipelines", params={"text": "nothing-like-it"})
    assert "No pipeline matches." in filtered.text and "/ui/pipelines/sales" not in filtered.text
    refused = ui.signed_in("viewer").get("/ui/pipelines", params={"status": "BOGUS"})
    assert refused.status_code == 400 and "BOGUS" in refused.text


def test_a_viewer_posting_an_action_is_refused_and_nothing_changes(ui: Ui) -> None:
    browser = ui.signed_in("viewer")
    token = csrf(browser.get("/ui/pipelines").text)
    body = {"csrf_token": token, "reason": "no", "confirm": "yes"}
    for path in ("/ui/pipelines/sales/pause", "/ui/pipelines/sales/runs", "/ui/pipelines/sales/runs/1/cancel"):
        response = browser.post(path, data=body)
        assert response.status_code == 403, (path, response.text)
        assert "role viewer" in response.text and "operator or above" in response.text
    assert _open_pause(ui) == []


def test_an_operator_pauses_and_resumes_with_a_confirmed_reason(ui: Ui) -> None:
    browser = ui.signed_in("operator")
    token = csrf(browser.get("/ui/pipelines").text)
    unconfirmed = browser.post("/ui/pipelines/sales/pause", data={"csrf_token": token, "reason": "vendor late"})
    assert unconfirmed.status_code == 422 and _open_pause(ui) == []
    no_csrf = browser.post("/ui/pipelines/sales/pause", data={"reason": "vendor late", "confirm": "yes"})
    assert no_csrf.status_code == 403 and _open_pause(ui) == []
    paused = browser.post(
        "/ui/pipelines/sales/pause", data={"csrf_token": token, "reason": "vendor late", "confirm": "yes"}
    )
    assert paused.status_code == 303 and paused.headers["location"].startswith("/ui/pipelines?done=")
    assert _open_pause(ui) == [("otto", "vendor late", None)]
    page = browser.get(paused.headers["location"])
    assert "paused by otto: vendor late" in page.text and 'action="/ui/pipelines/sales/resume"' in page.text
    resumed = browser.post(
        "/ui/pipelines/sales/resume", data={"csrf_token": token, "reason": "it came", "confirm": "yes"}
    )
    assert resumed.status_code == 303
    assert _open_pause(ui) == [("otto", "vendor late", "otto")]
    actions = _rows(
        ui, sa.select(t.aud_actions.c.actor, t.aud_actions.c.command).where(t.aud_actions.c.actor == "otto")
    )
    assert [tuple(a) for a in actions] == [("otto", "pause"), ("otto", "resume")]


def test_run_now_then_the_grid_the_dag_and_the_run_page_show_it(ui: Ui) -> None:
    browser = ui.signed_in("operator")
    page = browser.get("/ui/pipelines/sales")
    assert page.status_code == 200 and "<svg" in page.text and 'class="graph-scroll"' in page.text
    created = browser.post("/ui/pipelines/sales/runs", data={"csrf_token": csrf(page.text), "confirm": "yes"})
    assert created.status_code == 303, created.text
    runs = _rows(ui, sa.select(t.aud_pipelines_run_log).order_by(t.aud_pipelines_run_log.c.pipeline_run_id.desc()))
    run = runs[0]
    assert (run.status, run.trigger_kind, run.started_by, run.started_by_kind) == (
        "IN-PROGRESS",
        "MANUAL",
        "otto",
        "HUMAN",
    )
    finished = ui.api.cli("run", "--pipeline_code", "sales", "--run-id", str(run.pipeline_run_id))
    assert finished["status"] == "SUCCESS"
    grid = browser.get("/ui/pipelines/sales/grid", params={"runs": 5})
    assert grid.status_code == 200 and "<html" not in grid.text
    cells = re.findall(r'data-status="([^"]+)" data-run="(\d+)" data-task="(\w+)"', grid.text)
    assert (("SUCCESS", str(run.pipeline_run_id), "extract") in cells) and (
        ("SUCCESS", str(run.pipeline_run_id), "load") in cells
    )
    page = browser.get("/ui/pipelines/sales", params={"run": run.pipeline_run_id})
    assert page.text.count('data-state="SUCCESS"') == 2 and ">SUCCESS</text>" in page.text  # the edge's label
    filtered = browser.get("/ui/pipelines/sales/grid", params={"kind": "BACKFILL"})
    assert "data-status" not in filtered.text
    detail = browser.get(f"/ui/pipelines/sales/runs/{run.pipeline_run_id}", params={"task": "load"})
    assert detail.status_code == 200 and "Why load is" in detail.text and "Rerun load" in detail.text
    attempt_id = re.search(r'href="/ui/attempts/(\d+)"', detail.text).group(1)  # type: ignore[union-attr]
    attempt = browser.get(f"/ui/attempts/{attempt_id}")
    assert attempt.status_code == 200 and 'role="log"' in attempt.text
    chunk = browser.get(f"/ui/attempts/{attempt_id}/log", params={"offset": 0}).json()
    assert chunk["finished"] is True and chunk["status"] == "SUCCESS"
    assert chunk["next_offset"] == len(chunk["text"].encode())
    assert browser.get(f"/ui/attempts/{attempt_id}/log", params={"offset": chunk["next_offset"]}).json()["text"] == ""


def test_cancel_from_the_run_page_records_the_user(ui: Ui) -> None:
    browser = ui.signed_in("operator")
    page = browser.get("/ui/pipelines/sales")
    browser.post("/ui/pipelines/sales/runs", data={"csrf_token": csrf(page.text), "confirm": "yes"})
    runs = t.aud_pipelines_run_log
    run_id = _rows(ui, sa.select(sa.func.max(runs.c.pipeline_run_id)))[0][0]
    path = f"/ui/pipelines/sales/runs/{run_id}"
    view = browser.get(path)
    assert f"Cancel run {run_id}" in view.text
    cancelled = browser.post(
        f"{path}/cancel", data={"csrf_token": csrf(view.text), "reason": "wrong day", "confirm": "yes"}
    )
    assert cancelled.status_code == 303 and cancelled.headers["location"].startswith(path + "?done=")
    row = _rows(ui, sa.select(runs).where(runs.c.pipeline_run_id == run_id))[0]
    assert (row.status, row.ended_by, row.ended_by_kind) == ("CANCELLED", "otto", "HUMAN")
    i = t.aud_run_interventions
    intervention = _rows(ui, sa.select(i.c.action, i.c.reason, i.c.requested_by).where(i.c.pipeline_run_id == run_id))
    assert [tuple(r) for r in intervention] == [("CANCEL", "wrong day", "otto")]
    shown = browser.get(cancelled.headers["location"])
    assert "CANCELLED" in shown.text


def test_unknown_things_are_404_pages(ui: Ui) -> None:
    browser = ui.signed_in("viewer")
    missing = browser.get("/ui/pipelines/nosuch")
    assert missing.status_code == 404 and "nosuch" in missing.text and "<main" in missing.text
    assert browser.get("/ui/attempts/999999").status_code == 404
    assert browser.get("/ui/pipelines/sales/runs/999999").status_code == 404
