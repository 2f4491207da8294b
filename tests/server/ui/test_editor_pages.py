"""The metadata editor's dependency page: add and retire a task dependency, judged by validate in a
rolled-back transaction, role-gated, CSRF-protected and recorded in AUD_ACTIONS and AUD_METADATA_CHANGES."""

from __future__ import annotations

import dataclasses
import re

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.fixtures.harness import TaskSpec, pipeline_sql
from tests.server.ui.conftest import Ui, csrf

pytestmark = pytest.mark.sqlite
PAGE = "/ui/pipelines/sales/dependencies"


def _edges(ui: Ui) -> list[tuple[str, str, str, str, str | None, str | None]]:
    d, down, up = t.cfg_task_dependency, t.cfg_tasks.alias("down"), t.cfg_tasks.alias("up")
    query = (
        sa.select(
            down.c.task_code, up.c.task_code, d.c.dependency_type, d.c.active_flag, d.c.created_by, d.c.updated_by
        )
        .join(down, down.c.task_id == d.c.task_id)
        .join(up, up.c.task_id == d.c.depends_on_task_id)
        .order_by(d.c.task_dependency_id)
    )
    with ui.api.ctx.db.read() as conn:
        return [tuple(r) for r in conn.execute(query)]


def _audit(ui: Ui) -> tuple[list[sa.Row], list[sa.Row]]:
    a, c = t.aud_actions, t.aud_metadata_changes
    with ui.api.ctx.db.read() as conn:
        actions = list(conn.execute(sa.select(a).where(a.c.command == "metadata edit").order_by(a.c.action_id)))
        of_ui = sa.select(c).where(c.c.table_name == "CFG_TASK_DEPENDENCY", c.c.migration.is_(None))
        changes = list(conn.execute(of_ui.order_by(c.c.change_id)))  # not the project migration's
    return actions, changes


def _edge_id(page: str) -> str:
    return re.search(r'action="/ui/pipelines/sales/dependencies/(\d+)/retire"', page).group(1)  # type: ignore[union-attr]


def test_the_dependency_editor_is_for_developers_and_needs_the_form_token(ui: Ui) -> None:
    before = _edges(ui)
    operator = ui.signed_in("operator")
    assert operator.get(PAGE).status_code == 403
    assert "Edit the task dependencies" not in operator.get("/ui/pipelines/sales").text
    body = {"csrf_token": csrf(operator.get("/ui/pipelines").text), "task": "extract", "upstream": "load"}
    assert operator.post(PAGE, data={**body, "dependency_type": "SUCCESS", "confirm": "yes"}).status_code == 403
    developer = ui.signed_in("developer")
    assert f'href="{PAGE}"' in developer.get("/ui/pipelines/sales").text
    page = developer.get(PAGE).text
    no_token = {"task": "extract", "upstream": "load", "dependency_type": "SUCCESS", "confirm": "yes"}
    assert developer.post(PAGE, data=no_token).status_code == 403
    assert developer.post(f"{PAGE}/{_edge_id(page)}/retire", data={"confirm": "yes"}).status_code == 403
    assert _edges(ui) == before and _audit(ui) == ([], [])


