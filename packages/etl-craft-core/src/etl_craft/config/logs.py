"""The Logs section: how much of an attempt's log TASK_LOG keeps, and where logs are stored (S6.B)."""

from __future__ import annotations

from urllib.parse import urlsplit

from etl_craft.config.layout import BlockSpec, open_section
from etl_craft.config.model import LogSettings
from etl_craft.config.values import Context, show

LOGS_SPEC = BlockSpec("Logs", ("Store", "Tail_bytes"))
MAX_TAIL_BYTES = 1_048_576  # TASK_LOG is a column, not a log store


def store_problem(url: str) -> str | None:
    """Why an object-store address (Logs.Store, purge --archive-to) can't be used, or None."""
    try:
        parts = urlsplit(url)
    except ValueError as error:  # an unbalanced [ in the host, and the like
        return f"not a URL ({error})"
    if parts.scheme == "file":
        if parts.netloc or not parts.path.startswith("/"):
            return "a file:// store needs an absolute folder (file:///var/lib/etl-craft/logs)"
        return None
    if parts.scheme == "s3":
        if not parts.netloc:
            return "an s3:// store needs a bucket (s3://bucket/prefix)"
        if parts.query or parts.fragment:
            return "an s3:// store takes no query or fragment"
        return None
    return f"scheme {parts.scheme or '(none)'!r} is neither file nor s3"


def parse_logs(ctx: Context, body: object) -> LogSettings:
    """One setting for every profile, like Retention."""
    reader = open_section(ctx, LOGS_SPEC, body, None, profiles=False)
    store = reader.text("Store")
    if store is not None and (problem := store_problem(store)) is not None:
        raise reader.error(
            "Store",
            problem,
            found=show(store),
            expected="file:///absolute/folder or s3://bucket/prefix",
            remedy="correct Logs.Store, or remove it to keep attempt logs under Orchestration.Log_dir only",
        )
    return LogSettings(tail_bytes=reader.whole("Tail_bytes", 8192, 0, MAX_TAIL_BYTES), store=store)
