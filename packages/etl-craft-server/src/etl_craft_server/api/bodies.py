"""The request bodies of the write endpoints, with the limits the CLI's flags have."""

from __future__ import annotations

from datetime import date
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.config import JsonDict

from etl_craft.core.actor import MAX_ACTOR_LENGTH
from etl_craft.core.text import CODE_LIMIT, OPERATOR_TEXT_LIMIT, RUN_KEY_LIMIT
from etl_craft.services.access.tokens import DURATION_PATTERN
from etl_craft.services.access.users import MAX_PASSWORD, MIN_PASSWORD

Reason = Field(min_length=1, max_length=OPERATOR_TEXT_LIMIT, description="why (recorded with the change)")


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _examples(example: JsonDict) -> ConfigDict:
    """A body's settings with the example the OpenAPI description shows."""
    return ConfigDict(extra="forbid", json_schema_extra={"examples": [example]})


class ReasonBody(_Body):
    model_config = _examples({"reason": "warehouse maintenance until 14:00"})

    reason: str = Reason


class CreateRunBody(_Body):
    """A new run, queued for the overseer (`etl-craft run --init-only`): the request returns at once."""

    model_config = _examples({"run_date": "2026-10-07", "run_key": "daily:2026-10-07"})

    run_date: date | None = Field(
        None, description="the date the run runs as of (default: today in the project's zone)"
    )
    run_key: str | None = Field(None, min_length=1, max_length=RUN_KEY_LIMIT, description="a key naming the run")


class MarkBody(_Body):
    model_config = _examples(
        {"status": "SUCCESS", "reason": "loaded by hand from the vendor's resend", "task_code": "load", "rows": 1200}
    )

    status: Literal["SUCCESS", "FAILED", "SKIPPED"]
    reason: str = Reason
    task_code: str | None = Field(
        None, min_length=1, max_length=CODE_LIMIT, description="without it, the run is marked"
    )
    rows: int | None = Field(None, ge=0, le=2**63 - 1, description="rows the task wrote")
    stale: bool = False


class RerunBody(_Body):
    model_config = _examples({"reason": "the vendor resent the file", "with_downstream": True})

    reason: str = Reason
    with_downstream: bool = False


class BackfillBody(_Body):
    model_config = _examples(
        {"first": "2026-09-01", "last": "2026-09-30", "reason": "the September files arrived late"}
    )

    first: date = Field(description="the first run date")
    last: date = Field(description="the last run date (inclusive)")
    reason: str = Reason


# Printable text with something besides spaces (check_name's rule, which also refuses bidirectional
# controls), so that a body the description calls valid is one the operation accepts.
_CONTROLS = "\\x00-\\x1f\\x7f-\\x9f\\u061c\\u200e\\u200f\\u2028-\\u202e\\u2066-\\u2069"  # as core.text's
_NAME_PATTERN = f"^[^{_CONTROLS}]*[^\\s{_CONTROLS}][^{_CONTROLS}]*$"
Name = Field(
    min_length=1,
    max_length=MAX_ACTOR_LENGTH,
    pattern=_NAME_PATTERN,
    description="the token's or user's name, printable: the actor of what it does",
)
Password = Field(
    min_length=MIN_PASSWORD, max_length=MAX_PASSWORD, description="never shown again, never logged", repr=False
)
ApiRoleName = Literal["viewer", "operator", "developer", "admin"]


class CreateTokenBody(_Body):
    model_config = _examples({"name": "ci-bot", "role": "operator", "expires": "90d"})

    name: str = Name
    role: ApiRoleName
    expires: str | None = Field(
        None,
        pattern=f"^{DURATION_PATTERN}$",
        description="days, hours or minutes from now: 90d, 12h, 30m (default: never). The CLI also takes an ISO date",
    )


class NameBody(_Body):
    model_config = _examples({"name": "ci-bot"})

    name: str = Name


class CreateUserBody(_Body):
    model_config = _examples({"name": "pat", "role": "viewer", "password": "a long passphrase"})

    name: str = Name
    role: ApiRoleName
    password: str = Password


class PasswordBody(_Body):
    model_config = _examples({"name": "pat", "password": "another long passphrase"})

    name: str = Name
    password: str = Password


class RepairBody(_Body):
    model_config = _examples({"task_code": "load"})

    task_code: str | None = Field(
        None, min_length=1, max_length=CODE_LIMIT, description="one task; without it, every task the run still needs"
    )
