"""SCD1_MERGE and SCD2_MERGE against hand-written set-based SQL, on every warehouse that runs here.

For each warehouse: a source of N rows is loaded into two pairs of targets (one pair per action),
then 10% of the source rows change. Each round times the hand-written UPDATE ... FROM (MERGE on Trino
and Databricks) plus INSERT of that change and the etl-craft action doing the same, in alternating
order, and reports the median ratio etl-craft / hand-written. Results go to
release/benchmarks/merge-<rows>.json.

Trino and Databricks run on their DuckDB emulation (tests/fixtures/emulation.py: each statement
parsed with sqlglot's dialect, translated and run on DuckDB); the hand-written SQL goes through the
same translation, so the ratio compares the two on the same engine. Snowflake runs on a fakesnow
server (the compliance suite's SnowflakeProvision: DuckDB behind Snowflake's HTTP protocol), both
sides through the real snowflake-connector-python. These ratios say little about the real
services: report them, don't tune for them.

    uv run python -m benchmarks.merge [--rows 1000000] [--rounds 4] [--warehouse NAME ...]
"""

from __future__ import annotations

import argparse
import functools
import json
import logging
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import sqlalchemy as sa

from benchmarks import machine
from etl_craft.config.loader import load_config
from etl_craft.core.enums import Handler, TriggerKind
from etl_craft.engine.database import EngineDb, open_engine_db
from etl_craft.engine.schema import migrations
from etl_craft.engine.schema import tables as t
from etl_craft.handlers.context import TaskContext

TARGET_RATIO = 1.5
PG: dict[str, Any] = {
    "host": os.environ.get("ETL_CRAFT_TEST_PG_HOST", "127.0.0.1"),
    "port": int(os.environ.get("ETL_CRAFT_TEST_PG_PORT", "5432")),
    "user": os.environ.get("ETL_CRAFT_TEST_PG_USER", "postgres"),
}


# The emulated warehouses: (sqlglot dialect, the emulation's variable, jdbc_url, the section's login).
EMULATED = {
    "trino": ("trino", "ETL_CRAFT_TRINO_EMULATION_FILE", "jdbc:trino://127.0.0.1:8080/iceberg", "  user: bench\n"),
    "databricks": (
        "databricks",
        "ETL_CRAFT_DATABRICKS_EMULATION_FILE",
        "jdbc:databricks://bench.cloud.databricks.com/lake?httpPath=/sql/1.0/warehouses/bench",
        "  user: token\n  auth_mode: token\n  secret: ETL_CRAFT_BENCH_TOKEN\n",
    ),
}
WAREHOUSES = ("postgres", "duckdb", *EMULATED, "snowflake")


