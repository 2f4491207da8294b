"""Publish the tickets a client's business rules reject into dq.rejected_tickets.

The rules' flags live in the Engine DB (AUD_BUSINESS_RULES_RESULTS, which any tool may read), and
the warehouse can't join to it. This task copies the active REJECT flags of one checked table into
the warehouse after every check, so the fact table's merge can leave those tickets out in the same
run. Flags that a later run cleared (the source fixed the ticket) disappear from the table.

The demo's Engine DB is a SQLite file, read here without locking anyone out (mode=ro).
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from etl_craft.scripting import ScriptResult, ScriptTask

ACTIVE_REJECTS = """
    SELECT r.BUSINESS_RULE_KEY, b.BUSINESS_RULE_NAME
    FROM AUD_BUSINESS_RULES_RESULTS r
    JOIN CFG_BUSINESS_RULES b ON b.BUSINESS_RULE_ID = r.BUSINESS_RULE_ID
    WHERE r.TARGET_TABLE = ? AND r.STATUS = 'REJECT' AND r.ACTIVE_FLAG = 'Y'
    ORDER BY r.BUSINESS_RULE_KEY, b.BUSINESS_RULE_NAME
"""


def active_rejects(task: ScriptTask, checked_table: str) -> dict[str, list[str]]:
    url = task.config.engine.jdbc_url
    if not url.startswith("jdbc:sqlite:"):
        raise ValueError(f"publish_rejects reads a SQLite Engine DB; this project's is {url.split('?')[0]}")
    engine_db = Path(url.removeprefix("jdbc:sqlite:"))
    found: dict[str, list[str]] = {}
    with sqlite3.connect(f"{engine_db.as_uri()}?mode=ro", uri=True) as conn:
        for key, rule in conn.execute(ACTIVE_REJECTS, (checked_table,)):
            found.setdefault(key, []).append(rule)
    return found


def run(task: ScriptTask) -> ScriptResult:
    checked_table = task.input_params["checked_table"]
    rejects = active_rejects(task, checked_table)
    target = task.table("dq.rejected_tickets")
    now = datetime.now(UTC)
    rows = [
        (key, checked_table, ", ".join(rules), task.pipeline_id, task.pipeline_run_id, task.task_run_id, now)
        for key, rules in rejects.items()
    ]
    with task.warehouse() as engine, engine.begin() as conn:
        conn.exec_driver_sql(f"DELETE FROM {target} WHERE checked_table = ?", (checked_table,))
        if rows:
            conn.exec_driver_sql(
                f"INSERT INTO {target} (ticket_key, checked_table, rules, PIPELINE_ID, PIPELINE_RUN_ID, TASK_RUN_ID,"
                " LOADED_AT) VALUES (?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
    task.logger.info("%d ticket(s) of %s are rejected", len(rows), checked_table)
    return ScriptResult(row_count=len(rows), variables={"REJECTED_TICKETS": len(rows)})
