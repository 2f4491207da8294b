"""Writes to CFG_BUSINESS_RULES from the web UI's metadata editor: a rule added to a BUSINESS_RULES
task, or retired (ACTIVE_FLAG 'N', so its history stays). The guard triggers stamp the actor and
record the change in AUD_METADATA_CHANGES."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa

from etl_craft.engine.schema.tables import cfg_business_rules


def add_rule(conn: sa.Connection, values: Mapping[str, Any]) -> int:
    """A new active rule (`values` name every required column); returns its id."""
    inserted = conn.execute(
        cfg_business_rules.insert().values(**values).returning(cfg_business_rules.c.business_rule_id)
    )
    return int(inserted.scalar_one())


def retire_rule(conn: sa.Connection, task_id: int, rule_id: int) -> int:
    """Set the task's active rule's ACTIVE_FLAG to 'N'; returns the row count (0: none such)."""
    r = cfg_business_rules.c
    return conn.execute(
        cfg_business_rules.update()
        .where(r.business_rule_id == rule_id, r.task_id == task_id, r.active_flag == "Y")
        .values(active_flag="N")
    ).rowcount


def task_rules(conn: sa.Connection, task_id: int) -> list[sa.Row]:
    """The task's active rules in the order they run."""
    r = cfg_business_rules.c
    query = sa.select(cfg_business_rules).where(r.task_id == task_id, r.active_flag == "Y")
    return list(conn.execute(query.order_by(r.sequence_number, r.business_rule_id)))
