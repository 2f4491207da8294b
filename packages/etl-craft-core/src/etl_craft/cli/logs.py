"""Logging for the command: records on stderr as text or one JSON object per line."""

from __future__ import annotations

import json
import logging
import sys

from etl_craft.core.clock import utc_now
from etl_craft.core.redaction import quiet_url_loggers
from etl_craft.core.text import printable


class _JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc = {
            "ts": utc_now().isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        context = getattr(record, "context", None)
        if context:
            doc.update(context)
        if record.exc_info:
            doc["traceback"] = self.formatException(record.exc_info)
        return json.dumps(doc, default=str)


class _TextFormatter(logging.Formatter):
    """One line per record: what a message carries (a reason, a code someone typed) is escaped."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return printable(super().formatMessage(record))


def configure_logging(level: str, fmt: str) -> None:
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        numeric = logging.INFO
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(_TextFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(numeric)
    quiet_url_loggers(numeric)  # libraries that log URLs (keys in query strings) stay quiet unless debugging
