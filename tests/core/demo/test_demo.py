"""`etl-craft demo` end to end through the real CLI: every run SUCCESS, one JSON document, what it wrote."""

from __future__ import annotations

import io
import json
from pathlib import Path

import duckdb
import pytest
import sqlalchemy as sa

from etl_craft.cli.demo_display import PlainDisplay
from etl_craft.core.errors import UsageError
from etl_craft.engine.schema import tables as t
from etl_craft.services.demo.walkthrough import DemoRunView, DemoTaskView, DemoView, choose_folder, launcher
from tests.core.demo.conftest import DemoRun, demo_env
from tests.fixtures.cli import run_cli

pytestmark = [pytest.mark.sqlite, pytest.mark.duckdb]

PIPELINES = ["support_setup", "support_reference", "client_alpha", "client_beta", "client_gamma"]
BATCH_2 = ["support_reference", "client_alpha", "client_beta", "client_gamma"]


def test_the_demo_ends_with_every_run_success_and_prints_one_json_document(demo_run: DemoRun) -> None:
    result = demo_run.result
    assert result.returncode == 0, str(result)
    document = json.loads(result.stdout)  # the whole of stdout is one document
    assert isinstance(document, dict) and document["schema"] == "etl-craft/demo/1"
    assert document["status"] == "SUCCESS" and document["exit_code"] == 0
    assert document["project_dir"] == str(demo_run.folder)
    assert [(r["batch"], r["pipeline_code"], r["status"]) for r in document["runs"]] == [
        *[(1, code, "SUCCESS") for code in PIPELINES],
        *[(2, code, "SUCCESS") for code in BATCH_2],
    ]
    assert document["validation"].startswith("checked 5 pipeline(s)")
    # The live progress went to stderr, one line per event.
    assert "[batch 1] client_alpha.alpha_source_to_lnd: SUCCESS" in result.stderr
    assert "[batch 2] client_gamma: pipeline_run_id=" in result.stderr
    explore = document["explore"]
    assert explore[0] == f"cd {demo_run.folder}"
    assert any(" status --pipeline_code client_alpha --run-id " in line for line in explore)
    assert any(" lineage " in line for line in explore) and any(" history " in line for line in explore)


def test_the_engine_db_holds_the_metadata_from_migrations_and_every_run(demo_run: DemoRun) -> None:
    runs = demo_run.engine_rows(
        sa.select(
            t.cfg_pipelines.c.pipeline_code, t.aud_pipelines_run_log.c.status, t.aud_pipelines_run_log.c.started_by
        )
        .join(t.cfg_pipelines, t.cfg_pipelines.c.pipeline_id == t.aud_pipelines_run_log.c.pipeline_id)
        .order_by(t.aud_pipelines_run_log.c.pipeline_run_id)
    )
    assert [(r.pipeline_code, r.status) for r in runs] == [(c, "SUCCESS") for c in [*PIPELINES, *BATCH_2]]
    assert {r.started_by for r in runs} == {"newcomer@demo"}
    migrations = demo_run.engine_rows(
        sa.select(t.schema_migrations.c.version).where(t.schema_migrations.c.source == "PROJECT")
    )
    assert sorted(m.version for m in migrations) == [
        "0001_pipelines.sql",
        "0002_support_setup.sql",
        "0003_support_reference.sql",
        "0004_client_alpha.sql",
        "0005_client_beta.sql",
        "0006_client_gamma.sql",
        "0007_business_rules.sql",
    ]
    # Every CFG_ row came from those migrations.
    changes = demo_run.engine_rows(sa.select(t.aud_metadata_changes.c.migration).distinct())
    assert {c.migration for c in changes} == {m.version for m in migrations}
    schedules = demo_run.engine_rows(
        sa.select(t.cfg_pipelines.c.pipeline_code, t.cfg_pipelines.c.run_schedule, t.cfg_pipelines.c.schedule_timezone)
    )
    assert {s.pipeline_code: s.schedule_timezone for s in schedules if s.run_schedule} == {
        "support_reference": "Europe/Paris",
        "client_alpha": "Europe/Paris",
        "client_beta": "America/New_York",
        "client_gamma": "Asia/Singapore",
    }
    offsets = demo_run.engine_rows(
        sa.select(
            t.cfg_tasks.c.task_code, t.aud_task_offset_tracker.c.offset_type, t.aud_task_offset_tracker.c.offset_value
        )
        .join(t.cfg_tasks, t.cfg_tasks.c.task_id == t.aud_task_offset_tracker.c.task_id)
        .order_by(t.cfg_tasks.c.task_code)
    )
    assert [(o.task_code, o.offset_type) for o in offsets] == [
        ("alpha_source_to_lnd", "TIMESTAMP"),
        ("beta_source_to_lnd", "NUMBER"),
        ("gamma_source_to_lnd", "TEXT"),
    ]
    assert offsets[2].offset_value == "0000000010_tickets.csv.gz"
    # Every data task of every run succeeded; the alerts ran after them and sent nothing.
    tasks = demo_run.engine_rows(
        sa.select(t.cfg_tasks.c.task_code, t.cfg_tasks.c.handler, t.aud_task_run_log.c.status).join(
            t.cfg_tasks, t.cfg_tasks.c.task_id == t.aud_task_run_log.c.task_id
        )
    )
    assert len(tasks) == 13 + 2 * (4 + 3 * 8)
    assert {r.status for r in tasks if r.handler != "EMAIL_ALERT"} == {"SUCCESS"}
    assert len([r for r in tasks if r.handler == "EMAIL_ALERT"]) == 6
    assert not (demo_run.folder / "outbox").exists() or not any((demo_run.folder / "outbox").iterdir())


