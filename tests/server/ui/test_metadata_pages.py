"""The metadata editor (developers), the audit page and the lineage page."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.server.ui.conftest import Ui, csrf

pytestmark = pytest.mark.sqlite
EDITOR = "/ui/pipelines/sales/tasks/extract/parameters"


def _retries(ui: Ui) -> list[tuple[str, str | None]]:
    p, k = t.cfg_task_parameters, t.cfg_tasks
    query = (
        sa.select(p.c.parameter_value, p.c.updated_by, p.c.created_by)
        .join(k, k.c.task_id == p.c.task_id)
        .where(k.c.task_code == "extract", p.c.parameter_name == "RETRIES", p.c.active_flag == "Y")
    )
    with ui.api.ctx.db.read() as conn:
        return [tuple(r) for r in conn.execute(query)]


def _changes(ui: Ui) -> list[sa.Row]:
    c = t.aud_metadata_changes
    with ui.api.ctx.db.read() as conn:
        return list(conn.execute(sa.select(c).where(c.c.table_name == "CFG_TASK_PARAMETERS").order_by(c.c.change_id)))


def test_the_editor_is_for_developers_only(ui: Ui) -> None:
    operator = ui.signed_in("operator")
    assert operator.get(EDITOR).status_code == 403
    assert "Edit the parameters" not in operator.get("/ui/pipelines/sales").text
    token = csrf(operator.get("/ui/pipelines").text)
    refused = operator.post(EDITOR, data={"csrf_token": token, "name": "RETRIES", "value": "2", "confirm": "yes"})
    assert refused.status_code == 403 and _retries(ui) == []
    developer = ui.signed_in("developer")
    assert 'href="/ui/pipelines/sales/tasks/extract/parameters"' in developer.get("/ui/pipelines/sales").text


def test_an_invalid_value_is_refused_with_validates_message_and_a_valid_one_saved_and_audited(ui: Ui) -> None:
    browser = ui.signed_in("developer")
    page = browser.get(EDITOR)
    assert page.status_code == 200 and "SCRIPT_NAME" in page.text
    before = len(_changes(ui))
    body = {"csrf_token": csrf(page.text), "name": "RETRIES", "value": "many", "confirm": "yes"}
    refused = browser.post(EDITOR, data=body)
    assert refused.status_code == 422 and "not saved: validate refused it" in refused.text
    assert re.search(r'<li class="finding">\[FAIL\] sales\.extract: [^<]*RETRIES', refused.text), refused.text
    assert _retries(ui) == [] and len(_changes(ui)) == before  # the trial was rolled back
    saved = browser.post(EDITOR, data={**body, "value": "2"})
    assert saved.status_code == 303 and "saved" in saved.headers["location"]
    assert _retries(ui) == [("2", None, "dev")]
    change = _changes(ui)[-1]
    assert (change.operation, change.actor, change.actor_kind, change.after_json["PARAMETER_VALUE"]) == (
        "INSERT",
        "dev",
        "HUMAN",
        "2",
    )
    again = browser.post(EDITOR, data={**body, "value": "3"})
    assert again.status_code == 303 and _retries(ui) == [("3", "dev", "dev")]
    exported = browser.get(f"{EDITOR}/RETRIES.sql")
    assert exported.status_code == 200 and "attachment" in exported.headers["content-disposition"]
    assert "UPDATE CFG_TASK_PARAMETERS SET PARAMETER_VALUE = '3'" in exported.text
    assert "PIPELINE_CODE = 'sales'" in exported.text and "TASK_CODE = 'extract'" in exported.text
    audit = browser.get("/ui/audit", params={"actor": "dev"})
    assert audit.status_code == 200 and "metadata edit" in audit.text
    assert audit.text.count('<tr class="change">') == 2 and "CFG_TASK_PARAMETERS" in audit.text


def test_a_sensitive_value_is_never_exported(ui: Ui) -> None:
    browser = ui.signed_in("developer")
    page = browser.get("/ui/pipelines/sales/tasks/load/parameters")
    assert "s3cr3t-value" not in page.text and "API_TOKEN" in page.text
    refused = browser.get("/ui/pipelines/sales/tasks/load/parameters/API_TOKEN.sql")
    assert refused.status_code == 400 and "s3cr3t-value" not in refused.text


def test_the_audit_page_filters_by_pipeline_and_refuses_a_bad_date(ui: Ui) -> None:
    browser = ui.signed_in("viewer")
    assert browser.get("/ui/audit", params={"pipeline": "sales"}).status_code == 200
    bad = browser.get("/ui/audit", params={"since": "yesterday"})
    assert bad.status_code == 400 and "yesterday" in bad.text
    assert browser.get("/ui/audit", params={"pipeline": "nosuch"}).status_code == 404


def test_the_lineage_page_without_a_warehouse_is_a_refusal_naming_it(ui: Ui) -> None:
    browser = ui.signed_in("viewer")
    page = browser.get("/ui/lineage")
    assert page.status_code == 409 and "Warehouse" in page.text and "<main" in page.text