class Warehouse:
    """A plain connection to run the benchmark's own SQL (setup and the hand-written baseline)."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind = kind
        self.database = f"etlc_bench_{uuid.uuid4().hex[:8]}" if kind == "postgres" else None
        self.path = root / "warehouse.duckdb"
        self.servers = ExitStack()  # the fakesnow server, stopped by drop()
        self.snowflake_url = ""
        if kind == "snowflake":
            from etl_craft_warehouses.provision import SnowflakeProvision

            self.provision = SnowflakeProvision()
            problem = self.provision.problem()
            if problem:
                raise SystemExit(f"merge benchmark: snowflake: {problem}")
            self.snowflake_url = self.servers.enter_context(self.provision.warehouse(root))
        if kind in EMULATED:
            from tests.fixtures import emulation

            emulation.install()
            _sqlglot, variable, url, _login = EMULATED[kind]
            self.path = root / f"{url.split('/')[3].split('?')[0]}.duckdb"  # the catalog names the file
            os.environ[variable] = str(self.path)
            os.environ.setdefault("ETL_CRAFT_BENCH_TOKEN", "bench")
        if self.database:
            with psycopg.connect(**PG, dbname="postgres", autocommit=True) as conn:
                conn.execute(f"CREATE DATABASE {self.database}")

    @property
    def jdbc_url(self) -> str:
        if self.kind == "postgres":
            return f"jdbc:postgresql://{PG['host']}:{PG['port']}/{self.database}"
        if self.kind in EMULATED:
            return EMULATED[self.kind][2]
        if self.kind == "snowflake":
            return self.snowflake_url
        return f"jdbc:duckdb:{self.path}"

    def section(self) -> str:
        if self.kind == "snowflake":
            return self.provision.section(self.snowflake_url)
        extra = f"  schema: public\n  user: {PG['user']}\n" if self.kind == "postgres" else ""
        if self.kind in EMULATED:
            extra = f"  schema: main\n{EMULATED[self.kind][3]}"
        return f"Warehouse:\n  jdbc_url: {self.jdbc_url}\n{extra}"

    def hand(self, *statements: str) -> None:
        """The hand-written baseline: in the warehouse's own SQL, translated as the emulation translates."""
        if self.kind not in EMULATED:
            self.run(*statements)
            return
        from tests.fixtures import emulation

        with duckdb.connect(str(self.path)) as conn:  # autocommit, as the emulated warehouses
            conn.execute("SET TimeZone = 'UTC'")
            for sql in statements:
                conn.execute(emulation.to_duckdb(sql, EMULATED[self.kind][0]))

    def run(self, *statements: str) -> None:
        """The statements in one transaction."""
        if self.kind == "snowflake":
            # Each statement commits on its own: Snowflake's DDL commits an open transaction anyway,
            # and fakesnow's server stops answering a CREATE SCHEMA sent inside BEGIN (the connector
            # then retries until its timeout). The benchmark's own setup needs no atomicity.
            conn = self.provision.connect(self.snowflake_url)
            try:
                cursor = conn.cursor()
                for sql in statements:
                    cursor.execute(sql)
            finally:
                conn.close()
            return
        if self.kind == "postgres":
            with psycopg.connect(**PG, dbname=self.database) as conn:
                conn.execute("SET TIME ZONE 'UTC'")
                for sql in statements:
                    conn.execute(sql)
                conn.commit()
            return
        with duckdb.connect(str(self.path)) as conn:
            conn.begin()
            for sql in statements:
                conn.execute(sql)
            conn.commit()

    def settle(self, *statements: str) -> None:
        """PostgreSQL: run maintenance statements outside a transaction, then write every dirty page out.

        Before each timed step, so neither side pays for the other's dirty pages, autovacuum or the
        hint bits a first reader of fresh rows sets (DuckDB has none of these effects to settle).
        """
        if self.kind != "postgres":
            return
        with psycopg.connect(**PG, dbname=self.database, autocommit=True) as conn:
            for sql in (*statements, "CHECKPOINT"):
                conn.execute(sql)

    def series(self, rows: int) -> str:
        if self.kind == "postgres":
            return f"generate_series(1, {rows}) AS g(i)"
        return f"range(1, {rows + 1}) AS g(i)"

    def drop(self) -> None:
        self.servers.close()
        if self.database:
            with psycopg.connect(**PG, dbname="postgres", autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {self.database} WITH (FORCE)")


class Bench:
    """A throwaway project: SQLite Engine DB, the warehouse, and the rows an attempt needs."""

    def __init__(self, root: Path, warehouse: Warehouse) -> None:
        self.root = root
        self.warehouse = warehouse
        config = root / "craft-connector.yml"
        config.write_text(
            "Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n"
            "Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n  schema: main\n" + warehouse.section(),
            encoding="utf-8",
        )
        self.config = load_config(config, dict(os.environ))
        self.db: EngineDb = open_engine_db(self.config, create=True)
        migrations.init_db(self.db)
        with self.db.write() as conn:
            self.pipeline_id = conn.execute(
                t.cfg_pipelines.insert()
                .values(pipeline_code="bench", pipeline_name="Bench", refresh_type="FULL")
                .returning(t.cfg_pipelines.c.pipeline_id)
            ).scalar_one()
        self.run_id = 0

    def run_task(self, code: str, parameters: dict[str, str]) -> None:
        from etl_craft.handlers import sql

        with self.db.write() as conn:
            conn.execute(
                t.aud_pipelines_run_log.update()
                .where(t.aud_pipelines_run_log.c.status == "IN-PROGRESS")
                .values(status="SUCCESS")
            )
            self.run_id = conn.execute(
                t.aud_pipelines_run_log.insert()
                .values(pipeline_id=self.pipeline_id, status="IN-PROGRESS", run_date=date.today())
                .returning(t.aud_pipelines_run_log.c.pipeline_run_id)
            ).scalar_one()
            task_id = conn.execute(
                t.cfg_tasks.insert()
                .values(task_code=f"{code}_{self.run_id}", task_type="ETL", pipeline_id=self.pipeline_id, handler="SQL")
                .returning(t.cfg_tasks.c.task_id)
            ).scalar_one()
            task_run_id = conn.execute(
                t.aud_task_run_log.insert()
                .values(task_id=task_id, pipeline_run_id=self.run_id, status="IN-PROGRESS")
                .returning(t.aud_task_run_log.c.task_run_id)
            ).scalar_one()
            attempt_id = conn.execute(
                t.aud_task_attempts.insert()
                .values(task_run_id=task_run_id, attempt_number=1, status="RUNNING", owner_id="bench")
                .returning(t.aud_task_attempts.c.attempt_id)
            ).scalar_one()
        ctx = TaskContext(
            config=self.config,
            engine_db=self.db,
            log=logging.getLogger("etl_craft.task.bench"),
            pipeline_id=self.pipeline_id,
            pipeline_code="bench",
            refresh_type="FULL",
            pipeline_run_id=self.run_id,
            run_key=f"bench:{self.run_id}",
            run_date=date.today(),
            trigger_kind=TriggerKind.MANUAL,
            task_id=task_id,
            task_code=code,
            task_type="ETL",
            handler=Handler.SQL,
            task_run_id=task_run_id,
            attempt_id=attempt_id,
            attempt_number=1,
            owner_id="bench",
            parameters=parameters,
        )
        sql.run(ctx)
        with self.db.write() as conn:
            conn.execute(
                t.aud_task_attempts.update()
                .where(t.aud_task_attempts.c.attempt_id == attempt_id)
                .values(status="SUCCESS")
            )

    def close(self) -> None:
        self.db.dispose()


def timed(work: Callable[[], None]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def merge_params(action: str, target: str) -> dict[str, str]:
    return {
        "SQL_ACTION": action,
        "TARGET_OBJECT": target,
        "MERGE_KEY": "id",
        "MERGE_COMPARE_COLUMNS": "name|amount|updated",
        "SOURCE_SQL": "SELECT id, name, amount, updated FROM bench.source",
    }


# The hand-written baseline maintains the same columns as etl-craft (business values, HASH_KEY, update
# stamps and the executing identities), so both sides write rows of the same width.
HAND_CHANGED = (
    "(t.name IS DISTINCT FROM s.name OR t.amount IS DISTINCT FROM s.amount OR t.updated IS DISTINCT FROM s.updated)"
)
HAND_COLUMNS = (
    "id, name, amount, updated, row_id, pipeline_id, pipeline_run_id, task_run_id, hash_key,"
    " create_date, created_by, update_date, updated_by, delete_flag"
)


def hand_hash(kind: str) -> str:
    text = "STRING" if kind == "databricks" else "VARCHAR"
    joined = (
        f"COALESCE(s.name, '') || '|' || COALESCE(CAST(s.amount AS {text}), '')"
        f" || '|' || COALESCE(CAST(s.updated AS {text}), '')"
    )
    return f"lower(to_hex(md5(to_utf8({joined}))))" if kind == "trino" else f"md5({joined})"


def _hand_values(kind: str, table: str) -> str:
    return (
        f"s.id, s.name, s.amount, s.updated, (SELECT COALESCE(MAX(row_id), 0) FROM {table}) + ROW_NUMBER() OVER (),"
        f" 1, 9, 9, {hand_hash(kind)}, CURRENT_TIMESTAMP, 'bench', CURRENT_TIMESTAMP, 'bench', 'N'"
    )


def _hand_update(kind: str, table: str, sets: str, condition: str) -> str:
    """UPDATE ... FROM, or MERGE where the warehouse has no UPDATE ... FROM (Trino, Databricks)."""
    if kind in EMULATED:
        return (
            f"MERGE INTO {table} AS t USING bench.source AS s ON t.id = s.id"
            f" WHEN MATCHED AND {condition} THEN UPDATE SET {sets}"
        )
    return f"UPDATE {table} AS t SET {sets} FROM bench.source AS s WHERE t.id = s.id AND {condition}"


def hand_scd1(wh: Warehouse) -> None:
    sets = (
        f"name = s.name, amount = s.amount, updated = s.updated, hash_key = {hand_hash(wh.kind)},"
        " update_date = CURRENT_TIMESTAMP, updated_by = 'bench', delete_flag = 'N',"
        " pipeline_id = 1, pipeline_run_id = 9, task_run_id = 9"
    )
    wh.hand(
        _hand_update(wh.kind, "bench.hand_scd1", sets, HAND_CHANGED),
        f"INSERT INTO bench.hand_scd1 ({HAND_COLUMNS}) SELECT {_hand_values(wh.kind, 'bench.hand_scd1')}"
        " FROM bench.source AS s WHERE NOT EXISTS (SELECT 1 FROM bench.hand_scd1 t WHERE t.id = s.id)",
    )


def hand_scd2(wh: Warehouse) -> None:
    sets = (
        "active_flag = 'N', update_date = CURRENT_TIMESTAMP, updated_by = 'bench',"
        " pipeline_id = 1, pipeline_run_id = 9, task_run_id = 9"
    )
    wh.hand(
        _hand_update(wh.kind, "bench.hand_scd2", sets, f"t.active_flag = 'Y' AND {HAND_CHANGED}"),
        f"INSERT INTO bench.hand_scd2 ({HAND_COLUMNS}, active_flag) SELECT {_hand_values(wh.kind, 'bench.hand_scd2')},"
        " 'Y' FROM bench.source AS s"
        " WHERE NOT EXISTS (SELECT 1 FROM bench.hand_scd2 t WHERE t.id = s.id AND t.active_flag = 'Y')",
    )


def bench_warehouse(kind: str, rows: int, rounds: int, changed: float) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="etl-craft-bench-") as folder:
        wh = Warehouse(kind, Path(folder))
        try:
            bench = Bench(Path(folder), wh)
            source = (
                f"SELECT CAST(i AS BIGINT) AS id, CAST('name ' || CAST(i AS VARCHAR) AS VARCHAR(40)) AS name,"
                f" CAST(i % 1000 AS DECIMAL(12,2)) AS amount, DATE '2026-01-01' AS updated FROM {wh.series(rows)}"
            )
            wh.run("CREATE SCHEMA bench", f"CREATE TABLE bench.source AS {source}")
            for action, table in (("SCD1_MERGE", "bench.etl_scd1"), ("SCD2_MERGE", "bench.etl_scd2")):
                setup = {"SQL_ACTION": "SETUP_TABLE", "TARGET_OBJECT": table, "SETUP_FOR": action}
                bench.run_task("setup", {**setup, "SOURCE_SQL": merge_params(action, table)["SOURCE_SQL"]})
                bench.run_task("load", merge_params(action, table))
            # The baseline starts from a copy of the same first load: same columns, same rows.
            wh.run(
                "CREATE TABLE bench.hand_scd1 AS SELECT * FROM bench.etl_scd1",
                "CREATE TABLE bench.hand_scd2 AS SELECT * FROM bench.etl_scd2",
            )
            # Both sides start from vacuumed, analyzed tables.
            wh.settle(*(f"VACUUM ANALYZE bench.{name}" for name in ("etl_scd1", "etl_scd2", "hand_scd1", "hand_scd2")))
            timings: dict[str, list[tuple[float, float]]] = {"SCD1_MERGE": [], "SCD2_MERGE": []}
            step = max(1, round(1 / changed))
            for index in range(rounds):
                # A different tenth of the rows changes each round.
                wh.run(
                    "UPDATE bench.source SET name = name || '+', amount = amount + 1"
                    f" WHERE id % {step} = {index % step}"
                )
                wh.settle("VACUUM ANALYZE bench.source")
                for action, table, hand in (
                    ("SCD1_MERGE", "bench.etl_scd1", hand_scd1),
                    ("SCD2_MERGE", "bench.etl_scd2", hand_scd2),
                ):
                    params = merge_params(action, table)
                    pair: list[float] = [0.0, 0.0]
                    order = [0, 1] if index % 2 == 0 else [1, 0]
                    work: list[Callable[[], None]] = [
                        functools.partial(bench.run_task, "merge", params),
                        functools.partial(hand, wh),
                    ]
                    for which in order:
                        wh.settle()
                        pair[which] = timed(work[which])
                    timings[action].append((pair[0], pair[1]))
            bench.close()
        finally:
            wh.drop()
    results = []
    for action, pairs in timings.items():
        ratio = statistics.median(e / h for e, h in pairs)
        results.append(
            {
                "warehouse": kind,
                "action": action,
                "rows": rows,
                "changed_rows_per_round": rows // step,
                "rounds": rounds,
                "etl_craft_seconds": [round(e, 4) for e, _ in pairs],
                "hand_written_seconds": [round(h, 4) for _, h in pairs],
                "ratio": round(ratio, 3),
                "target_ratio": TARGET_RATIO,
                "within_target": ratio <= TARGET_RATIO,
            }
        )
    return results


def postgres_available() -> bool:
    try:
        with psycopg.connect(**PG, dbname="postgres", connect_timeout=5) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error:
        return False
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.merge", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--rows", type=int, default=1_000_000, help="1,000,000 is the full size; less on a loaded machine"
    )
    parser.add_argument("--rounds", type=int, default=4, help="even, so each side goes first equally often")
    parser.add_argument("--changed", type=float, default=0.1, help="fraction of rows changed per round")
    parser.add_argument(
        "--warehouse", action="append", choices=WAREHOUSES, help="repeatable; every warehouse by default"
    )
    parser.add_argument("--note", default="", help="recorded with the results, e.g. why the size was reduced")
    parser.add_argument("--output", type=Path, help="the JSON file (default release/benchmarks/merge-<rows>.json)")
    args = parser.parse_args(argv)
    kinds = args.warehouse or list(WAREHOUSES)
    results: list[dict[str, Any]] = []
    skipped = []
    for kind in kinds:
        if kind == "postgres" and not postgres_available():
            skipped.append("postgres: no server at {host}:{port}".format(**PG))
            continue
        results += bench_warehouse(kind, args.rows, args.rounds, args.changed)
    import sqlglot

    document = {
        "schema": "etl-craft/benchmark/1",
        "benchmark": "merge",
        "created_at": datetime.now(UTC).isoformat(),
        "machine": machine(),
        "versions": {
            "duckdb": duckdb.__version__,
            "psycopg": psycopg.__version__,
            "sqlalchemy": sa.__version__,
            "sqlglot": sqlglot.__version__,
        },
        "note": args.note,
        "results": results,
        "skipped": skipped,
    }
    output = args.output or Path(__file__).resolve().parents[1] / "release" / "benchmarks" / f"merge-{args.rows}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    for r in results:
        print(f"{r['warehouse']:8} {r['action']:10} ratio {r['ratio']:.2f} (target {TARGET_RATIO})")
    for s in skipped:
        print(f"skipped {s}")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
