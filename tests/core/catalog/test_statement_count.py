"""generate-docs reads with set queries: the statements it issues do not grow with the number of
pipelines, tasks or runs (S6.C, W9). Counted with a SQLAlchemy event listener on the Engine DB."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from benchmarks.catalog_seed import seed_catalog

from etl_craft.core.actor import current_actor
from etl_craft.engine.database import EngineDb
from etl_craft.services.catalog import generate_docs
from etl_craft.services.context import OperationContext
from tests.fixtures.project import Project


def _statements(project: Project, db: EngineDb, output: Path) -> tuple[int, Any]:
    seen: list[str] = []

    def count(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        seen.append(statement)

    ctx = OperationContext(project.load(), db, current_actor())
    sa.event.listen(db.engine, "before_cursor_execute", count)
    try:
        built = generate_docs(ctx, output, strict=False)
    finally:
        sa.event.remove(db.engine, "before_cursor_execute", count)
    return len(seen), built


@pytest.fixture
def second_project(tmp_path: Path, dialect: str, request: pytest.FixtureRequest) -> Iterator[Project]:
    """A second, independent project on the same dialect (the project fixture gives one)."""
    from etl_craft.engine.schema import migrations
    from tests.fixtures import postgres as pg

    root = tmp_path / "second"
    root.mkdir()
    if dialect == "postgresql":
        with pg.throwaway_database(template=request.getfixturevalue("pg_template")) as name:
            other = Project(root, dialect, name)
            other.write_config()
            yield other
            other.close()
    else:
        other = Project(root, dialect)
        other.write_config()
        migrations.init_db(other.open_db(create=True))
        yield other
        other.close()


def test_the_statement_count_does_not_grow_with_pipelines_tasks_or_runs(
    project: Project, second_project: Project, tmp_path: Path, dialect: str
) -> None:
    small_db, large_db = project.open_db(), second_project.open_db()
    seed_catalog(small_db, 10, 2, 1)
    # PostgreSQL takes the plan's size; SQLite a smaller one (the queries are the same).
    large = (300, 10, 50) if dialect == "postgresql" else (60, 5, 10)
    seed_catalog(large_db, *large)
    small_count, small = _statements(project, small_db, tmp_path / "small")
    large_count, built = _statements(second_project, large_db, tmp_path / "large")
    assert small_count == large_count
    assert small.pages == 10 + 10 * 2 + 1  # pipelines, one table per task, the index
    assert built.pages == large[0] + large[0] * large[1] + 1
    page = (tmp_path / "large" / "pipelines" / "p0000.html").read_text(encoding="utf-8")
    assert page.count('class="task"') == large[1]
    assert page.count("<tr><td>") >= 20  # the last 20 runs of 50 (KPI rows come on top)
    backfills = len(range(0, large[2], 10))
    assert f"<td>backfill</td><td>{backfills}</td>" in page
    assert f"<td>scheduled</td><td>{large[2] - backfills}</td>" in page