def test_a_cycle_is_refused_by_validate_and_a_retire_then_an_add_are_saved_and_audited(ui: Ui) -> None:
    browser = ui.signed_in("developer")
    page = browser.get(PAGE)
    MIGRATOR = _edges(ui)[0][4]  # who applied the project migration (user@host)
    assert (
        MIGRATOR
        and page.status_code == 200
        and '<th scope="row">load</th><td>extract</td><td>SUCCESS</td>' in page.text
    )
    token = csrf(page.text)
    cycle = {"csrf_token": token, "task": "extract", "upstream": "load", "dependency_type": "SUCCESS", "confirm": "yes"}
    refused = browser.post(PAGE, data=cycle)
    assert refused.status_code == 422 and "not saved, validate refused it" in refused.text
    assert re.search(r'<li class="finding">\[FAIL\] [^<]*cycle', refused.text, re.IGNORECASE), refused.text
    assert _edges(ui) == [("load", "extract", "SUCCESS", "Y", MIGRATOR, None)]  # the trial was rolled back
    assert _audit(ui) == ([], [])

    retired = browser.post(f"{PAGE}/{_edge_id(page.text)}/retire", data={"csrf_token": token, "confirm": "yes"})
    assert retired.status_code == 303 and "retired" in retired.headers["location"]
    added = browser.post(PAGE, data=cycle)  # without load -> extract the same edge is no longer a cycle
    assert added.status_code == 303 and "saved" in added.headers["location"], re.findall(
        r"<li class=\"finding\">[^<]*", added.text
    )
    assert _edges(ui) == [
        ("load", "extract", "SUCCESS", "N", MIGRATOR, "dev"),
        ("extract", "load", "SUCCESS", "Y", "dev", None),
    ]
    actions, changes = _audit(ui)
    assert [(a.actor, a.actor_kind, a.outcome) for a in actions] == [("dev", "HUMAN", "REQUESTED")] * 2, actions
    assert [a.arguments.get("depends_on", "retired") for a in actions] == [
        "retired",
        "load",
    ]
    assert [
        (c.operation, c.actor, c.before_json and c.before_json["ACTIVE_FLAG"], c.after_json["ACTIVE_FLAG"])
        for c in changes
    ] == [
        ("UPDATE", "dev", "Y", "N"),
        ("INSERT", "dev", None, "Y"),
    ]
    shown = browser.get(retired.headers["location"]).text
    assert "dependency" in shown and '<th scope="row">extract</th><td>load</td>' in shown


def test_an_unknown_task_or_type_or_dependency_is_refused_naming_it(ui: Ui) -> None:
    browser = ui.signed_in("developer")
    token = csrf(browser.get(PAGE).text)
    body = {"csrf_token": token, "task": "extrakt", "upstream": "load", "dependency_type": "SUCCESS", "confirm": "yes"}
    unknown = browser.post(PAGE, data=body)
    assert unknown.status_code == 404 and "extrakt" in unknown.text and "extract" in unknown.text
    bad_type = browser.post(PAGE, data={**body, "task": "extract", "dependency_type": "SOMETIMES"})
    assert bad_type.status_code == 400 and "SOMETIMES" in bad_type.text and "HAS_DATA" in bad_type.text
    missing = browser.post(f"{PAGE}/999999/retire", data={"csrf_token": token, "confirm": "yes"})
    assert missing.status_code == 404 and "999999" in missing.text


SETTINGS = "/ui/pipelines/sales/settings"


def _pipeline(ui: Ui) -> tuple[object, ...]:
    p = t.cfg_pipelines
    columns = (p.c.pipeline_name, p.c.run_schedule, p.c.schedule_timezone, p.c.sla_in_hours, p.c.updated_by)
    with ui.api.ctx.db.read() as conn:
        return tuple(conn.execute(sa.select(*columns).where(p.c.pipeline_code == "sales")).one())


def test_pipeline_settings_a_bad_schedule_is_refused_and_a_good_one_saved_and_audited(ui: Ui) -> None:
    operator = ui.signed_in("operator")
    assert operator.get(SETTINGS).status_code == 403
    before = _pipeline(ui)
    browser = ui.signed_in("developer")
    page = browser.get(SETTINGS)
    assert page.status_code == 200 and f'value="{before[0]}"' in page.text
    body = {
        "csrf_token": csrf(page.text),
        "pipeline_name": "Sales daily",
        "run_schedule": "every tuesday",
        "schedule_timezone": "Europe/Paris",
        "sla_in_hours": "1.5",
        "confirm": "yes",
    }
    assert browser.post(SETTINGS, data={k: v for k, v in body.items() if k != "csrf_token"}).status_code == 403
    refused = browser.post(SETTINGS, data=body)
    assert refused.status_code == 422 and "not saved: validate refused it" in refused.text
    assert re.search(r'<li class="finding">\[FAIL\] sales[^<]*RUN_SCHEDULE', refused.text), refused.text
    assert 'value="every tuesday"' in refused.text  # what was typed stays in the form
    assert _pipeline(ui) == before
    bad_sla = browser.post(SETTINGS, data={**body, "run_schedule": "0 6 * * *", "sla_in_hours": "soon"})
    assert (
        bad_sla.status_code == 400
        and "soon" in bad_sla.text
        and "a number of hours" in bad_sla.text
        and _pipeline(ui) == before
    )
    saved = browser.post(SETTINGS, data={**body, "run_schedule": "0 6 * * *"})
    assert saved.status_code == 303 and "settings+saved" in saved.headers["location"]
    name, schedule, zone, sla, updated_by = _pipeline(ui)
    assert (name, schedule, zone, float(sla), updated_by) == ("Sales daily", "0 6 * * *", "Europe/Paris", 1.5, "dev")
    a, c = t.aud_actions, t.aud_metadata_changes
    with ui.api.ctx.db.read() as conn:
        action = conn.execute(sa.select(a).order_by(a.c.action_id.desc()).limit(1)).one()
        change = conn.execute(
            sa.select(c).where(c.c.table_name == "CFG_PIPELINES").order_by(c.c.change_id.desc()).limit(1)
        ).one()
    assert (action.command, action.actor, action.arguments["pipeline_code"]) == ("metadata edit", "dev", "sales")
    assert (change.operation, change.actor, change.after_json["RUN_SCHEDULE"], change.before_json["RUN_SCHEDULE"]) == (
        "UPDATE",
        "dev",
        "0 6 * * *",
        before[1],
    )


