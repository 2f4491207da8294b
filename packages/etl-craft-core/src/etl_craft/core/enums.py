"""Value sets stored in the Engine DB (each matches a CHECK constraint of the schema), and the status
sets every rule about runs, task runs and attempts uses: each rule's set is defined here once."""

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
        return self not in LIVE_ATTEMPT

    @property
    def summary(self) -> TaskStatus:
        """The task-run status an attempt in this status reads as."""
        return _ATTEMPT_SUMMARY[self]


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


class ApiRole(StrEnum):
    """What an API token (or, later, a user) may do, each role including the ones before it (S7.B):
    viewer reads, operator controls runs, developer edits metadata, admin manages access."""

    VIEWER = "viewer"
    OPERATOR = "operator"
    DEVELOPER = "developer"
    ADMIN = "admin"

    @property
    def rank(self) -> int:
        return list(ApiRole).index(self)

    def includes(self, needed: ApiRole) -> bool:
        return self.rank >= needed.rank


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


# --- status sets ------------------------------------------------------------------------------------

# A run that may still change: admitted or not, nobody has ended it.
UNFINISHED_RUN = (RunStatus.QUEUED, RunStatus.IN_PROGRESS)
FINISHED_RUN = tuple(s for s in RunStatus if s.terminal)
# An attempt that has not ended; an owned one has a process (or its owner) working on it.
LIVE_ATTEMPT = (AttemptStatus.QUEUED, AttemptStatus.CLAIMED, AttemptStatus.RUNNING)
OWNED_ATTEMPT = (AttemptStatus.CLAIMED, AttemptStatus.RUNNING)
ENDED_ATTEMPT = tuple(s for s in AttemptStatus if s not in LIVE_ATTEMPT)
# Every end of a task run; a task run that ended in one of these may run again only by a rerun.
ENDED_TASK = tuple(s for s in TaskStatus if s.terminal)
# The ends a task reaches by itself (CANCELLED is its run's doing): what `mark` may set, and what an
# ALWAYS dependency on another pipeline's task accepts.
OWN_TASK_END = (TaskStatus.SUCCESS, TaskStatus.FAILED, TaskStatus.SKIPPED)
# A run or task that ended without a failure: the command that ran it exits 0.
ENDED_WELL = ("SUCCESS", "SKIPPED")
