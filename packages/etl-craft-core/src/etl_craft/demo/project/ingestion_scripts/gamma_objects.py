"""Client Gamma: gzipped CSV exports dropped in an object store (sources/gamma/NNNNNNNNNN_tickets.csv.gz).

Object keys start with a zero-padded sequence number, so their order is the order they were
written. The offset is TEXT: the key of the last object landed. Each run lands the rows of every
later object into lnd.gamma_rows and returns the last key it read. Times arrive in the call
centre's local time with its UTC offset.
"""

from __future__ import annotations

import csv
import gzip
import io

from demo_landing import project_folder, replace_task_run_rows, source_time

from etl_craft.scripting import Offset, ScriptResult, ScriptTask

COLUMNS = (
    "ticket_number",
    "customer_ref",
    "customer_tier",
    "agent_code",
    "product_sku",
    "category",
    "channel",
    "priority_level",
    "status",
    "opened_local",
    "closed_local",
    "satisfaction",
    "last_modified_local",
    "source_file",
    "source_position",
)


def run(task: ScriptTask) -> ScriptResult:
    after = str(task.offset.value) if task.offset else ""
    keys = sorted(p for p in project_folder(task, task.input_params["folder"]).glob("*.csv.gz") if p.name > after)
    rows: list[tuple[object, ...]] = []
    for path in keys:
        text = gzip.decompress(path.read_bytes()).decode("utf-8")
        for position, record in enumerate(csv.DictReader(io.StringIO(text)), start=1):
            rows.append(
                (
                    record["ticket_number"],
                    record["customer_ref"] or None,
                    record["customer_tier"] or None,
                    record["agent_code"] or None,
                    record["product_sku"] or None,
                    record["category"] or None,
                    record["channel"] or None,
                    record["priority_level"] or None,
                    record["status"] or None,
                    source_time(record["opened_local"]),
                    source_time(record["closed_local"]),
                    int(record["satisfaction"]) if record["satisfaction"] else None,
                    source_time(record["last_modified_local"]),
                    path.name,
                    position,
                )
            )
    written = replace_task_run_rows(task, "lnd.gamma_rows", COLUMNS, rows)
    task.logger.info("landed %d row(s) from %d object(s) after %r", written, len(keys), after or "(none)")
    return ScriptResult(
        row_count=written,
        offset=Offset.text(keys[-1].name) if keys else None,
        variables={"OBJECTS_READ": len(keys)},
    )
