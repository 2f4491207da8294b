"""Value sets stored in the Engine DB; each matches a CHECK constraint of the schema."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    QUEUED = "QUEUED"
    IN_PROGRESS = "IN-PROGRESS"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self not in (RunStatus.QUEUED, RunStatus.IN_PROGRESS)


class TaskStatus(StrEnum):
    """The summary status of a task run (AUD_TASK_RUN_LOG.STATUS)."""

    IN_PROGRESS = "IN-PROGRESS"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    SKIPPED = "SKIPPED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self is not TaskStatus.IN_PROGRESS


class AttemptStatus(StrEnum):
    QUEUED = "QUEUED"
    CLAIMED = "CLAIMED"
    RUNNING = "RUNNING"
    SUCCESS = "SUCCESS"
    FAILED = "FAILED"
    TIMED_OUT = "TIMED_OUT"
    CANCELLED = "CANCELLED"
    LOST = "LOST"

    @property
    def terminal(self) -> bool:
        return self not in LIVE_ATTEMPT_STATUSES

    @property
    def summary(self) -> TaskStatus:
        """The task-run status an attempt in this status reads as."""
        return _ATTEMPT_SUMMARY[self]


LIVE_ATTEMPT_STATUSES = frozenset({AttemptStatus.QUEUED, AttemptStatus.CLAIMED, AttemptStatus.RUNNING})

_ATTEMPT_SUMMARY = {
    AttemptStatus.QUEUED: TaskStatus.IN_PROGRESS,
    AttemptStatus.CLAIMED: TaskStatus.IN_PROGRESS,
    AttemptStatus.RUNNING: TaskStatus.IN_PROGRESS,
    AttemptStatus.SUCCESS: TaskStatus.SUCCESS,
    AttemptStatus.FAILED: TaskStatus.FAILED,
    AttemptStatus.TIMED_OUT: TaskStatus.FAILED,
    AttemptStatus.LOST: TaskStatus.FAILED,
    AttemptStatus.CANCELLED: TaskStatus.CANCELLED,
}


class ActorKind(StrEnum):
    HUMAN = "HUMAN"
    SCHEDULE = "SCHEDULE"
    ORCHESTRATOR = "ORCHESTRATOR"
    WORKER = "WORKER"
    SYSTEM = "SYSTEM"


class TriggerKind(StrEnum):
    SCHEDULE = "SCHEDULE"
    MANUAL = "MANUAL"
    BACKFILL = "BACKFILL"
    ORCHESTRATOR = "ORCHESTRATOR"
    STAND_IN = "STAND_IN"


class DependencyType(StrEnum):
    SUCCESS = "SUCCESS"
    FAILURE = "FAILURE"
    ALWAYS = "ALWAYS"
    HAS_DATA = "HAS_DATA"


class RunCondition(StrEnum):
    ALL = "ALL"
    ANY = "ANY"
    N = "N"


class Handler(StrEnum):
    PYTHON = "PYTHON"
    SQL = "SQL"
    BUSINESS_RULES = "BUSINESS_RULES"
    EMAIL_ALERT = "EMAIL_ALERT"


class OffsetType(StrEnum):
    NUMBER = "NUMBER"
    TEXT = "TEXT"
    TIMESTAMP = "TIMESTAMP"


class InterventionAction(StrEnum):
    MARK = "MARK"
    NEW_RUN = "NEW_RUN"
    CANCEL = "CANCEL"
    REOPEN = "REOPEN"
    RESET = "RESET"
    GATE_BYPASS = "GATE_BYPASS"
    IGNORE_DEPENDENCIES = "IGNORE_DEPENDENCIES"
    RERUN = "RERUN"


class GateResult(StrEnum):
    SATISFIED = "SATISFIED"
    UNSATISFIED = "UNSATISFIED"
    BYPASSED = "BYPASSED"


class MigrationSource(StrEnum):
    ENGINE = "ENGINE"
    PROJECT = "PROJECT"


class AlertEvent(StrEnum):
    """What an alert channel is told about (Orchestration.Alerts, AUD_ALERT_DELIVERIES.EVENT)."""

    RUN_FAILED = "run_failed"
    SLA_BREACHED = "sla_breached"
    ATTEMPT_LOST = "attempt_lost"
    GATE_WAITING = "gate_waiting"