def test_the_warehouse_holds_every_layer(demo_run: DemoRun) -> None:
    document = demo_run.document
    with duckdb.connect(str(demo_run.folder / "warehouse.duckdb"), read_only=True) as conn:

        def count(sql: str) -> int:
            return int(conn.execute(sql).fetchone()[0])  # type: ignore[index]

        assert count("SELECT COUNT(*) FROM dim.agents") == 14  # 12, then two joined in batch 2
        assert count("SELECT COUNT(*) FROM dim.agents WHERE agent_id = 'AG05' AND team = 'Network'") == 1
        for client in ("alpha", "beta", "gamma"):
            assert count(f"SELECT COUNT(*) FROM prs.{client}_tickets") > count(
                f"SELECT COUNT(*) FROM stg.{client}_tickets"
            )
        facts = dict(
            conn.execute("SELECT client, COUNT(*) FROM dm.ticket_fact WHERE ACTIVE_FLAG = 'Y' GROUP BY 1").fetchall()
        )
    assert facts == document["fact_rows"]
    assert set(facts) == {"ALPHA", "BETA", "GAMMA"}


def test_an_existing_folder_is_refused_and_left_alone(tmp_path: Path) -> None:
    taken = tmp_path / "mine"
    taken.mkdir()
    (taken / "notes.txt").write_text("keep me", encoding="utf-8")
    result = run_cli("demo", "mine", env=demo_env(), cwd=tmp_path)
    assert result.returncode == 2, str(result)
    assert f"{taken}, a folder that is not empty" in result.stderr
    assert "nothing is ever overwritten" in result.stderr
    assert [p.name for p in taken.iterdir()] == ["notes.txt"]
    json_result = run_cli("--format", "json", "demo", "mine", env=demo_env(), cwd=tmp_path)
    assert json_result.returncode == 2
    assert json.loads(json_result.stdout)["schema"] == "etl-craft/error/1"


def test_a_folder_that_cant_be_written_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder", encoding="utf-8")
    result = run_cli("demo", "a-file/demo", env=demo_env(), cwd=tmp_path)
    assert (result.returncode, result.stdout) == (2, ""), str(result)
    assert result.stderr.splitlines()[-1] == (
        f"error: etl-craft demo a-file/demo: found {tmp_path / 'a-file' / 'demo'}, which can't be written "
        "(Not a directory); expected a new or empty folder to write the demo project into. "
        "Name a folder you can write"
    )
    assert (tmp_path / "a-file").read_text(encoding="utf-8") == "not a folder"


def test_the_default_folder_is_never_one_that_exists(tmp_path: Path) -> None:
    assert choose_folder(None, tmp_path) == tmp_path / "etl-craft-demo"
    (tmp_path / "etl-craft-demo").mkdir()
    assert choose_folder(None, tmp_path) == tmp_path / "etl-craft-demo-2"
    (tmp_path / "etl-craft-demo-2").write_text("a file", encoding="utf-8")
    assert choose_folder(None, tmp_path) == tmp_path / "etl-craft-demo-3"
    assert choose_folder("etl-craft-demo", tmp_path) == tmp_path / "etl-craft-demo"  # named and empty: fine
    with pytest.raises(UsageError, match="a file"):
        choose_folder("etl-craft-demo-2", tmp_path)


def test_the_explore_commands_start_etl_craft_the_way_it_was_started(tmp_path: Path) -> None:
    venv = tmp_path / "clone" / ".venv"
    inside, outside = tmp_path / "clone" / "etl-craft-demo", tmp_path / "elsewhere"
    assert launcher(inside, {"UV": "/usr/bin/uv", "VIRTUAL_ENV": str(venv)}).endswith("uv run etl-craft")
    assert launcher(outside, {"UV": "/usr/bin/uv", "VIRTUAL_ENV": str(venv)}) == str(venv / "bin" / "etl-craft")


def _view_from(document: dict[str, object]) -> DemoView:
    fields = {k: v for k, v in document.items() if k != "schema"}
    runs = tuple(
        DemoRunView(**{**r, "tasks": tuple(DemoTaskView(**task) for task in r["tasks"])})  # type: ignore[arg-type]
        for r in fields.pop("runs")  # type: ignore[attr-defined]
    )
    return DemoView(**{**fields, "runs": runs})  # type: ignore[arg-type]


def test_the_text_summary_shows_runs_rows_per_task_rejects_and_where_to_look(demo_run: DemoRun) -> None:
    out = io.StringIO()
    view = _view_from(demo_run.document)
    PlainDisplay(out).summary(view)
    text = out.getvalue()
    assert "every run of the demo ended SUCCESS (9 runs)" in text
    assert "BATCH  PIPELINE" in text and "client_gamma" in text
    for step in ("source_to_lnd", "lnd_to_prs", "prs_to_cdc", "cdc_to_stg", "rules", "publish_rejects", "stg_to_fact"):
        assert f"\n  {step} " in text
    assert "rejected tickets, kept out of the fact table" in text
    assert "no Email relay is configured" in text
    assert f"cd {demo_run.folder}" in text
