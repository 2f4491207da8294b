"""doctor checks of the cluster: queue pools need PostgreSQL (S5.C), and the Engine DB connection
budget of the overseer, its API, its local pool and the registered workers (S5.H).

The budget counts what each process can open at once: an Engine DB engine's pool (its size and
overflow) for the overseer and for its API, one connection per task process (each local slot, each
worker slot), and for each live worker its loop's pooled connection and its LISTEN session.
"""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.checks import FAIL, OK, WARN, CheckResult
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t

WARN_SHARE = 0.8  # of max_connections
WORKER_OWN_CONNECTIONS = 2  # its loop and its LISTEN session


def _queue_pool_tasks(db: EngineDb) -> list[tuple[str, str, str]]:
    """(pipeline, task, pool) of every active task whose POOL names a queue pool."""
    with db.read() as conn:
        return [
            (r.pipeline_code, r.task_code, r.parameter_value.strip())
            for r in conn.execute(
                sa.select(
                    t.cfg_pipelines.c.pipeline_code, t.cfg_tasks.c.task_code, t.cfg_task_parameters.c.parameter_value
                )
                .join(t.cfg_tasks, t.cfg_tasks.c.task_id == t.cfg_task_parameters.c.task_id)
                .join(t.cfg_pipelines, t.cfg_pipelines.c.pipeline_id == t.cfg_tasks.c.pipeline_id)
                .where(
                    t.cfg_task_parameters.c.parameter_name == "POOL",
                    t.cfg_tasks.c.active_flag == "Y",
                    t.cfg_pipelines.c.active_flag == "Y",
                )
                .order_by(t.cfg_pipelines.c.pipeline_code, t.cfg_tasks.c.task_code)
            )
            if r.parameter_value and r.parameter_value.strip() not in ("", "local")
        ]


def queue_check(db: EngineDb) -> list[CheckResult]:
    refusal = db.dialect.queue_refusal
    if refusal is None:
        return []
    tasks = _queue_pool_tasks(db)
    if not tasks:
        return []
    shown = ", ".join(f"{p}.{task} (POOL {pool})" for p, task, pool in tasks[:5])
    more = f" and {len(tasks) - 5} more" if len(tasks) > 5 else ""
    return [
        CheckResult(
            "Queue pools",
            FAIL,
            f"{len(tasks)} task(s) name a queue pool: {shown}{more}; found a {db.dialect.display_name} Engine DB: "
            f"{refusal}. Move the Engine DB to PostgreSQL, or remove POOL to run them on the local pool",
        )
    ]


def _engine_pool_size(db: EngineDb) -> int:
    pool = db.engine.pool
    size = getattr(pool, "size", None)
    overflow = getattr(pool, "_max_overflow", 0)
    return (size() if callable(size) else 1) + max(0, overflow)


def budget_check(db: EngineDb, config: ConnectorConfig) -> list[CheckResult]:
    limit = db.dialect.max_connections(db)
    if limit is None:
        return []
    with db.read() as conn:
        live = conn.execute(
            sa.select(t.aud_workers.c.ingestion_slots, t.aud_workers.c.warehouse_slots).where(
                t.aud_workers.c.status.in_(("ACTIVE", "DRAINING"))
            )
        ).all()
    overseer = 2 * _engine_pool_size(db)  # the overseer's engine and its API's
    local = config.orchestration.local_ingestion_slots + config.orchestration.local_warehouse_slots
    workers = sum(WORKER_OWN_CONNECTIONS + w.ingestion_slots + w.warehouse_slots for w in live)
    total = overseer + local + workers
    detail = (
        f"up to {total} connection(s) of max_connections {limit}: overseer and API {overseer}, local pool {local} "
        f"task process(es), {len(live)} live worker(s) {workers} (2 each plus one per slot)"
    )
    if total > WARN_SHARE * limit:
        return [
            CheckResult(
                "Engine DB connection budget",
                WARN,
                f"{detail}: over {int(WARN_SHARE * 100)}% of max_connections; lower the slots "
                "(Orchestration.Local_*_slots, etl-craft worker --*-slots), raise max_connections, or put "
                "PgBouncer in front of workers and task processes (see docs/guides/cluster.md)",
            )
        ]
    return [CheckResult("Engine DB connection budget", OK, detail)]
