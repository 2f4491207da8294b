"""The health of the worker agents that run attempts: none exist yet, and the answer says so.

In local mode the process that claims an attempt (`etl-craft server` or a foreground `etl-craft run`)
starts its task process itself; in remote mode the external orchestrator does. Worker agents that
claim attempts from a queue arrive with the PostgreSQL pool provider (S5.C), which records them in
AUD_WORKERS; until then this view names who runs attempts instead of listing workers.
"""

from __future__ import annotations

from dataclasses import dataclass

from etl_craft.services.context import OperationContext

RUNNERS = {
    "local": "attempts run as task processes of the etl-craft process that claimed them (etl-craft server, "
    "or a foreground etl-craft run); there are no worker agents",
    "remote": "attempts run where the external orchestrator runs each task's etl-craft command; there are no "
    "worker agents",
}


@dataclass(frozen=True)
class WorkersView:
    mode: str  # Orchestration.Mode of the serving process
    workers: tuple[()]  # worker agents and their heartbeats: none before the queue pool provider
    attempts_run_by: str


def worker_health(ctx: OperationContext) -> WorkersView:
    mode = ctx.config.orchestration.mode
    return WorkersView(mode=mode, workers=(), attempts_run_by=RUNNERS[mode])
