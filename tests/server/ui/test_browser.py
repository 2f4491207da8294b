"""The web UI in a real browser: Debian's chromium driven by Playwright against a real
`etl-craft server` (overseer and UI) started by the test. Every page is checked for console errors,
failed requests, landmarks, labels and contrast (our own axe-style check, tests/server/ui/a11y.js)
and photographed at 1280 and 390 px into release/screenshots/.

Run with `nox -s browser` (marker `browser`, left out of the everyday run).
"""

from __future__ import annotations

import json
import shutil
import signal
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from etl_craft.core.actor import acting_as
from etl_craft.engine.schema import migrations
from etl_craft.engine.schema import tables as t
from etl_craft.services.access.users import create_user
from etl_craft.services.context import OperationContext
from tests.fixtures.cli import run_cli
from tests.fixtures.harness import Harness, Started, TaskSpec, pipeline_sql
from tests.fixtures.project import Project
from tests.server.api.conftest import ADMIN

playwright = pytest.importorskip("playwright.sync_api")
pytestmark = [pytest.mark.browser, pytest.mark.sqlite]

ROOT = Path(__file__).resolve().parents[3]
SCREENSHOTS = ROOT / "release" / "screenshots"
A11Y_CHECK = (Path(__file__).parent / "a11y.js").read_text()
PASSWORD = "a long browser passphrase"
WIDTHS = (1280, 390)


@dataclass
class Served:
    base: str
    harness: Harness
    server: Started
    calls: Path  # the failing task's call counter


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("browser")
    port = _free_port()
    project = Project(root, "sqlite", None, orchestration=f"  Mode: local\n  Api_address: 127.0.0.1:{port}\n")
    project.write_config()
    db = project.open_db(create=True)
    migrations.init_db(db)
    harness = Harness(project)
    calls = root / "load-calls"
    tasks = [
        TaskSpec("extract", params={"sleep": 2}),
        TaskSpec("load", params={"fail_times": 1, "counter": str(calls)}),
        TaskSpec("report"),
    ]
    sql = pipeline_sql("sales", tasks, [("load", "extract", "SUCCESS"), ("report", "load", "SUCCESS")])
    sql += pipeline_sql("audit_feed", [TaskSpec("collect")], [])
    (root / "migrations" / "0001_sales.sql").write_text(sql)
    migrated = run_cli("migrate", env=project.env(), cwd=root)
    assert migrated.returncode == 0, str(migrated)
    ctx = OperationContext(config=project.load(), db=db, actor=ADMIN)
    with acting_as(ADMIN):
        for name, role in (("otto", "operator"), ("vera", "viewer"), ("dev", "developer")):
            create_user(ctx, name, role, PASSWORD)
    server = harness.start("server")
    base = f"http://127.0.0.1:{port}"

    def ready() -> bool:
        try:
            return httpx.get(f"{base}/ui/sign-in", timeout=5).status_code == 200
        except httpx.TransportError:
            return False

    harness.wait_until(ready, 60, "the UI to answer")
    yield Served(base, harness, server, calls)
    server.signal(signal.SIGTERM)
    result = server.wait(60)
    assert "Traceback" not in result.stderr, result.stderr
    harness.close()
    project.close()


@dataclass
class Watched:
    """What went wrong on a page: console errors, uncaught errors, failed or refused requests."""

    problems: list[str] = field(default_factory=list)
    expected: set[int] = field(default_factory=set)  # statuses a test provokes on purpose (a refusal page)


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    executable = shutil.which("chromium")
    if executable is None:
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    with playwright.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield browser
        browser.close()


@pytest.fixture
def page(chromium: Any, served: Served) -> Iterator[tuple[Any, Watched]]:
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, base_url=served.base)
    tab = context.new_page()
    watched = Watched()

    def on_console(message: Any) -> None:
        provoked = any(f"status of {status} " in message.text for status in watched.expected)
        if message.type == "error" and not provoked:
            watched.problems.append(f"console: {message.text}")

    tab.on("console", on_console)
    tab.on("pageerror", lambda e: watched.problems.append(f"page error: {e}"))
    tab.on("requestfailed", lambda r: watched.problems.append(f"failed: {r.url} {r.failure}"))
    tab.on(
        "response",
        lambda r: (
            r.status >= 400 and r.status not in watched.expected and watched.problems.append(f"{r.status}: {r.url}")
        ),
    )
    yield tab, watched
    context.close()
    assert watched.problems == []


