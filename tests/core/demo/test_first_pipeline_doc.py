"""docs/first-pipeline.md works as written: its files are written and its commands run, in order.

The page marks what the test does: `<!-- file: PATH -->` before a code block writes the block to
PATH, `<!-- run -->` (or `<!-- run: exit N -->`) before a shell block runs each of its lines,
`cd DIR` included; every command must exit 0 (or N).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from etl_craft.config.loader import load_config
from etl_craft.engine.database import open_engine_db
from etl_craft.engine.schema import tables as t
from tests.fixtures.cli import run_cli

pytestmark = [pytest.mark.sqlite, pytest.mark.duckdb]

TUTORIAL = Path(__file__).resolve().parents[3] / "docs" / "first-pipeline.md"
STEP = re.compile(r"<!-- (file: (?P<path>\S+)|run(: exit (?P<code>\d+))?) -->\n```[a-z]*\n(?P<body>.*?)```", re.DOTALL)


@dataclass(frozen=True)
class Step:
    path: str | None  # a file to write
    body: str
    exit_code: int = 0


def tutorial_steps() -> list[Step]:
    text = TUTORIAL.read_text(encoding="utf-8")
    return [Step(m["path"], m["body"], int(m["code"] or 0)) for m in STEP.finditer(text)]


def test_the_tutorial_marks_its_files_and_commands() -> None:
    steps = tutorial_steps()
    files = [s.path for s in steps if s.path]
    commands = [line for s in steps if not s.path for line in s.body.splitlines() if line.strip()]
    assert "shop/craft-connector.yml" in files and "shop/migrations/0001_shop.sql" in files
    assert any("--rerun" in c for c in commands) and any(c.startswith("etl-craft explain") for c in commands)


def test_every_file_and_command_of_the_tutorial_works(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ETL_CRAFT_CONFIG"}
    env["ETL_CRAFT_ACTOR"] = "reader@tutorial"
    cwd = tmp_path
    for step in tutorial_steps():
        if step.path:
            target = tmp_path / step.path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.body, encoding="utf-8")
            continue
        for line in step.body.splitlines():
            words = shlex.split(line)
            if not words:
                continue
            if words[0] == "cd":
                cwd = cwd / words[1]
                continue
            assert words[0] == "etl-craft", f"the tutorial runs only etl-craft and cd, found: {line}"
            result = run_cli(*words[1:], env=env, cwd=cwd, timeout=180)
            assert result.returncode == step.exit_code, f"{line}\n{result}"

    shop = tmp_path / "shop"
    config = load_config(shop / "craft-connector.yml", env)
    db = open_engine_db(config)
    try:
        with db.read() as conn:
            runs = conn.execute(
                sa.select(t.aud_pipelines_run_log.c.pipeline_run_id, t.aud_pipelines_run_log.c.status).order_by(
                    t.aud_pipelines_run_log.c.pipeline_run_id
                )
            ).all()
            actions = conn.execute(
                sa.select(t.aud_run_interventions.c.action, t.aud_run_interventions.c.requested_by).where(
                    t.aud_run_interventions.c.pipeline_run_id == 2
                )
            ).all()
    finally:
        db.dispose()
    assert [tuple(r) for r in runs] == [(1, "SUCCESS"), (2, "SUCCESS")]
    assert {a.action for a in actions} >= {"REOPEN", "RERUN"}
    assert {a.requested_by for a in actions} == {"reader@tutorial"}
    with duckdb.connect(str(shop / "warehouse.duckdb"), read_only=True) as conn:
        revenue = conn.execute("SELECT CAST(order_date AS VARCHAR), orders, revenue FROM main.daily_revenue ORDER BY 1")
        assert [(d, n, str(r)) for d, n, r in revenue.fetchall()] == [
            ("2026-03-02", 3, "67.40"),
            ("2026-03-03", 3, "50.25"),
        ]
