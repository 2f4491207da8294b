"""The catalog site's reads: every fact of every page in a fixed number of set queries.

None of them runs per pipeline, task or run, so building the catalog issues the same statements for
ten pipelines as for thousands (tests/core/catalog/test_statement_count.py counts them). Run history
reads only the last `history` runs of each pipeline through a window over the
(PIPELINE_ID, PIPELINE_RUN_ID) order, and task runs only of those runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from etl_craft.core.enums import InterventionAction
from etl_craft.engine.schema import tables as t

Row = dict[str, Any]
REPAIR_ACTIONS = (
    InterventionAction.REOPEN,
    InterventionAction.RESET,
    InterventionAction.RERUN,
    InterventionAction.MARK,
)


@dataclass(frozen=True)
class CatalogFacts:
    pipelines: Sequence[Row]
    tasks: Sequence[Row]
    parameters: Sequence[Row]
    task_dependencies: Sequence[Row]
    pipeline_dependencies: Sequence[Row]
    business_rules: Sequence[Row]
    recent_runs: Sequence[Row]
    recent_task_runs: Sequence[Row]
    run_kpis: Sequence[Row]
    lineage: Sequence[Row]
    pauses: Sequence[Row]
    documentation_versions: Sequence[Row]


def _rows(conn: sa.Connection, query: sa.Select[Any]) -> tuple[Row, ...]:
    return tuple(dict(row._mapping) for row in conn.execute(query))


def _run_kind() -> sa.ColumnElement[str]:
    """How a run counts in the KPIs: a backfill, a repair (an operator re-ran, reset, reopened or
    marked part of it), scheduled (the schedule or an orchestrator started it) or manual."""
    runs = t.aud_pipelines_run_log
    repaired = (
        sa.select(sa.literal(1))
        .where(
            t.aud_run_interventions.c.pipeline_run_id == runs.c.pipeline_run_id,
            t.aud_run_interventions.c.action.in_([a.value for a in REPAIR_ACTIONS]),
        )
        .exists()
    )
    return sa.case(
        ((runs.c.backfill == "Y") | (runs.c.trigger_kind == "BACKFILL"), "backfill"),
        (repaired, "repair"),
        (runs.c.trigger_kind.in_(("SCHEDULE", "ORCHESTRATOR")), "scheduled"),
        else_="manual",
    )


def read_catalog_facts(conn: sa.Connection, *, history: int) -> CatalogFacts:
    p, task, params = t.cfg_pipelines, t.cfg_tasks, t.cfg_task_parameters
    runs, task_runs = t.aud_pipelines_run_log, t.aud_task_run_log
    active_task = (task.c.active_flag == "Y") & (task.c.pipeline_id == p.c.pipeline_id) & (p.c.active_flag == "Y")
    numbered = sa.select(
        runs,
        _run_kind().label("run_kind"),
        sa.func.row_number()
        .over(partition_by=runs.c.pipeline_id, order_by=runs.c.pipeline_run_id.desc())
        .label("position"),
    ).subquery("numbered")
    shown = sa.select(numbered).where(numbered.c.position <= history).subquery("shown")
    kind = _run_kind().label("run_kind")
    return CatalogFacts(
        pipelines=_rows(conn, sa.select(p).where(p.c.active_flag == "Y").order_by(p.c.pipeline_code)),
        tasks=_rows(conn, sa.select(task).join(p, active_task).order_by(task.c.pipeline_id, task.c.task_code)),
        parameters=_rows(
            conn,
            sa.select(params.c.task_id, params.c.parameter_name, params.c.parameter_value)
            .join(task, task.c.task_id == params.c.task_id)
            .join(p, active_task)
            .where(params.c.active_flag == "Y")
            .order_by(params.c.task_id, params.c.parameter_name),
        ),
        task_dependencies=_rows(
            conn, sa.select(t.cfg_task_dependency).where(t.cfg_task_dependency.c.active_flag == "Y")
        ),
        pipeline_dependencies=_rows(
            conn, sa.select(t.cfg_pipeline_dependency).where(t.cfg_pipeline_dependency.c.active_flag == "Y")
        ),
        business_rules=_rows(
            conn,
            sa.select(t.cfg_business_rules)
            .where(t.cfg_business_rules.c.active_flag == "Y")
            .order_by(t.cfg_business_rules.c.task_id, t.cfg_business_rules.c.sequence_number),
        ),
        recent_runs=_rows(conn, sa.select(shown).order_by(shown.c.pipeline_id, shown.c.pipeline_run_id.desc())),
        recent_task_runs=_rows(
            conn,
            sa.select(
                task_runs.c.task_run_id,
                task_runs.c.task_id,
                task_runs.c.pipeline_run_id,
                task_runs.c.status,
                task_runs.c.start_date,
                task_runs.c.end_date,
                task_runs.c.source_count,
                task_runs.c.target_count,
                task_runs.c.insert_count,
                task_runs.c.update_count,
                task_runs.c.delete_count,
                task_runs.c.error_message,
            )
            .join(shown, shown.c.pipeline_run_id == task_runs.c.pipeline_run_id)
            .order_by(task_runs.c.task_id, task_runs.c.task_run_id.desc()),
        ),
        run_kpis=_rows(
            conn,
            sa.select(
                runs.c.pipeline_id,
                kind,
                runs.c.status,
                runs.c.sla_status,
                sa.func.count().label("runs"),
            ).group_by(runs.c.pipeline_id, kind, runs.c.status, runs.c.sla_status),
        ),
        lineage=_rows(
            conn,
            sa.select(t.aud_column_lineage).order_by(
                t.aud_column_lineage.c.target_object, t.aud_column_lineage.c.target_column
            ),
        ),
        pauses=_rows(conn, sa.select(t.aud_pipeline_pauses).where(t.aud_pipeline_pauses.c.resumed_at.is_(None))),
        documentation_versions=_rows(
            conn,
            sa.select(
                t.aud_task_documentation.c.task_id,
                sa.func.max(t.aud_task_documentation.c.version).label("version"),
            ).group_by(t.aud_task_documentation.c.task_id),
        ),
    )
