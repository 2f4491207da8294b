"""The request bodies of the write endpoints, with the limits the CLI's flags have."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from etl_craft.core.actor import MAX_ACTOR_LENGTH
from etl_craft.core.text import CODE_LIMIT, OPERATOR_TEXT_LIMIT, RUN_KEY_LIMIT
from etl_craft.services.access.users import MAX_PASSWORD, MIN_PASSWORD

Reason = Field(min_length=1, max_length=OPERATOR_TEXT_LIMIT, description="why (recorded with the change)")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ReasonBody(_Body):
    reason: str = Reason


class CreateRunBody(_Body):
    """A new run, queued for the overseer (`etl-craft run --init-only`): the request returns at once."""

    run_date: date | None = Field(
        None, description="the date the run runs as of (default: today in the project's zone)"
    )
    run_key: str | None = Field(None, min_length=1, max_length=RUN_KEY_LIMIT, description="a key naming the run")


class MarkBody(_Body):
    status: Literal["SUCCESS", "FAILED", "SKIPPED"]
    reason: str = Reason
    task_code: str | None = Field(
        None, min_length=1, max_length=CODE_LIMIT, description="without it, the run is marked"
    )
    rows: int | None = Field(None, ge=0, le=2**63 - 1, description="rows the task wrote")
    stale: bool = False


class RerunBody(_Body):
    reason: str = Reason
    with_downstream: bool = False


class BackfillBody(_Body):
    first: date = Field(description="the first run date")
    last: date = Field(description="the last run date (inclusive)")
    reason: str = Reason


Name = Field(min_length=1, max_length=MAX_ACTOR_LENGTH, description="the token's or user's name: the actor")
Password = Field(
    min_length=MIN_PASSWORD, max_length=MAX_PASSWORD, description="never shown again, never logged", repr=False
)
ApiRoleName = Literal["viewer", "operator", "developer", "admin"]


class CreateTokenBody(_Body):
    name: str = Name
    role: ApiRoleName
    expires: str | None = Field(
        None, min_length=1, max_length=64, description="90d, 12h, 30m or an ISO date (default: never)"
    )


class NameBody(_Body):
    name: str = Name


class CreateUserBody(_Body):
    name: str = Name
    role: ApiRoleName
    password: str = Password


class PasswordBody(_Body):
    name: str = Name
    password: str = Password


class RepairBody(_Body):
    task_code: str | None = Field(
        None, min_length=1, max_length=CODE_LIMIT, description="one task; without it, every task the run still needs"
    )
