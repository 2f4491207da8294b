"""A command taking a run to work on, and giving it back: while one process holds a run, the run
carries that owner and a lease the owner renews, so no other process supervises it meanwhile."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from etl_craft.engine import transitions
from etl_craft.engine.database import EngineDb
from etl_craft.execution.processes.identity import OwnerId
from etl_craft.execution.run_loop.leases import lease_until


def hold(conn: sa.Connection, run_id: int, owner: OwnerId, now: datetime) -> None:
    """Hold a QUEUED run whose pipeline gates this owner will judge."""
    transitions.hold_run(conn, run_id, owner_id=str(owner), lease_until=lease_until(now), now=now)


def resume(conn: sa.Connection, run_id: int, owner: OwnerId, now: datetime) -> None:
    """Take an IN-PROGRESS run (resumed, or reopened for a repair) to supervise it."""
    transitions.start_run(conn, run_id, owner_id=str(owner), lease_until=lease_until(now), now=now)


def give_back(db: EngineDb, run_id: int, owner: OwnerId) -> None:
    """Let any process take the run again: its owner and lease are cleared, its status kept."""
    with db.write() as conn:
        transitions.release_run(conn, run_id, owner_id=str(owner))
