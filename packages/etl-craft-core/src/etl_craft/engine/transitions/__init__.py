"""Every status change of runs, task runs and attempts.

Each function is one guarded UPDATE (or INSERT) whose row count is checked: the row must be in the
expected status (and, for owned rows, held by the expected owner), else StaleTransitionError says
what was expected and what was found. No other module writes a STATUS. Callers pass the connection
of their transaction, so writes that belong together (an attempt, its task-run summary, an offset,
consumption, an intervention) commit together. One module per subject: runs, attempts, and the
changes operators ask for (interventions); callers use this package's names.
"""

from __future__ import annotations

from etl_craft.engine.transitions.attempts import (
    acknowledge_cancel,
    cancel_attempt,
    claim_attempt,
    finish_attempt,
    lose_attempt,
    queue_and_claim_attempt,
    queue_attempt,
    rehearse_attempt_end,
    start_attempt,
    time_out_attempt,
)
from etl_craft.engine.transitions.common import EVENTS_CHANNEL, announce
from etl_craft.engine.transitions.interventions import (
    cancel_run,
    mark_run,
    mark_task,
    record_intervention,
    reopen_run,
    reset_task,
)
from etl_craft.engine.transitions.queue import (
    ClaimLimits,
    Renewal,
    claim_next,
    drain_worker,
    offer_attempt,
    register_worker,
    renew_worker,
    request_cancel,
    silent_workers_gone,
    worker_gone,
)
from etl_craft.engine.transitions.runs import (
    admit_ungated_runs,
    create_run,
    finish_run,
    hold_run,
    queue_scheduled_runs,
    record_skipped_tick,
    record_sla,
    release_run,
    renew_all_leases,
    renew_lease,
    skip_task,
    start_run,
)
from etl_craft.engine.transitions.values import AttemptOutcome, Counts, QueuedAttempt, StoredOffset

__all__ = [
    "EVENTS_CHANNEL",
    "AttemptOutcome",
    "ClaimLimits",
    "Counts",
    "QueuedAttempt",
    "Renewal",
    "StoredOffset",
    "acknowledge_cancel",
    "admit_ungated_runs",
    "announce",
    "cancel_attempt",
    "cancel_run",
    "claim_attempt",
    "claim_next",
    "create_run",
    "drain_worker",
    "finish_attempt",
    "finish_run",
    "hold_run",
    "lose_attempt",
    "mark_run",
    "mark_task",
    "offer_attempt",
    "queue_and_claim_attempt",
    "queue_attempt",
    "queue_scheduled_runs",
    "record_intervention",
    "record_skipped_tick",
    "record_sla",
    "register_worker",
    "rehearse_attempt_end",
    "release_run",
    "renew_all_leases",
    "renew_lease",
    "renew_worker",
    "reopen_run",
    "request_cancel",
    "reset_task",
    "silent_workers_gone",
    "skip_task",
    "start_attempt",
    "start_run",
    "time_out_attempt",
    "worker_gone",
]