RULES = "/ui/pipelines/quality/tasks/checks/rules"
FIRST_RULE = (
    "INSERT INTO CFG_BUSINESS_RULES (BUSINESS_RULE_NAME, PIPELINE_ID, TASK_ID, BUSINESS_RULE_SQL,"
    " BUSINESS_RULE_TYPE, BUSINESS_RULE_KEY_COLUMN, TARGET_TABLE, SEQUENCE_NUMBER)\n"
    "SELECT 'positive', p.PIPELINE_ID, t.TASK_ID, 'SELECT 1 WHERE t.amount < 0', 'REJECT', 'id', 'mart.orders', 1\n"
    "FROM CFG_PIPELINES p JOIN CFG_TASKS t ON t.PIPELINE_ID = p.PIPELINE_ID AND t.ACTIVE_FLAG = 'Y'\n"
    "WHERE p.PIPELINE_CODE = 'quality' AND t.TASK_CODE = 'checks' AND p.ACTIVE_FLAG = 'Y';\n"
)


def _rules(ui: Ui) -> list[tuple[object, ...]]:
    r = t.cfg_business_rules
    columns = (r.c.business_rule_name, r.c.business_rule_type, r.c.active_flag, r.c.created_by, r.c.updated_by)
    with ui.api.ctx.db.read() as conn:
        return [tuple(row) for row in conn.execute(sa.select(*columns).order_by(r.c.business_rule_id))]


