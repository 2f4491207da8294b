"""A catalog-shaped Engine DB: P pipelines × T tasks (a chain, each a SQL task writing its own table,
the first with a sensitive-looking parameter) × R finished runs, each with a task run per task.

Shared by the catalog benchmark and the statement-count test, so both measure the same shape.
Inserted with one executemany per table: seeding is not what is measured.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import sqlalchemy as sa

from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema import tables as t

START = datetime(2026, 1, 1, tzinfo=UTC)


def seed_catalog(db: EngineDb, pipelines: int, tasks: int, runs: int) -> None:
    with db.write() as conn:
        conn.execute(
            t.cfg_pipelines.insert(),
            [
                {"pipeline_code": f"p{p:04d}", "pipeline_name": f"Pipeline {p}", "refresh_type": "FULL",
                 "description": f"loads area {p}", "run_schedule": "@daily", "sla_in_hours": 2}
                for p in range(pipelines)
            ],
        )  # fmt: skip
        pipeline_ids = dict(
            conn.execute(sa.select(t.cfg_pipelines.c.pipeline_code, t.cfg_pipelines.c.pipeline_id)).all()
        )
        conn.execute(
            t.cfg_tasks.insert(),
            [
                {
                    "task_code": f"t{k:02d}",
                    "task_type": "ETL",
                    "pipeline_id": pipeline_ids[f"p{p:04d}"],
                    "handler": "SQL",
                }
                for p in range(pipelines)
                for k in range(tasks)
            ],
        )
        task_rows = conn.execute(
            sa.select(t.cfg_tasks.c.task_id, t.cfg_tasks.c.pipeline_id, t.cfg_tasks.c.task_code)
        ).all()
        conn.execute(
            t.cfg_task_parameters.insert(),
            [
                {"task_id": row.task_id, "parameter_name": name, "parameter_value": value}
                for row in task_rows
                for name, value in (
                    ("SQL_ACTION", "CREATE_TABLE"),
                    ("TARGET_OBJECT", f"mart.p{row.pipeline_id}_{row.task_code}"),
                    ("SOURCE_SQL", "SELECT 1 AS x"),
                    ("DOCUMENTATION", f"Builds {row.task_code} of pipeline {row.pipeline_id}."),
                )
            ],
        )
        by_pipeline: dict[int, list[int]] = {}
        for row in sorted(task_rows, key=lambda r: r.task_code):
            by_pipeline.setdefault(row.pipeline_id, []).append(row.task_id)
        chain = [
            {"pipeline_id": pid, "task_id": ids[i], "depends_on_task_id": ids[i - 1], "dependency_type": "SUCCESS"}
            for pid, ids in by_pipeline.items()
            for i in range(1, len(ids))
        ]
        if chain:
            conn.execute(t.cfg_task_dependency.insert(), chain)
        if runs:
            conn.execute(
                t.aud_pipelines_run_log.insert(),
                [
                    {"pipeline_id": pid, "status": "SUCCESS" if r % 7 else "FAILED", "run_key": f"seed:{r}",
                     "start_date": START + timedelta(days=r), "end_date": START + timedelta(days=r, minutes=5),
                     "trigger_kind": "BACKFILL" if r % 10 == 0 else "SCHEDULE", "backfill": "Y" if r % 10 == 0 else "N",
                     "sla_status": "MET"}
                    for pid in pipeline_ids.values()
                    for r in range(runs)
                ],
            )  # fmt: skip
            run_rows = conn.execute(
                sa.select(t.aud_pipelines_run_log.c.pipeline_run_id, t.aud_pipelines_run_log.c.pipeline_id)
            ).all()
            conn.execute(
                t.aud_task_run_log.insert(),
                [
                    {"task_id": task_id, "pipeline_run_id": run.pipeline_run_id, "status": "SUCCESS",
                     "start_date": START, "end_date": START, "source_count": 10, "target_count": 10}
                    for run in run_rows
                    for task_id in by_pipeline[run.pipeline_id]
                ],
            )  # fmt: skip
