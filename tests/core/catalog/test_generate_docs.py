"""generate-docs through the real CLI: the pages, masking, incremental rebuilds, the folder rule,
--strict, and docs-version."""

from __future__ import annotations

import json
from pathlib import Path

import sqlalchemy as sa
from benchmarks.catalog_seed import seed_catalog

from etl_craft.engine.schema import tables as t
from tests.fixtures.cli import run_cli
from tests.fixtures.project import Project


def _mtimes(folder: Path) -> dict[str, int]:
    return {str(p.relative_to(folder)): p.stat().st_mtime_ns for p in folder.rglob("*.html")}


def _add_script_task(project: Project) -> None:
    scripts = project.root / "ingestion_scripts"
    scripts.mkdir(exist_ok=True)
    (scripts / "pull.py").write_text('"""Pulls the orders from the shop API, newest first."""\n', encoding="utf-8")
    with project.open_db().write() as conn:
        pid = conn.execute(
            sa.select(t.cfg_pipelines.c.pipeline_id).where(t.cfg_pipelines.c.pipeline_code == "p0000")
        ).scalar_one()
        task_id = conn.execute(
            t.cfg_tasks.insert().values(task_code="pull", task_type="INGESTION", pipeline_id=pid, handler="PYTHON")
            .returning(t.cfg_tasks.c.task_id)
        ).scalar_one()  # fmt: skip
        conn.execute(
            t.cfg_task_parameters.insert(),
            [
                {"task_id": task_id, "parameter_name": "SCRIPT_NAME", "parameter_value": "pull.py"},
                {"task_id": task_id, "parameter_name": "API_TOKEN", "parameter_value": "s3cr3t-value-xyz"},
            ],
        )


def test_pages_mask_secrets_show_scripts_and_rebuild_only_what_changed(project: Project) -> None:
    seed_catalog(project.open_db(), 4, 2, 3)
    _add_script_task(project)
    site = project.root / "site"
    first = run_cli("--config", str(project.config_path), "generate-docs", "--output", str(site), "--format", "json")
    assert first.returncode == 0, first
    built = first.json()
    assert built["schema"] == "etl-craft/catalog-build/1"
    pages = sorted(p for p in built["written"] if p.endswith(".html"))
    assert pages == sorted(["index.html", *(f"pipelines/p{i:04d}.html" for i in range(4)),
                            *(f"tables/mart.p{pid}_t{k:02d}.html" for pid in range(1, 5) for k in range(2))])  # fmt: skip
    page = (site / "pipelines/p0000.html").read_text(encoding="utf-8")
    assert "s3cr3t-value-xyz" not in page and "<td>API_TOKEN</td><td><code>***</code>" in page
    assert "Pulls the orders from the shop API, newest first." in page
    assert "s3cr3t" not in (site / "assets/search-index.js").read_text(encoding="utf-8")
    assert json.loads((site / "manifest.json").read_text())["pages"].keys() >= set(pages)
    before = _mtimes(site)

    with project.open_db().write() as conn:
        conn.execute(
            t.cfg_pipelines.update()
            .where(t.cfg_pipelines.c.pipeline_code == "p0002")
            .values(description="a new description")
        )
    second = run_cli("--config", str(project.config_path), "generate-docs", "--output", str(site), "--format", "json")
    assert second.returncode == 0, second
    assert [p for p in second.json()["written"] if p.endswith(".html")] == ["pipelines/p0002.html"]
    after = _mtimes(site)
    assert {p for p in before if before[p] != after[p]} == {"pipelines/p0002.html"}
    assert "a new description" in (site / "pipelines/p0002.html").read_text(encoding="utf-8")

    third = run_cli("--config", str(project.config_path), "generate-docs", "--output", str(site))
    assert third.returncode == 0 and "wrote 0 page(s)" in third.stdout, third


def test_a_folder_it_did_not_write_is_refused_and_strict_writes_nothing(project: Project) -> None:
    seed_catalog(project.open_db(), 1, 1, 0)
    foreign = project.root / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep me", encoding="utf-8")
    refused = run_cli("--config", str(project.config_path), "generate-docs", "--output", str(foreign))
    assert refused.returncode == 2 and ".etl-craft-catalog" in refused.stderr, refused
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.txt"]
    strict = run_cli(
        "--config", str(project.config_path), "generate-docs", "--output", str(project.root / "s"), "--strict"
    )
    assert strict.returncode == 1, strict
    assert "column lineage unavailable: p0000.t00" in strict.stderr
    assert not (project.root / "s").exists()


def test_docs_version_records_a_version_only_when_the_text_changes(project: Project) -> None:
    seed_catalog(project.open_db(), 1, 2, 0)
    check = run_cli("--config", str(project.config_path), "docs-version", "--check")
    assert check.returncode == 0 and check.stdout.splitlines()[1:] == ["p0000\tt00\t1\tyes", "p0000\tt01\t1\tyes"], (
        check
    )
    first = run_cli("--config", str(project.config_path), "docs-version")
    assert first.stdout == check.stdout
    with project.open_db().write() as conn:
        conn.execute(
            t.cfg_task_parameters.update()
            .where(t.cfg_task_parameters.c.parameter_name == "DOCUMENTATION",
                   t.cfg_task_parameters.c.parameter_value.like("Builds t01%"))
            .values(parameter_value="Builds t01, now from two sources.")
        )  # fmt: skip
    second = run_cli("--config", str(project.config_path), "docs-version", "--format", "json")
    assert [(v["task_code"], v["version"], v["changed"]) for v in second.json()["tasks"]] == [
        ("t00", 1, False),
        ("t01", 2, True),
    ]
    with project.open_db().read() as conn:
        rows = conn.execute(sa.select(t.aud_task_documentation.c.version, t.aud_task_documentation.c.documentation)
                            .order_by(t.aud_task_documentation.c.task_documentation_id)).all()  # fmt: skip
    assert [r.version for r in rows] == [1, 1, 2] and rows[-1].documentation == "Builds t01, now from two sources."
