"""A project to validate: metadata written the way project migrations write it, files beside it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from etl_craft.engine.database import EngineDb, recording_migration
from etl_craft.engine.schema import migrations
from etl_craft.services.validate import Finding, ValidationReport, validate_metadata
from tests.fixtures.harness import TASK_SCRIPT, TaskSpec, pipeline_sql
from tests.fixtures.project import Project

WAREHOUSE = "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n"
EMAIL = "  Email:\n    transport: smtp\n    host: 127.0.0.1\n    port: 2525\n    tls_mode: none\n    from_address: etl@example.com\n"


class ValidateProject:
    def __init__(self, project: Project) -> None:
        self.project = project
        self.root = project.root
        (self.root / "sql_files").mkdir(exist_ok=True)
        (self.root / "ingestion_scripts").mkdir(exist_ok=True)
        (self.root / "ingestion_scripts" / "task.py").write_text(TASK_SCRIPT)
        self.configure(warehouse=True, email=True)
        self._db: EngineDb | None = None
        self._count = 0

    def configure(self, *, warehouse: bool = True, email: bool = True, orchestration: str = "  Mode: local\n") -> None:
        self.project.orchestration = orchestration + (EMAIL if email else "")
        self.project.extra_sections = WAREHOUSE if warehouse else ""
        self.project.write_config()

    @property
    def db(self) -> EngineDb:
        if self._db is None:
            self._db = self.project.open_db()
        return self._db

    def sql(self, text: str) -> None:
        """Run SQL as a project migration would (the CFG_ triggers record it)."""
        self._count += 1
        with recording_migration(f"{self._count:04d}_test.sql"), self.db.write() as conn:
            self.db.dialect.execute_script(conn, text)

    def pipeline(self, code: str, tasks: list[TaskSpec], deps: list[tuple[str, str, str]] = ()) -> None:  # type: ignore[assignment]
        self.sql(pipeline_sql(code, tasks, list(deps)))

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def check(self, pipeline_code: str | None = None) -> ValidationReport:
        with self.db.read() as conn:
            return validate_metadata(conn, self.project.load(), pipeline_code)


def find(report: ValidationReport, level: str, where: str, *parts: str) -> Finding:
    """The first finding at `where` whose message holds every part (case aside: remedies start with a capital)."""
    matching = [
        f
        for f in report.findings
        if f.level == level and f.where == where and all(p.lower() in f.message.lower() for p in parts)
    ]
    assert matching, f"no {level} at {where!r} holding {parts}; found:\n" + "\n".join(report.lines)
    return matching[0]


def clean(report: ValidationReport) -> None:
    assert report.findings == (), "\n".join(report.lines)


@pytest.fixture
def vp(tmp_path: Path) -> Iterator[ValidateProject]:
    """On SQLite: the rules read rows, and both Engine DB dialects read them the same way."""
    project = Project(tmp_path, "sqlite")
    project.write_config()
    migrations.init_db(project.open_db(create=True))
    yield ValidateProject(project)
    project.close()
