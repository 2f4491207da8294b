"""Every catalog page in Debian's chromium (Playwright, never a downloaded browser), served by the
real publish-docs: the suite follows every link from the home page; no page logs a console error,
throws, or fails a request. The search box finds by subsequence. Screenshots in light and dark go to
release/screenshots/."""

from __future__ import annotations

import shutil
from pathlib import Path
from urllib.parse import urldefrag, urlsplit

import pytest
import sqlalchemy as sa
from benchmarks.catalog_seed import seed_catalog

from etl_craft.engine.schema import tables as t
from tests.core.catalog.test_publish_docs import publish
from tests.fixtures.cli import run_cli
from tests.fixtures.project import Project

pytestmark = [
    pytest.mark.browser,
    pytest.mark.parametrize("dialect", [pytest.param("sqlite", marks=pytest.mark.sqlite)]),
]
SCREENSHOTS = Path(__file__).resolve().parents[3] / "release" / "screenshots"


def _lineage(project: Project) -> None:
    """Column lineage for one task, so table pages draw their graph."""
    with project.open_db().write() as conn:
        task_id = conn.execute(sa.select(sa.func.min(t.cfg_tasks.c.task_id))).scalar_one()
        target = conn.execute(
            sa.select(t.cfg_task_parameters.c.parameter_value).where(
                t.cfg_task_parameters.c.task_id == task_id, t.cfg_task_parameters.c.parameter_name == "TARGET_OBJECT"
            )
        ).scalar_one()
        conn.execute(
            t.aud_column_lineage.insert(),
            [
                {"task_id": task_id, "source_sql_hash": "h", "target_object": target, "target_column": "amount",
                 "source_object": "raw.orders", "source_column": "amount", "transformation": "copy"},
                {"task_id": task_id, "source_sql_hash": "h", "target_object": target, "target_column": "total",
                 "source_object": "raw.orders", "source_column": "price", "transformation": "o.price * o.qty"},
            ],
        )  # fmt: skip


def test_every_catalog_page_renders_without_errors_and_every_link_resolves(project: Project) -> None:
    playwright_api = pytest.importorskip("playwright.sync_api")
    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is required (apt-get install chromium)"
    seed_catalog(project.open_db(), 3, 3, 4)
    _lineage(project)
    site = project.root / "site"
    built = run_cli("--config", str(project.config_path), "generate-docs", "--output", str(site))
    assert built.returncode == 0, built
    served = publish(project, site, "--local-only")
    problems: list[str] = []
    visited: list[str] = []
    try:
        with playwright_api.sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            page = browser.new_page()
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            # A request the next page.goto aborts (the favicon, fetched after the load event on a slow
            # machine) is not a fault of the site; a missing file still shows as a 404 response below.
            page.on(
                "requestfailed",
                lambda r: (
                    None if r.failure == "net::ERR_ABORTED" else problems.append(f"request failed: {r.url} {r.failure}")
                ),
            )
            page.on("response", lambda r: problems.append(f"{r.status}: {r.url}") if r.status >= 400 else None)
            queue = [served.url]
            while queue:
                url = queue.pop(0)
                if url in visited:
                    continue
                visited.append(url)
                response = page.goto(url)
                assert response is not None and response.status == 200, url
                for href in page.eval_on_selector_all("a[href]", "els => els.map(e => e.href)"):
                    target = urldefrag(href).url
                    if urlsplit(target).netloc == urlsplit(served.url).netloc and target not in visited:
                        queue.append(target)
                images = page.eval_on_selector_all(
                    "img", "els => els.filter(e => !e.complete || !e.naturalWidth).length"
                )
                assert images == 0, f"a broken image on {url}"
            page.goto(served.url)
            page.fill("#search", "p1t01")  # a subsequence of p0001.t01
            page.wait_for_selector("#search-results a")
            assert "p0001.t01" in page.inner_text("#search-results")
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            for scheme in ("light", "dark"):
                shot = browser.new_page(color_scheme=scheme, viewport={"width": 1280, "height": 900})
                for name, path in (
                    ("index", ""),
                    ("pipeline", "pipelines/p0000.html"),
                    ("table", "tables/mart.p1_t00.html"),
                ):
                    shot.goto(served.url + path)
                    shot.screenshot(path=str(SCREENSHOTS / f"catalog-{name}-{scheme}.png"), full_page=True)
                shot.close()
            browser.close()
    finally:
        assert served.stop() == 0
    assert problems == []
    pages = {urlsplit(u).path for u in visited}
    assert {"/", "/index.html", "/pipelines/p0000.html", "/pipelines/p0002.html", "/tables/mart.p1_t00.html"} <= pages
    assert len([p for p in pages if p.startswith("/tables/")]) == 3 * 3 + 1  # every target and raw.orders
