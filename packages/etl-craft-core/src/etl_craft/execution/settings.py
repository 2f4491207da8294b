"""Per-task execution settings from task parameters, with the Orchestration defaults.

Parsed after the attempt is claimed, so a bad value is recorded on the attempt (FAILED, not retried)
instead of leaving anything in progress.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta

from etl_craft.config.model import OrchestrationSettings
from etl_craft.core.errors import TaskParameterError
from etl_craft.execution.graph import TaskNode

MAX_RETRY_DELAY_SECONDS = 3600
# Parameters every task may carry, whatever its handler (DOCUMENTATION is prose for the catalog).
COMMON_PARAMETERS = (
    "TASK_TIMEOUT_SECONDS",
    "RETRIES",
    "RETRY_DELAY_SECONDS",
    "RETRY_BACKOFF",
    "DOCUMENTATION",
    "POOL",  # where its attempts run (execution.pools.choice)
)


@dataclass(frozen=True)
class TaskSettings:
    timeout_seconds: int  # 0: no limit
    retries: int
    retry_delay_seconds: float
    retry_backoff: float

    def retry_delay(self, failed_attempt_number: int) -> timedelta:
        """The wait before the attempt after `failed_attempt_number` (1 for the first retry)."""
        seconds = self.retry_delay_seconds * (self.retry_backoff ** (failed_attempt_number - 1))
        return timedelta(seconds=min(seconds, MAX_RETRY_DELAY_SECONDS))


def _whole(node: TaskNode, name: str, default: int) -> int:
    raw = node.parameters.get(name)
    if raw is None:
        return default
    text = raw.strip()
    if not text.isascii() or not text.isdigit():
        raise TaskParameterError(
            f"task {node.code}: parameter {name}",
            found=repr(raw),
            expected="a whole number of 0 or more",
            remedy=f"set {name} to digits only in a project migration",
        )
    return int(text)


def _number(node: TaskNode, name: str, default: float, minimum: float) -> float:
    raw = node.parameters.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < minimum:
        raise TaskParameterError(
            f"task {node.code}: parameter {name}",
            found=repr(raw),
            expected=f"a finite number of at least {minimum:g}",
            remedy=f"correct {name} in a project migration",
        )
    return value


def task_settings(node: TaskNode, orchestration: OrchestrationSettings) -> TaskSettings:
    return TaskSettings(
        timeout_seconds=_whole(node, "TASK_TIMEOUT_SECONDS", orchestration.task_timeout_seconds),
        retries=_whole(node, "RETRIES", orchestration.retries),
        retry_delay_seconds=_number(node, "RETRY_DELAY_SECONDS", 60.0, 0.0),
        retry_backoff=_number(node, "RETRY_BACKOFF", 2.0, 1.0),
    )
