"""Writes to CFG_TASK_PARAMETERS from the web UI's metadata editor: a parameter's value set (the
active row changed, or a row added). The guard triggers stamp the actor and record the change in
AUD_METADATA_CHANGES, as for a project migration."""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.engine.schema.tables import cfg_task_parameters


def set_parameter(conn: sa.Connection, task_id: int, name: str, value: str) -> str:
    """UPDATE when the task has the parameter, else INSERT; returns which."""
    p = cfg_task_parameters.c
    changed = conn.execute(
        cfg_task_parameters.update()
        .where(p.task_id == task_id, p.parameter_name == name, p.active_flag == "Y")
        .values(parameter_value=value)
    ).rowcount
    if changed:
        return "UPDATE"
    conn.execute(cfg_task_parameters.insert().values(task_id=task_id, parameter_name=name, parameter_value=value))
    return "INSERT"