def test_business_rules_a_bad_rule_or_the_last_retire_is_refused_and_good_changes_saved_and_audited(ui: Ui) -> None:
    project = ui.api.project  # BUSINESS_RULES tasks need a Warehouse section; a DuckDB file is enough for validate
    project.extra_sections = "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n  Table_format: native\n"
    project.write_config()
    root = project.root
    sql = pipeline_sql("quality", [TaskSpec("checks", handler="BUSINESS_RULES")], []) + FIRST_RULE
    (root / "migrations" / "0002_quality.sql").write_text(sql)
    assert ui.api.harness.cli("migrate").returncode == 0
    migrator = _rules(ui)[0][3]
    with_warehouse = Ui(dataclasses.replace(ui.api, ctx=dataclasses.replace(ui.api.ctx, config=project.load())))
    assert with_warehouse.signed_in("operator").get(RULES).status_code == 403
    browser = with_warehouse.signed_in("developer")
    assert f'href="{RULES}"' in browser.get("/ui/pipelines/quality/tasks/checks/parameters").text
    page = browser.get(RULES)
    assert page.status_code == 200 and '<th scope="row">positive</th>' in page.text
    token = csrf(page.text)
    rule_id = re.search(r'/rules/(\d+)/retire"', page.text).group(1)  # type: ignore[union-attr]
    last = browser.post(f"{RULES}/{rule_id}/retire", data={"csrf_token": token, "confirm": "yes"})
    assert last.status_code == 422 and re.search(
        r'<li class="finding">\[FAIL\] quality\.checks[^<]*no active rule', last.text
    )
    body = {
        "csrf_token": token,
        "name": "no_delete",
        "sql": "DELETE FROM mart.orders",
        "rule_type": "REJECT",
        "key_column": "id",
        "target_table": "mart.orders",
        "sequence_number": "2",
        "confirm": "yes",
    }
    refused = browser.post(RULES, data=body)
    assert (
        refused.status_code == 422
        and "not a query (DELETE)" in refused.text
        and "DELETE FROM mart.orders" in refused.text
    )
    assert _rules(ui) == [("positive", "REJECT", "Y", migrator, None)]
    added = browser.post(
        RULES, data={**body, "name": "has_id", "sql": "SELECT 1 WHERE t.id IS NULL", "rule_type": "REPORT"}
    )
    assert added.status_code == 303 and "saved" in added.headers["location"], re.findall(
        r"<li class=\"finding\">[^<]*", added.text
    )
    retired = browser.post(f"{RULES}/{rule_id}/retire", data={"csrf_token": token, "confirm": "yes"})
    assert retired.status_code == 303 and "retired" in retired.headers["location"]
    assert _rules(ui) == [("positive", "REJECT", "N", migrator, "dev"), ("has_id", "REPORT", "Y", "dev", None)]
    a, c = t.aud_actions, t.aud_metadata_changes
    with ui.api.ctx.db.read() as conn:
        actions = conn.execute(sa.select(a.c.actor, a.c.arguments).where(a.c.command == "metadata edit")).all()
        changes = conn.execute(
            sa.select(c.c.operation, c.c.actor).where(c.c.table_name == "CFG_BUSINESS_RULES", c.c.migration.is_(None))
        ).all()
    assert [(actor, sorted(args)) for actor, args in actions if args.get("pipeline_code") == "quality"] == [
        ("dev", ["business_rule_id", "pipeline_code", "task_code"]),
        ("dev", ["pipeline_code", "retired_business_rule_id", "task_code"]),
    ]
    assert [tuple(row) for row in changes] == [("INSERT", "dev"), ("UPDATE", "dev")]
    assert browser.post(RULES, data={**body, "rule_type": "SOMETIMES"}).status_code == 400


TASKS = "/ui/pipelines/sales/tasks"


def _tasks(ui: Ui) -> list[tuple[object, ...]]:
    k, p = t.cfg_tasks, t.cfg_pipelines
    query = (
        sa.select(k.c.task_code, k.c.handler, k.c.active_flag, k.c.created_by, k.c.updated_by)
        .join(p, p.c.pipeline_id == k.c.pipeline_id)
        .where(p.c.pipeline_code == "sales")
        .order_by(k.c.task_id)
    )
    with ui.api.ctx.db.read() as conn:
        return [tuple(r) for r in conn.execute(query)]


