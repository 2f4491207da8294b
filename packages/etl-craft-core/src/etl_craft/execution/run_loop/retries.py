"""When a failed task runs again under its RETRIES and RETRY_DELAY settings."""

from __future__ import annotations

from datetime import datetime

from etl_craft.config.model import OrchestrationSettings
from etl_craft.core.clock import utc_now
from etl_craft.core.errors import EtlCraftError
from etl_craft.engine.reads import AttemptRow
from etl_craft.execution.graph import TaskNode
from etl_craft.execution.settings import task_settings


def retry_time(node: TaskNode, latest: AttemptRow | None, orchestration: OrchestrationSettings) -> datetime | None:
    """When the task's next attempt may start after `latest` failed, or None when it gets none: the
    failure was not retryable or was a cancel, its retries are spent, its settings are broken, or the
    orchestrator retries in remote mode."""
    try:
        settings = task_settings(node, orchestration)
    except EtlCraftError:
        return None
    number = latest.attempt_number if latest else 0
    if (
        latest is None
        or not latest.retryable
        or latest.status == "CANCELLED"
        or number > settings.retries
        or orchestration.mode == "remote"
    ):
        return None
    return utc_now() + settings.retry_delay(number)
