"""Client Alpha: ticket documents from the CRM's JSON exports (sources/alpha/export-NNNN.json).

The CRM answers "every document updated after T", so the offset is a TIMESTAMP: the newest
`updated_at` landed so far. Each run lands the documents updated after it into lnd.alpha_documents,
flattened (customer.id, customer.tier), and returns the newest `updated_at` it landed.
"""

from __future__ import annotations

import json
from datetime import datetime

from demo_landing import project_folder, replace_task_run_rows, source_time

from etl_craft.scripting import Offset, ScriptResult, ScriptTask

COLUMNS = (
    "doc_id",
    "customer_id",
    "customer_tier",
    "assignee",
    "product",
    "topic",
    "channel",
    "priority",
    "state",
    "opened_at",
    "resolved_at",
    "csat",
    "updated_at",
    "source_file",
    "source_position",
)


def run(task: ScriptTask) -> ScriptResult:
    since = task.offset.value if task.offset else None
    assert since is None or isinstance(since, datetime)
    rows: list[tuple[object, ...]] = []
    newest = since
    exports = 0
    for path in sorted(project_folder(task, task.input_params["folder"]).glob("export-*.json")):
        export = json.loads(path.read_text(encoding="utf-8"))
        before = len(rows)
        for position, doc in enumerate(export["documents"], start=1):
            updated = source_time(doc["updated_at"])
            assert updated is not None
            if since is not None and updated <= since:
                continue
            customer = doc.get("customer") or {}
            rows.append(
                (
                    doc["_id"],
                    customer.get("id"),
                    customer.get("tier"),
                    doc.get("assignee"),
                    doc.get("product"),
                    doc.get("topic"),
                    doc.get("channel"),
                    doc.get("priority"),
                    doc.get("state"),
                    source_time(doc.get("opened_at")),
                    source_time(doc.get("resolved_at")),
                    doc.get("csat"),
                    updated,
                    path.name,
                    position,
                )
            )
            newest = updated if newest is None else max(newest, updated)
        exports += len(rows) > before
    written = replace_task_run_rows(task, "lnd.alpha_documents", COLUMNS, rows)
    task.logger.info("landed %d document(s) from %d export(s) updated after %s", written, exports, since)
    return ScriptResult(
        row_count=written,
        offset=Offset.timestamp(newest) if rows and newest else None,
        variables={"EXPORTS_READ": exports},
    )
