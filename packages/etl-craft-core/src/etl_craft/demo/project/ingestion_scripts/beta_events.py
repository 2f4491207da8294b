"""Client Beta: ticket events from the chat platform's log (sources/beta/segment-NNNNNN.ndjson).

One JSON event per line, each with a position in the log (`offset`), like a message queue. The
offset stored by etl-craft is a NUMBER: the last event position landed. Each run lands the events
after it into lnd.beta_events, one row per event, and returns the last position it landed.
"""

from __future__ import annotations

import json

from demo_landing import project_folder, replace_task_run_rows, source_time

from etl_craft.scripting import Offset, ScriptResult, ScriptTask

COLUMNS = (
    "event_offset",
    "event_id",
    "event_type",
    "emitted_at",
    "ticket_id",
    "customer",
    "tier",
    "agent",
    "sku",
    "category",
    "channel",
    "priority",
    "status",
    "opened_at",
    "resolved_at",
    "rating",
    "source_file",
    "source_position",
)


def run(task: ScriptTask) -> ScriptResult:
    last = task.offset.value if task.offset else 0
    assert isinstance(last, int), f"a NUMBER offset holding an event position, not {last!r}"
    newest = last
    rows: list[tuple[object, ...]] = []
    for path in sorted(project_folder(task, task.input_params["folder"]).glob("segment-*.ndjson")):
        with path.open(encoding="utf-8") as lines:
            for position, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                event = json.loads(line)
                if event["offset"] <= last:
                    continue
                newest = max(newest, event["offset"])
                ticket = event["ticket"]
                rows.append(
                    (
                        event["offset"],
                        event["event_id"],
                        event["type"],
                        source_time(event["emitted_at"]),
                        ticket["id"],
                        ticket.get("customer"),
                        ticket.get("tier"),
                        ticket.get("agent"),
                        ticket.get("sku"),
                        ticket.get("category"),
                        ticket.get("channel"),
                        ticket.get("priority"),
                        ticket.get("status"),
                        source_time(ticket.get("opened_at")),
                        source_time(ticket.get("resolved_at")),
                        ticket.get("rating"),
                        path.name,
                        position,
                    )
                )
    written = replace_task_run_rows(task, "lnd.beta_events", COLUMNS, rows)
    task.logger.info("landed %d event(s) after position %d, up to %d", written, last, newest)
    return ScriptResult(row_count=written, offset=Offset.number(newest) if rows else None)
