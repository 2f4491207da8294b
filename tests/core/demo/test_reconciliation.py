"""Reconciliation of the demo: every source record lands once, every ticket is in the fact or rejected.

The source side is read here straight from the bundled files (both batches), independently of the
demo's ingestion scripts; the warehouse side is read from the project the demo wrote.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable

import duckdb
import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.core.demo.conftest import DemoRun

pytestmark = [pytest.mark.sqlite, pytest.mark.duckdb]

CLIENTS = ("alpha", "beta", "gamma")
LANDING = {"alpha": "lnd.alpha_documents", "beta": "lnd.beta_events", "gamma": "lnd.gamma_rows"}


def _source_files(client: str) -> Iterator[Traversable]:
    demo = resources.files("etl_craft").joinpath("demo")
    for batch in ("project", "batch2"):
        folder = demo.joinpath(batch, "sources", client)
        yield from sorted(folder.iterdir(), key=lambda f: f.name)


def source_records(client: str) -> list[str]:
    """The ticket key of every record the client delivered, one per record, in both batches."""
    keys: list[str] = []
    for file in _source_files(client):
        if client == "alpha":
            keys += [doc["_id"] for doc in json.loads(file.read_text(encoding="utf-8"))["documents"]]
        elif client == "beta":
            lines = file.read_text(encoding="utf-8").splitlines()
            keys += [f"B-{json.loads(line)['ticket']['id']}" for line in lines if line.strip()]
        else:
            text = gzip.decompress(file.read_bytes()).decode("utf-8")
            keys += [row["ticket_number"] for row in csv.DictReader(io.StringIO(text))]
    return keys


def _rejected(demo_run: DemoRun, client: str) -> set[str]:
    results, rules = t.aud_business_rules_results, t.cfg_business_rules
    rows = demo_run.engine_rows(
        sa.select(results.c.business_rule_key)
        .join(rules, rules.c.business_rule_id == results.c.business_rule_id)
        .where(
            results.c.status == "REJECT",
            results.c.active_flag == "Y",
            results.c.target_table == f"stg.{client}_tickets",
        )
        .distinct()
    )
    return {r.business_rule_key for r in rows}


@pytest.mark.parametrize("client", CLIENTS)
def test_distinct_source_tickets_are_the_active_fact_rows_plus_the_rejected_ones(
    demo_run: DemoRun, client: str
) -> None:
    assert demo_run.result.returncode == 0, str(demo_run.result)
    tickets = set(source_records(client))
    rejected = _rejected(demo_run, client)
    with duckdb.connect(str(demo_run.folder / "warehouse.duckdb"), read_only=True) as conn:
        active = {
            key
            for (key,) in conn.execute(
                "SELECT ticket_key FROM dm.ticket_fact WHERE ACTIVE_FLAG = 'Y' AND client = ?", [client.upper()]
            ).fetchall()
        }
        twice = conn.execute(
            "SELECT ticket_key FROM dm.ticket_fact WHERE ACTIVE_FLAG = 'Y' GROUP BY ticket_key HAVING COUNT(*) > 1"
        ).fetchall()
        published = {
            key
            for (key,) in conn.execute(
                "SELECT ticket_key FROM dq.rejected_tickets WHERE checked_table = ?", [f"stg.{client}_tickets"]
            ).fetchall()
        }
    assert rejected, "the demo data breaks some rules on purpose"
    assert len(tickets) == len(active) + len(rejected)
    assert active | rejected == tickets and not active & rejected
    assert twice == []
    assert published == rejected


@pytest.mark.parametrize("client", CLIENTS)
def test_the_second_batch_adds_no_duplicates_in_landing_or_persisted_layers(demo_run: DemoRun, client: str) -> None:
    records = source_records(client)
    landing = LANDING[client]
    second_batch_runs = [
        r["pipeline_run_id"]
        for r in demo_run.document["runs"]
        if r["batch"] == 2 and r["pipeline_code"] == f"client_{client}"
    ]
    batch2_files = {
        f.name for f in resources.files("etl_craft").joinpath("demo", "batch2", "sources", client).iterdir()
    }
    with duckdb.connect(str(demo_run.folder / "warehouse.duckdb"), read_only=True) as conn:

        def one(sql: str, *params: object) -> tuple[object, ...]:
            return tuple(conn.execute(sql, list(params)).fetchone() or ())

        # Every delivered record landed exactly once: the second batch read only the new files.
        assert one(f"SELECT COUNT(*), COUNT(DISTINCT (source_file, source_position)) FROM {landing}") == (
            len(records),
            len(records),
        )
        files_of_batch2 = {
            name
            for (name,) in conn.execute(
                f"SELECT DISTINCT source_file FROM {landing} WHERE PIPELINE_RUN_ID = ?", second_batch_runs
            ).fetchall()
        }
        assert files_of_batch2 == batch2_files
        # The persisted layer: one active version per ticket, and no version that repeats the one before it.
        table = f"prs.{client}_tickets"
        assert one(f"SELECT COUNT(DISTINCT ticket_key), SUM(CASE WHEN ACTIVE_FLAG = 'Y' THEN 1 END) FROM {table}") == (
            len(set(records)),
            len(set(records)),
        )
        repeats = conn.execute(
            f"""
            SELECT ticket_key FROM (
                SELECT ticket_key, HASH_KEY, LAG(HASH_KEY) OVER (PARTITION BY ticket_key ORDER BY ROW_ID) AS before
                FROM {table}
            ) WHERE HASH_KEY = before
            """
        ).fetchall()
        assert repeats == []
        assert one(f"SELECT COUNT(*) FROM {table}")[0] <= len(records)  # type: ignore[operator]
