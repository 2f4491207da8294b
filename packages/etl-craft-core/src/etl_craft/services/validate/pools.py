"""Rules for pools and limits (S5.E): a task's POOL names the local pool or an active CFG_POOLS row,
and a pipeline's MAX_PARALLEL_TASKS, when set, lets at least one task run."""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.core.enums import Handler, RunCondition
from etl_craft.core.errors import EtlCraftError
from etl_craft.core.text import close_matches
from etl_craft.engine.schema import tables as t
from etl_craft.execution.graph import TaskNode
from etl_craft.execution.pools.choice import LOCAL, pool_name
from etl_craft.services.validate.findings import Findings
from etl_craft.services.validate.project import Project


def active_pools(conn: sa.Connection) -> list[str]:
    return list(
        conn.execute(
            sa.select(t.cfg_pools.c.pool_name).where(t.cfg_pools.c.active_flag == "Y").order_by(t.cfg_pools.c.pool_name)
        ).scalars()
    )


def check_pools(project: Project, pools: list[str], findings: Findings) -> None:
    for pipeline in project.checked_pipelines():
        limit = pipeline.row.get("max_parallel_tasks")
        if limit is not None and limit < 1:
            findings.fail(
                pipeline.code,
                None,
                "CFG_PIPELINES.MAX_PARALLEL_TASKS",
                found=str(limit),
                expected="a whole number of 1 or more (or NULL: Orchestration.Max_parallel_tasks)",
                remedy="correct MAX_PARALLEL_TASKS in a project migration",
            )
    for task in project.checked_tasks():
        if "POOL" not in task.values:
            continue
        node = TaskNode(
            task.task_id,
            task.code,
            Handler(task.handler),
            task.row["task_type"],
            RunCondition.ALL,
            None,
            parameters=task.values,
        )
        try:
            name = pool_name(node)
        except EtlCraftError as error:
            findings.error(error, project.code_of(task), task.code)
            continue
        if name == LOCAL or name in pools:
            continue
        near = close_matches(name, pools)
        findings.fail(
            project.code_of(task),
            task.code,
            "parameter POOL",
            found=f"{name!r}, which no active CFG_POOLS row names",
            expected=f"{LOCAL!r} or an active pool: {', '.join(pools) if pools else 'none is defined'}",
            remedy=(f"did you mean {', '.join(near)}? " if near else "")
            + "add the pool to CFG_POOLS in a project migration, or correct POOL",
        )
