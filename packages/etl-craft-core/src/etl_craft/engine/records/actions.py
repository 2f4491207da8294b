"""AUD_ACTIONS: one immutable row per state-changing command request.

The row records the request (OUTCOME REQUESTED, no exit code); what the request then did lives in
the run, attempt and migration records. Argument values under sensitive names are masked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from etl_craft.core.actor import Actor, host_name
from etl_craft.core.clock import utc_now
from etl_craft.core.text import REDACTED, looks_like_credential
from etl_craft.engine.database import EngineDb
from etl_craft.engine.schema.tables import aud_actions


def masked(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (REDACTED if looks_like_credential(k) and v is not None else v) for k, v in arguments.items()}


def record_request(
    db: EngineDb,
    actor: Actor,
    command: str,
    arguments: Mapping[str, Any],
    *,
    pipeline_id: int | None = None,
    pipeline_run_id: int | None = None,
    task_id: int | None = None,
) -> int:
    now = utc_now()
    with db.write() as conn:
        return int(
            conn.execute(
                aud_actions.insert()
                .values(
                    started_at=now,
                    ended_at=now,
                    actor=actor.name,
                    actor_kind=actor.kind.value,
                    host=host_name(),
                    command=command,
                    arguments=masked(arguments),
                    pipeline_id=pipeline_id,
                    pipeline_run_id=pipeline_run_id,
                    task_id=task_id,
                    outcome="REQUESTED",
                )
                .returning(aud_actions.c.action_id)
            ).scalar_one()
        )
