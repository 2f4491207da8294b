"""`GET /metrics` parsed with prometheus-client's own parser over a scripted scenario: known runs, a
LOST attempt, a retry, a queued attempt, an expired lease, a gate wait and a purge."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from etl_craft.core.clock import utc_now
from etl_craft.engine.schema import tables as t
from tests.fixtures.seed import _insert
from tests.server.api.conftest import Api


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def test_metrics_carry_the_scenario(fresh_api: Api) -> None:
    db = fresh_api.ctx.db
    now = utc_now()
    with db.read() as conn:
        sales = conn.execute(sa.select(t.cfg_pipelines.c.pipeline_id)).scalar_one()
        tasks = dict(conn.execute(sa.select(t.cfg_tasks.c.task_code, t.cfg_tasks.c.task_id)).tuples().all())
    with db.write() as conn:

        def run(status: str, started: object = now) -> int:
            return _insert(conn, t.aud_pipelines_run_log, pipeline_id=sales, status=status, start_date=started)  # type: ignore[return-value]

        old = run("SUCCESS", now - timedelta(days=500))  # the purge removes it
        done, failed, running = run("SUCCESS"), run("FAILED"), run("IN-PROGRESS")
        lost_tr = _insert(conn, t.aud_task_run_log, task_id=tasks["extract"], pipeline_run_id=failed, status="FAILED")
        _insert(conn, t.aud_task_attempts, task_run_id=lost_tr, attempt_number=1, status="LOST", ended_at=now)
        retry_tr = _insert(conn, t.aud_task_run_log, task_id=tasks["extract"], pipeline_run_id=done, status="SUCCESS")
        _insert(conn, t.aud_task_attempts, task_run_id=retry_tr, attempt_number=1, status="FAILED", ended_at=now)
        _insert(conn, t.aud_task_attempts, task_run_id=retry_tr, attempt_number=2, status="SUCCESS", ended_at=now)
        queued_tr = _insert(
            conn, t.aud_task_run_log, task_id=tasks["extract"], pipeline_run_id=running, status="IN-PROGRESS"
        )
        _insert(
            conn, t.aud_task_attempts, task_run_id=queued_tr, attempt_number=1, status="QUEUED",
            queued_at=now - timedelta(seconds=120),
        )  # fmt: skip
        expired_tr = _insert(
            conn, t.aud_task_run_log, task_id=tasks["load"], pipeline_run_id=running, status="IN-PROGRESS"
        )
        _insert(
            conn, t.aud_task_attempts, task_run_id=expired_tr, attempt_number=1, status="RUNNING", owner_id="gone",
            lease_expires_at=now - timedelta(minutes=5),
        )  # fmt: skip
        _insert(conn, t.aud_gate_waits, pipeline_run_id=running, first_check_at=now, looks=2, wait_until=now)
    assert fresh_api.cli("purge")["removed"]["AUD_PIPELINES_RUN_LOG"] == 1
    assert old

    assert fresh_api.get("/metrics", kind=None).status_code == 401
    response = fresh_api.get("/metrics")
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    samples = _samples(response.text)

    def value(name: str, **labels: str) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    assert value("etl_craft_runs", pipeline="sales", status="SUCCESS") == 1
    assert value("etl_craft_runs", pipeline="sales", status="FAILED") == 1
    assert value("etl_craft_runs", pipeline="sales", status="IN-PROGRESS") == 1
    assert {k for k in samples if k[0] == "etl_craft_runs"} == {
        ("etl_craft_runs", (("pipeline", "sales"), ("status", s))) for s in ("SUCCESS", "FAILED", "IN-PROGRESS")
    }
    attempts = {dict(labels)["status"]: v for (name, labels), v in samples.items() if name == "etl_craft_attempts"}
    assert attempts == {
        "QUEUED": 1, "CLAIMED": 0, "RUNNING": 1, "SUCCESS": 1, "FAILED": 1, "TIMED_OUT": 0, "CANCELLED": 0, "LOST": 1,
    }  # fmt: skip
    assert value("etl_craft_lost_attempts") == 1
    assert value("etl_craft_retries") == 1
    assert value("etl_craft_queue_depth", pool="local", slot_kind="task") == 1
    assert 119 <= value("etl_craft_queue_oldest_age_seconds", pool="local", slot_kind="task") < 600
    assert value("etl_craft_expired_leases") == 1
    assert value("etl_craft_gate_waits") == 1
    assert value("etl_craft_overseer_heartbeat_timestamp_seconds") == 0  # no server runs in this test
    assert value("etl_craft_purge_removed_rows", table="AUD_PIPELINES_RUN_LOG") == 1
    assert value("etl_craft_purge_removed_rows", table="AUD_TASK_ATTEMPTS") == 0
    assert abs(value("etl_craft_purge_last_timestamp_seconds") - utc_now().timestamp()) < 300
    # The API's own statements (the scrape's queries among them) went into the latency histogram.
    assert value("etl_craft_engine_db_statement_seconds_count") >= 10
    assert value("etl_craft_engine_db_statement_seconds_bucket", le="+Inf") == value(
        "etl_craft_engine_db_statement_seconds_count"
    )