def sign_in(tab: Any, name: str) -> None:
    tab.goto("/ui/sign-in")
    tab.get_by_label("User name").fill(name)
    tab.get_by_label("Password").fill(PASSWORD)
    tab.get_by_role("button", name="Sign in").click()
    tab.wait_for_url("**/ui/pipelines")
    assert tab.locator(".who-name").inner_text() == name


def check_page(tab: Any, name: str) -> None:
    """The axe-style check, no sideways overflow at either width, and a screenshot at each width."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for width in WIDTHS:
        tab.set_viewport_size({"width": width, "height": 900})
        problems = tab.evaluate(A11Y_CHECK)
        assert problems == [], f"{name} at {width} px: {json.dumps(problems, indent=1)}"
        overflow = tab.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
        assert overflow <= 0, f"{name} at {width} px is {overflow} px wider than the window"
        tab.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=True)
    tab.set_viewport_size({"width": 1280, "height": 900})


def _runs(served: Served) -> list[Any]:
    runs = t.aud_pipelines_run_log
    return served.harness.rows(runs, order_by=runs.c.pipeline_run_id)


def test_sign_in_page_and_the_skip_link(page: tuple[Any, Watched]) -> None:
    tab, _ = page
    tab.goto("/ui/sign-in")
    check_page(tab, "sign-in")
    skip = tab.locator("a.skip-link")
    assert skip.bounding_box()["x"] < 0  # type: ignore[index]  # hidden until focused
    tab.keyboard.press("Tab")
    assert tab.evaluate("document.activeElement.className") == "skip-link"
    box = skip.bounding_box()
    assert box is not None and box["x"] >= 0 and box["y"] >= 0
    tab.keyboard.press("Enter")
    assert tab.evaluate("document.activeElement.id") == "main"


def test_an_operator_runs_watches_explains_reruns_pauses_and_resumes(page: tuple[Any, Watched], served: Served) -> None:
    tab, _ = page
    sign_in(tab, "otto")
    check_page(tab, "pipelines")
    tab.goto("/ui/pipelines/sales")
    tab.get_by_label("Confirm a new run").check()
    tab.get_by_role("button", name="Run sales now").click()
    tab.wait_for_url("**/ui/pipelines/sales?done=*")
    run_id = _runs(served)[-1].pipeline_run_id
    tab.evaluate("window.notReloaded = true")
    # The overseer runs it; the grid shows it ending without a reload: load fails once, report is skipped.
    failed = tab.locator(f'#grid a[data-run="{run_id}"][data-task="load"][data-status="FAILED"]')
    failed.wait_for(timeout=90_000)
    tab.locator(f'#grid a[data-run="{run_id}"][data-task="extract"][data-status="SUCCESS"]').wait_for()
    assert tab.evaluate("window.notReloaded") is True
    assert served.harness.task_runs(run_id)["load"].status == "FAILED"
    served.harness.wait_until(lambda: _runs(served)[-1].status == "FAILED", 60, "the run to end")
    tab.reload()
    check_page(tab, "pipeline")
    tab.locator(f'#grid a[data-run="{run_id}"][data-task="load"]').click()
    tab.wait_for_url(f"**/runs/{run_id}?task=load")
    assert tab.get_by_role("heading", name="Why load is FAILED").is_visible()
    check_page(tab, "run")
    tab.locator("#rerun-reason").fill("the vendor resent the file")
    tab.get_by_label("With downstream tasks").check()
    tab.get_by_label("Confirm the rerun").check()
    tab.get_by_role("button", name="Rerun load").click()
    tab.wait_for_url(f"**/runs/{run_id}?done=*", timeout=120_000)
    assert {code: row.status for code, row in served.harness.task_runs(run_id).items()} == {
        "extract": "SUCCESS",
        "load": "SUCCESS",
        "report": "SUCCESS",
    }
    actions = served.harness.rows(t.aud_actions, t.aud_actions.c.actor == "otto", order_by=t.aud_actions.c.action_id)
    assert [(a.command, a.pipeline_run_id) for a in actions][-1][1] == run_id
    tab.locator('a[href^="/ui/attempts/"]').first.click()
    tab.wait_for_url("**/ui/attempts/*")
    assert tab.get_by_role("log").is_visible()
    check_page(tab, "attempt")
    tab.goto("/ui/pipelines")
    tab.locator("#reason-sales").fill("vendor late")
    tab.locator("form[action='/ui/pipelines/sales/pause'] input[name=confirm]").check()
    tab.get_by_role("button", name="Pause sales").click()
    tab.wait_for_url("**/ui/pipelines?done=*")
    assert tab.get_by_role("cell", name="paused by otto: vendor late").is_visible()
    tab.locator("#reason-sales").fill("it came")
    tab.locator("form[action='/ui/pipelines/sales/resume'] input[name=confirm]").check()
    tab.get_by_role("button", name="Resume sales").click()
    tab.wait_for_url("**/ui/pipelines?done=*")
    pauses = served.harness.rows(t.aud_pipeline_pauses)
    assert [(p.paused_by, p.reason, p.resumed_by) for p in pauses] == [("otto", "vendor late", "otto")]


def test_a_viewer_sees_no_action_and_each_action_url_is_refused(page: tuple[Any, Watched], served: Served) -> None:
    tab, _ = page
    sign_in(tab, "vera")
    run_id = _runs(served)[-1].pipeline_run_id if _runs(served) else 1
    for path in ("/ui/pipelines", "/ui/pipelines/sales", f"/ui/pipelines/sales/runs/{run_id}?task=load"):
        tab.goto(path)
        assert tab.locator("form.action").count() == 0, path
        assert tab.get_by_role("button", name="Pause sales").count() == 0
    token = tab.locator("input[name=csrf_token]").first.get_attribute("value")
    form = {
        "csrf_token": token,
        "reason": "viewer tries",
        "confirm": "yes",
        "status": "SUCCESS",
        "first": "2026-01-01",
        "last": "2026-01-02",
    }
    before = (len(_runs(served)), len(served.harness.rows(t.aud_pipeline_pauses)))
    for action in (
        "/ui/pipelines/sales/pause",
        "/ui/pipelines/sales/resume",
        "/ui/pipelines/sales/runs",
        "/ui/pipelines/sales/backfills",
        f"/ui/pipelines/sales/runs/{run_id}/cancel",
        f"/ui/pipelines/sales/runs/{run_id}/reopen",
        f"/ui/pipelines/sales/runs/{run_id}/mark",
        f"/ui/pipelines/sales/runs/{run_id}/tasks/load/rerun",
    ):
        answer = tab.request.post(action, form=form, max_redirects=0)
        assert answer.status == 403, (action, answer.status)
    assert (len(_runs(served)), len(served.harness.rows(t.aud_pipeline_pauses))) == before
    tab.goto("/ui/pipelines/sales")
    check_page(tab, "pipeline-viewer")


def test_a_developer_edits_a_parameter_refused_by_validate_then_saved_and_audited(
    page: tuple[Any, Watched], served: Served
) -> None:
    tab, watched = page
    sign_in(tab, "dev")
    tab.goto("/ui/pipelines/sales")
    tab.get_by_role("link", name="Edit the parameters of report").click()
    tab.wait_for_url("**/tasks/report/parameters")
    check_page(tab, "metadata-editor")
    watched.expected.add(422)  # validate's refusal is a page of its own
    tab.get_by_label("Name").fill("RETRIES")
    tab.get_by_label("Value").fill("many")
    tab.get_by_label("Confirm the change").check()
    tab.get_by_role("button", name="Check and save").click()
    refusal = tab.locator("li.finding").first
    refusal.wait_for()
    assert "[FAIL] sales.report" in refusal.inner_text() and "RETRIES" in refusal.inner_text()
    check_page(tab, "metadata-editor-refused")
    params = t.cfg_task_parameters
    assert served.harness.rows(params, params.c.parameter_name == "RETRIES") == []
    tab.get_by_label("Value").fill("2")
    tab.get_by_label("Confirm the change").check()
    tab.get_by_role("button", name="Check and save").click()
    tab.wait_for_url("**/parameters?done=*")
    [row] = served.harness.rows(params, params.c.parameter_name == "RETRIES")
    assert (row.parameter_value, row.created_by) == ("2", "dev")
    tab.get_by_role("link", name="Audit").click()
    tab.wait_for_url("**/ui/audit")
    change = tab.locator("tr.change", has_text="RETRIES").first
    assert "dev" in change.inner_text() and "INSERT" in change.inner_text()
    check_page(tab, "audit")


def test_error_pages_are_pages_too(chromium: Any, served: Served) -> None:
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, base_url=served.base)
    tab = context.new_page()
    sign_in(tab, "vera")
    answer = tab.goto("/ui/pipelines/nosuch")
    assert answer is not None and answer.status == 404
    check_page(tab, "not-found")
    context.close()
