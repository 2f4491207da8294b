"""One real `etl-craft demo` for the whole session, shared by the test modules that read its results.

The demo takes tens of seconds, so it runs once: through the real CLI, in a clean folder, with
--format json. Under pytest-xdist the workers share it through a lock file in the session's common
temporary folder; the first to arrive runs it, the others wait and read what it left.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from etl_craft.config.loader import load_config
from etl_craft.engine.database import EngineDb, open_engine_db
from tests.fixtures.cli import Result, run_cli

DEMO_TIMEOUT_SECONDS = 280


def demo_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ETL_CRAFT_CONFIG"}
    env["ETL_CRAFT_ACTOR"] = "newcomer@demo"
    env.update(extra)
    return env


@dataclass(frozen=True)
class DemoRun:
    folder: Path  # the project etl-craft demo wrote
    result: Result

    @property
    def document(self) -> Any:
        return json.loads(self.result.stdout)

    def engine_db(self) -> EngineDb:
        return open_engine_db(load_config(self.folder / "craft-connector.yml", demo_env()))

    def engine_rows(self, query: sa.Select[Any]) -> list[Any]:
        db = self.engine_db()
        try:
            with db.read() as conn:
                return list(conn.execute(query).all())
        finally:
            db.dispose()


def _shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def demo_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoRun]:
    root = _shared_root(tmp_path_factory)
    cwd = root / "etl-craft-demo-cwd"
    saved = root / "etl-craft-demo-result.json"
    with (root / "etl-craft-demo.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not saved.exists():
            cwd.mkdir(exist_ok=True)
            result = run_cli("--format", "json", "demo", env=demo_env(), cwd=cwd, timeout=DEMO_TIMEOUT_SECONDS)
            saved.write_text(json.dumps(result.__dict__), encoding="utf-8")
    yield DemoRun(cwd / "etl-craft-demo", Result(**json.loads(saved.read_text(encoding="utf-8"))))
