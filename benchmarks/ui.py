"""The web UI's pipeline page at 50 tasks x 25 runs on a PostgreSQL Engine DB.

A throwaway PostgreSQL database holds two pipelines written straight into the Engine DB
(tests/fixtures/grid_seed.py): `wide`, 50 tasks (a chain, every third task also on the first) with
25 ended runs, and `small`, 2 tasks with 1 run, the baseline measured in the same run. The UI app is
served in-process through FastAPI's test client (no sockets), signed in as a viewer. Measured: the
server time of `GET /ui/pipelines/{code}?runs=25` (page: the task graph laid out and drawn, and the
grid) and of its grid alone, R requests each after a warm-up, and the Engine DB statements each
sends. The plan's budget (the wide page under 300 ms) is reported with whether it was met, never
asserted. Results go to release/benchmarks/ui.json.

    uv run python -m benchmarks.ui [--requests 30] [--tasks 50] [--runs 25]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import machine
from benchmarks.server import PG, RESULTS, postgres_problem, summary, throwaway_database

BUDGET_MS = 300.0
PASSWORD = "a long benchmark passphrase"


def _measure(client: Any, path: str, requests: int) -> tuple[list[float], int]:
    from tests.fixtures.grid_seed import counted_statements

    for _ in range(3):  # warm-up: templates compiled, statements cached, connections pooled
        assert client.get(path).status_code == 200
    seconds = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(path)
        seconds.append(time.perf_counter() - started)
        assert response.status_code == 200, response.text[:500]
    with counted_statements(client.app.state.api.db) as seen:
        client.get(path)
    return seconds, len(seen)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ui", description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=30)
    parser.add_argument("--tasks", type=int, default=50)
    parser.add_argument("--runs", type=int, default=25)
    args = parser.parse_args(argv)
    problem = postgres_problem()
    if problem:
        raise SystemExit(f"benchmarks.ui needs PostgreSQL: {problem}")

    from fastapi.testclient import TestClient

    from etl_craft.config.loader import load_config
    from etl_craft.core.actor import Actor, acting_as
    from etl_craft.core.enums import ActorKind
    from etl_craft.engine.database import open_engine_db
    from etl_craft.engine.schema import migrations
    from etl_craft.services.access.users import create_user
    from etl_craft.services.context import OperationContext
    from etl_craft_server.api.app import create_app
    from tests.fixtures.grid_seed import wide_pipeline

    results: dict[str, Any] = {}
    with throwaway_database() as database, tempfile.TemporaryDirectory() as folder:
        config_path = Path(folder) / "craft-connector.yml"
        config_path.write_text(
            "Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n"
            f"Engine:\n  jdbc_url: jdbc:postgresql://{PG['host']}:{PG['port']}/{database}\n"
            f"  schema: public\n  user: {PG['user']}\n"
        )
        config = load_config(config_path)
        db = open_engine_db(config, create=True)
        migrations.init_db(db)
        admin = Actor("benchmark@ui", ActorKind.HUMAN)
        with acting_as(admin):
            create_user(OperationContext(config=config, db=db, actor=admin), "viewer", "viewer", PASSWORD)
        wide_pipeline(db, "wide", args.tasks, args.runs)
        wide_pipeline(db, "small", 2, 1)
        client = TestClient(create_app(config, db), base_url="http://bench")
        form = client.get("/ui/sign-in").text
        token = form.split('name="form_token" value="', 1)[1].split('"', 1)[0]
        signed = client.post(
            "/ui/sign-in",
            data={"user_name": "viewer", "password": PASSWORD, "form_token": token},
            follow_redirects=False,
        )
        assert signed.status_code == 303, signed.text
        for name in ("small", "wide"):
            for kind, path in (
                ("page", f"/ui/pipelines/{name}?runs=25"),
                ("grid", f"/ui/pipelines/{name}/grid?runs=25"),
            ):
                seconds, statements = _measure(client, path, args.requests)
                results[f"{name}_{kind}"] = {**summary(seconds), "statements": statements}
        client.close()
        db.engine.dispose()
    wide, small = results["wide_page"], results["small_page"]
    report = {
        "benchmark": "ui",
        "machine": machine(),
        "note": "measured while other work ran on this 2-CPU machine (see load_average_1m); the ratio "
        "to the small page of the same run is the steadier number",
        "tasks": args.tasks,
        "runs": args.runs,
        "requests": args.requests,
        "results": results,
        "ratio_wide_to_small_p50": round(wide["p50_ms"] / small["p50_ms"], 2),
        "budget": {"wide_page_p50_ms_under": BUDGET_MS, "met": wide["p50_ms"] < BUDGET_MS},
        "same_statements_whatever_the_size": wide["statements"] == small["statements"],
    }
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "ui.json").write_text(json.dumps(report, indent=2) + "\n")
    for key, value in results.items():
        print(f"{key:12} p50 {value['p50_ms']} ms  p99 {value['p99_ms']} ms  {value['statements']} statements")
    print(f"budget: wide page p50 under {BUDGET_MS} ms: {'met' if report['budget']['met'] else 'NOT met'}")
    return report


if __name__ == "__main__":
    main()
