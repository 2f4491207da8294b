"""The pipeline page and its grid send the same number of Engine DB statements whatever the number
of tasks and runs (set reads, never a query per task or per run), on both dialects."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from etl_craft.core.actor import acting_as
from etl_craft.services.access.users import create_user
from tests.fixtures import postgres as pg
from tests.fixtures.grid_seed import counted_statements, wide_pipeline
from tests.server.api.conftest import ADMIN, build_api
from tests.server.ui.conftest import PASSWORD, Ui

SIZES = {"small": (2, 1), "medium": (12, 6), "large": (50, 25)}  # tasks, runs


@pytest.fixture(
    params=[pytest.param("sqlite", marks=pytest.mark.sqlite), pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def wide_ui(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Ui]:
    def build(database: str | None) -> Iterator[Ui]:
        built, project = build_api(tmp_path, request.param, database)
        with acting_as(ADMIN):
            create_user(built.ctx, "vera", "viewer", PASSWORD)
        for name, (tasks, runs) in SIZES.items():
            wide_pipeline(built.ctx.db, name, tasks, runs)
        yield Ui(built)
        built.harness.close()
        project.close()

    if request.param == "postgresql":
        with pg.throwaway_database(template=request.getfixturevalue("pg_template")) as name:
            yield from build(name)
    else:
        yield from build(None)


def test_the_pipeline_page_and_the_grid_send_a_constant_number_of_statements(wide_ui: Ui) -> None:
    browser = wide_ui.signed_in("viewer")
    counts: dict[str, dict[str, int]] = {}
    for name, (tasks, runs) in SIZES.items():
        counts[name] = {}
        for page in (f"/ui/pipelines/{name}", f"/ui/pipelines/{name}/grid"):
            with counted_statements(wide_ui.api.ctx.db) as seen:
                response = browser.get(page, params={"runs": 25})
            assert response.status_code == 200, response.text
            assert response.text.count('class="cell ') == tasks * runs  # every cell drawn
            counts[name][page.rsplit("/", 1)[-1] if page.endswith("grid") else "page"] = len(seen)
    assert counts["small"] == counts["medium"] == counts["large"], counts
    # The page: the session, then the graph and the grid (each a snapshot of a few set reads).
    assert counts["large"]["page"] <= 30 and counts["large"]["grid"] < counts["large"]["page"], counts
