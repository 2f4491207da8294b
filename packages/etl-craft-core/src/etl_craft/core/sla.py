"""The SLA rule: a run meets its pipeline's SLA when it has lasted at most SLA_IN_HOURS."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal


def sla_verdict(sla_in_hours: Decimal | None, started: datetime, now: datetime) -> str | None:
    """MET or BREACHED for a run started at `started`, as of `now`; None when the pipeline has no SLA."""
    if sla_in_hours is None:
        return None
    elapsed_hours = Decimal((now - started).total_seconds()) / Decimal(3600)
    return "MET" if elapsed_hours <= sla_in_hours else "BREACHED"
