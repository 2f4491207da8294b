"""The Logs section: how much of an attempt's log TASK_LOG keeps, and where logs are stored (S6.B)."""

from __future__ import annotations

from etl_craft.config.layout import BlockSpec, open_section
from etl_craft.config.model import LogSettings
from etl_craft.config.values import Context, show

LOGS_SPEC = BlockSpec("Logs", ("Store", "Tail_bytes"))
MAX_TAIL_BYTES = 1_048_576  # TASK_LOG is a column, not a log store


def parse_logs(ctx: Context, body: object) -> LogSettings:
    """One setting for every profile, like Retention."""
    reader = open_section(ctx, LOGS_SPEC, body, None, profiles=False)
    store = reader.text("Store")
    if store is not None:
        # Refused rather than ignored: a store that is never written would leave logs on a host
        # the user expects to be able to lose.
        raise reader.error(
            "Store",
            "this etl-craft release keeps attempt logs as files under Orchestration.Log_dir only",
            found=show(store),
            expected="no Logs.Store (file:// and s3:// stores are not in this release)",
            remedy="remove Store, and copy Orchestration.Log_dir to your store with your own tools",
        )
    return LogSettings(tail_bytes=reader.whole("Tail_bytes", 8192, 0, MAX_TAIL_BYTES))
