"""TASK_LOG: the `NAME = value` lines of an attempt's result, then the tail of its log file."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.redaction import SecretMask
from etl_craft.handlers.context import HandlerResult


def attempt_log_path(config: ConnectorConfig, pipeline_code: str, run_id: int, task_code: str, number: int) -> Path:
    """Where an attempt's output goes, under Orchestration.Log_dir (relative to the project)."""
    root = config.orchestration.log_dir
    if not root.is_absolute():
        root = config.project_dir / root
    return root / pipeline_code / f"run-{run_id}" / f"{task_code}.attempt-{number}.log"


def log_tail(log_path: str, limit: int) -> str:
    """The last `limit` bytes of a log file, starting at a line boundary."""
    try:
        with open(log_path, "rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - limit))
            data = fh.read()
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    if len(data) >= limit and "\n" in text:
        text = text[text.index("\n") + 1 :]
    return text


def owner_task_log(log_path: str | None, tail_bytes: int, hidden: Iterable[str]) -> str | None:
    """TASK_LOG for an outcome an owner (a supervisor or a worker) records on its child's behalf: the
    tail of the child's log with `hidden` masked, as the child itself masks what it writes."""
    tail = SecretMask(hidden).redact(log_tail(log_path, tail_bytes)) if log_path else ""
    return f"--- end of {log_path} ---\n{tail}" if tail else None


def compose_task_log(result: HandlerResult, log_path: str | None, tail_bytes: int) -> str:
    counts = result.counts
    lines = [
        f"{name} = {value}"
        for name, value in (
            ("SOURCE_COUNT", counts.source),
            ("TARGET_COUNT", counts.target),
            ("INSERT_COUNT", counts.inserted),
            ("UPDATE_COUNT", counts.updated),
            ("DELETE_COUNT", counts.deleted),
        )
        if value is not None
    ]
    if result.offset is not None:
        lines.append(f"OFFSET = {result.offset.value} ({result.offset.type.value})")
    lines.extend(f"{name} = {value}" for name, value in result.variables)
    lines.extend(f"WARNING = {warning}" for warning in result.warnings)
    tail = log_tail(log_path, tail_bytes) if log_path else ""
    if tail:
        lines.append(f"--- end of {log_path} ---")
        lines.append(tail.rstrip("\n"))
    return "\n".join(lines)
