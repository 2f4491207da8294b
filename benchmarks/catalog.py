"""generate-docs at scale on PostgreSQL: build time, statements, and the incremental rebuild.

A throwaway PostgreSQL database gets a catalog-shaped Engine DB (benchmarks.catalog_seed). Measured
in the same run: the baseline, 10 pipelines x 2 tasks x 1 run; the large size (default 60 x 10 x 20,
reduced so it runs on a loaded machine; --full gives the plan's 300 x 10 x 50); then a rebuild after
one pipeline's description changed. Reported: each build's seconds and statement count (equal
counts are the point), pages written, and the rebuild's pages. Results: release/benchmarks/catalog.json.

    uv run python -m benchmarks.catalog [--full] [--pipelines P --tasks T --runs R]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from benchmarks import machine
from benchmarks.catalog_seed import seed_catalog
from benchmarks.server import PG, RESULTS, postgres_problem, throwaway_database
from etl_craft.config.loader import load_config
from etl_craft.core.actor import current_actor
from etl_craft.engine.database import open_engine_db
from etl_craft.engine.schema import migrations
from etl_craft.engine.schema import tables as t
from etl_craft.services.catalog import generate_docs
from etl_craft.services.context import OperationContext

NOTE = (
    "run on a shared 2-CPU machine with other builds (see load_average_1m): compare the two sizes, not absolute seconds"
)


def _context(folder: Path, database: str) -> OperationContext:
    config_path = folder / "craft-connector.yml"
    config_path.write_text(
        "Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n"
        f"Engine:\n  jdbc_url: jdbc:postgresql://{PG['host']}:{PG['port']}/{database}\n"
        f"  schema: public\n  user: {PG['user']}\n"
    )
    config = load_config(config_path, {})
    db = open_engine_db(config)
    migrations.init_db(db)
    return OperationContext(config, db, current_actor())


def _build(ctx: OperationContext, output: Path) -> dict[str, Any]:
    statements = 0

    def count(*_: Any) -> None:
        nonlocal statements
        statements += 1

    sa.event.listen(ctx.db.engine, "before_cursor_execute", count)
    started = time.perf_counter()
    try:
        built = generate_docs(ctx, output, strict=False)
    finally:
        sa.event.remove(ctx.db.engine, "before_cursor_execute", count)
    return {
        "seconds": round(time.perf_counter() - started, 3),
        "statements": statements,
        "pages": built.pages,
        "pages_written": len([p for p in built.written if p.endswith(".html")]),
    }


def measure(size: tuple[int, int, int]) -> dict[str, Any]:
    result: dict[str, Any] = {
        "machine": machine(),
        "note": NOTE,
        "size": dict(zip(("pipelines", "tasks", "runs"), size, strict=True)),
    }
    with tempfile.TemporaryDirectory() as work:
        for label, shape in (("baseline", (10, 2, 1)), ("large", size)):
            with throwaway_database() as database:
                folder = Path(work) / label
                folder.mkdir()
                ctx = _context(folder, database)
                try:
                    seeded = time.perf_counter()
                    seed_catalog(ctx.db, *shape)
                    result[f"{label}_seed_seconds"] = round(time.perf_counter() - seeded, 1)
                    result[label] = _build(ctx, folder / "site")
                    if label == "large":
                        with ctx.db.write() as conn:
                            conn.execute(
                                t.cfg_pipelines.update()
                                .where(t.cfg_pipelines.c.pipeline_code == "p0001")
                                .values(description="changed")
                            )
                        result["rebuild_after_one_change"] = _build(ctx, folder / "site")
                finally:
                    ctx.close()
    result["same_statement_count"] = result["baseline"]["statements"] == result["large"]["statements"]
    return result


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.catalog", description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the plan's size: 300 pipelines x 10 tasks x 50 runs")
    parser.add_argument("--pipelines", type=int, default=60)
    parser.add_argument("--tasks", type=int, default=10)
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    if problem := postgres_problem():
        raise SystemExit(problem)
    size = (300, 10, 50) if args.full else (args.pipelines, args.tasks, args.runs)
    result = measure(size)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "catalog.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