def test_tasks_a_task_without_its_parameters_or_one_others_wait_on_is_refused_and_good_changes_saved(ui: Ui) -> None:
    assert ui.signed_in("operator").get(TASKS).status_code == 403
    before = _tasks(ui)
    browser = ui.signed_in("developer")
    page = browser.get(TASKS)
    assert page.status_code == 200 and f'action="{TASKS}/load/retire"' in page.text
    token = csrf(page.text)
    body = {"csrf_token": token, "code": "publish", "task_type": "ETL", "handler": "PYTHON", "confirm": "yes"}
    refused = browser.post(TASKS, data=body)  # a PYTHON task needs SCRIPT_NAME
    assert refused.status_code == 422 and "not saved, validate refused it" in refused.text
    assert re.search(r'<li class="finding">\[FAIL\] sales\.publish[^<]*SCRIPT_NAME', refused.text), refused.text
    assert browser.post(TASKS, data={**body, "parameters": "SCRIPT_NAME"}).status_code == 400  # not NAME=VALUE
    assert browser.post(TASKS, data={**body, "handler": "PERL"}).status_code == 400
    assert _tasks(ui) == before
    waited_on = [row[0] for row in before if row[2] == "Y"][-1]  # `load`: extract waits on it (see above)
    kept = browser.post(f"{TASKS}/{waited_on}/retire", data={"csrf_token": token, "confirm": "yes"})
    assert kept.status_code == 422 and re.search(r'<li class="finding">\[FAIL\] sales\.extract[^<]*load', kept.text)
    added = browser.post(TASKS, data={**body, "parameters": "SCRIPT_NAME=task.py\nINPUT_PARAMS={}\n"})
    assert added.status_code == 303 and "added" in added.headers["location"], re.findall(r"\[FAIL\][^<]*", added.text)
    retired = browser.post(f"{TASKS}/publish/retire", data={"csrf_token": token, "confirm": "yes"})
    assert retired.status_code == 303 and "retired" in retired.headers["location"]
    assert _tasks(ui) == [*before, ("publish", "PYTHON", "N", "dev", "dev")]
    p, c = t.cfg_task_parameters, t.aud_metadata_changes
    with ui.api.ctx.db.read() as conn:
        params = conn.execute(
            sa.select(p.c.parameter_name, p.c.parameter_value, p.c.created_by)
            .join(t.cfg_tasks, t.cfg_tasks.c.task_id == p.c.task_id)
            .where(t.cfg_tasks.c.task_code == "publish")
            .order_by(p.c.parameter_name)
        ).all()
        changes = conn.execute(
            sa.select(c.c.table_name, c.c.operation)
            .where(c.c.actor == "dev", c.c.table_name.in_(["CFG_TASKS", "CFG_TASK_PARAMETERS"]))
            .where(
                c.c.change_id
                > sa.select(sa.func.max(c.c.change_id)).where(c.c.table_name == "CFG_PIPELINES").scalar_subquery()
            )
            .order_by(c.c.change_id)
        ).all()
    assert [tuple(r) for r in params] == [("INPUT_PARAMS", "{}", "dev"), ("SCRIPT_NAME", "task.py", "dev")]
    assert [tuple(r) for r in changes][-4:] == [
        ("CFG_TASKS", "INSERT"),
        ("CFG_TASK_PARAMETERS", "INSERT"),
        ("CFG_TASK_PARAMETERS", "INSERT"),
        ("CFG_TASKS", "UPDATE"),
    ]


def test_a_pipeline_is_created_once_validate_accepts_it_and_audited(ui: Ui) -> None:
    assert ui.signed_in("operator").get("/ui/metadata/pipelines").status_code == 403
    assert 'href="/ui/metadata/pipelines"' not in ui.signed_in("viewer").get("/ui/pipelines").text
    browser = ui.signed_in("developer")
    assert 'href="/ui/metadata/pipelines"' in browser.get("/ui/pipelines").text
    token = csrf(browser.get("/ui/metadata/pipelines").text)
    body = {
        "csrf_token": token,
        "pipeline_code": "stock",
        "pipeline_name": "Stock",
        "refresh_type": "FULL",
        "schedule_timezone": "Mars/Olympus",
        "confirm": "yes",
    }
    refused = browser.post("/ui/metadata/pipelines", data=body)
    assert refused.status_code == 422 and re.search(r"\[FAIL\] stock[^<]*SCHEDULE_TIMEZONE", refused.text), refused.text
    p = t.cfg_pipelines
    with ui.api.ctx.db.read() as conn:
        assert conn.execute(sa.select(p.c.pipeline_id).where(p.c.pipeline_code == "stock")).all() == []
    assert browser.post("/ui/metadata/pipelines", data={**body, "pipeline_code": "sales"}).status_code == 409
    made = browser.post("/ui/metadata/pipelines", data={**body, "schedule_timezone": "Europe/Oslo"})
    assert made.status_code == 303 and made.headers["location"].startswith(
        "/ui/pipelines/stock/tasks?done=stock+created"
    )
    a = t.aud_actions
    with ui.api.ctx.db.read() as conn:
        row = conn.execute(
            sa.select(p.c.pipeline_name, p.c.refresh_type, p.c.schedule_timezone, p.c.created_by).where(
                p.c.pipeline_code == "stock"
            )
        ).one()
        action = conn.execute(
            sa.select(a.c.actor, a.c.arguments, a.c.pipeline_id).order_by(a.c.action_id.desc()).limit(1)
        ).one()
    assert tuple(row) == ("Stock", "FULL", "Europe/Oslo", "dev")
    assert (action.actor, action.arguments) == ("dev", {"pipeline_code": "stock", "created": True})
    assert browser.get("/ui/pipelines/stock/tasks").status_code == 200
