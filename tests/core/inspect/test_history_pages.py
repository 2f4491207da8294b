"""A page of `history` (the API's run listing, `before` and `limit`) reads only the page's runs: the
interventions and task rows come from statements bounded by the page's run ids on both sides, so a
deep page costs what the first one does, however much history the Engine DB keeps."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from etl_craft.services.context import open_context
from etl_craft.services.inspect import run_history
from tests.fixtures.harness import Harness, TaskSpec


def test_a_deep_page_reads_only_its_own_runs(harness: Harness) -> None:
    harness.pipeline("p", [TaskSpec("t", {"rows": 1})])
    done = harness.cli("run", "--pipeline_code", "p", "--backfill", "2026-01-01:2026-01-05", "--reason", "resent")
    assert done.returncode == 0, done
    for run_id in range(1, 6):
        marked = harness.cli(
            "mark", "--pipeline_code", "p", "--run-id", str(run_id), "--task_code", "t",
            "--status", "FAILED", "--reason", f"bad file {run_id}",
        )  # fmt: skip
        assert marked.returncode == 0, marked
    assert [(r.pipeline_run_id, r.status) for r in harness.runs()] == [(n, "FAILED") for n in range(1, 6)]

    ctx = open_context(str(harness.project.config_path))
    statements: list[tuple[str, Any]] = []
    sa.event.listen(ctx.db.engine, "before_cursor_execute", lambda *a: statements.append((a[2], a[3])))
    try:
        page = run_history(ctx, "p", task_code="t", limit=2, before=4)
    finally:
        ctx.close()

    assert [r.pipeline_run_id for r in page.runs] == [3, 2]
    assert {i.pipeline_run_id for i in page.interventions} == {2, 3}  # not 4 or 5, though newer
    assert {(i.pipeline_run_id, i.reason) for i in page.interventions} >= {(3, "bad file 3"), (2, "bad file 2")}
    assert [(tr.pipeline_run_id, tr.status) for tr in page.task_runs] == [(3, "FAILED"), (2, "FAILED")]
    bounded = [
        (sql, params) for sql, params in statements
        if "AUD_RUN_INTERVENTIONS" in sql.upper() or ("AUD_TASK_RUN_LOG" in sql.upper() and "TASK_ID =" in sql.upper())
    ]  # fmt: skip
    assert len(bounded) == 2, statements
    for sql, params in bounded:
        values = params.values() if isinstance(params, dict) else params
        assert "<=" in sql and 3 in values and 2 in values, (sql, params)  # run ids 2 to 3, nothing past the page
