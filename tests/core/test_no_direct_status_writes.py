"""Only the engine/transitions package changes the status of runs, task runs and attempts.

Scans every module of every distribution for writes to AUD_PIPELINES_RUN_LOG, AUD_TASK_RUN_LOG or
AUD_TASK_ATTEMPTS that set STATUS (SQLAlchemy insert/update with a `status` value, or SQL text).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).parents[2]
TRANSITIONS = ROOT / "packages/etl-craft-core/src/etl_craft/engine/transitions"
STATUS_TABLES = ("aud_pipelines_run_log", "aud_task_run_log", "aud_task_attempts")
ALIASES = {"runs", "task_runs", "attempts"}
SQL_WRITE = re.compile(r"\b(UPDATE|INSERT\s+INTO)\s+(AUD_PIPELINES_RUN_LOG|AUD_TASK_RUN_LOG|AUD_TASK_ATTEMPTS)\b", re.I)


def _table_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _writes_to_status_table(call: ast.Call) -> bool:
    """A `.values(status=...)` whose chain starts at `<status table>.insert()` or `.update()`."""
    node: ast.expr = call.func
    while isinstance(node, ast.Attribute | ast.Call):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in ("insert", "update"):
                name = _table_name(func.value)
                return name is not None and (name.lower() in STATUS_TABLES or name in ALIASES)
            node = func
        else:
            node = node.value
    return False


def violations(source: str, filename: str = "<source>") -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "values":
            keys = {kw.arg for kw in node.keywords}
            if "status" in keys and _writes_to_status_table(node):
                found.append(f"{filename}:{node.lineno}: sets status")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL_WRITE.search(node.value):
            found.append(f"{filename}:{node.lineno}: SQL writes a status table")
    return found


def test_only_the_transitions_module_writes_a_status() -> None:
    assert (TRANSITIONS / "attempts.py").is_file()
    found = []
    for path in sorted(ROOT.glob("packages/*/src/**/*.py")):
        if path.is_relative_to(TRANSITIONS):
            continue
        found += violations(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))
    assert found == []


def test_the_scan_finds_each_kind_of_direct_status_write() -> None:
    bad = (
        "conn.execute(runs.update().where(runs.c.pipeline_run_id == 1).values(status='FAILED'))\n"
        "conn.execute(t.aud_task_attempts.update().values(status='LOST', ended_at=now))\n"
        "conn.execute(task_runs.insert().values(task_id=1, status='SKIPPED'))\n"
        "conn.exec_driver_sql(\"UPDATE AUD_PIPELINES_RUN_LOG SET STATUS = 'SUCCESS'\")\n"
    )
    assert len(violations(bad)) == 4
    assert violations("conn.execute(rules.update().values(status='SUCCESS'))\n") == []
