"""The columns etl-craft writes itself, which actions keep which, and the rules for output names."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence

from etl_craft.core.errors import SqlGuardError

ROW_ID = "ROW_ID"
PIPELINE_ID = "PIPELINE_ID"
PIPELINE_RUN_ID = "PIPELINE_RUN_ID"
TASK_RUN_ID = "TASK_RUN_ID"
HASH_KEY = "HASH_KEY"
CREATE_DATE = "CREATE_DATE"
CREATED_BY = "CREATED_BY"
UPDATE_DATE = "UPDATE_DATE"
UPDATED_BY = "UPDATED_BY"
DELETE_FLAG = "DELETE_FLAG"
ACTIVE_FLAG = "ACTIVE_FLAG"

IDENTITY_COLUMNS = (PIPELINE_ID, PIPELINE_RUN_ID, TASK_RUN_ID)
AUDIT_COLUMNS = (HASH_KEY, CREATE_DATE, CREATED_BY, UPDATE_DATE, UPDATED_BY, DELETE_FLAG, ACTIVE_FLAG)
ENGINE_COLUMNS = (ROW_ID, *IDENTITY_COLUMNS, *AUDIT_COLUMNS)
ENGINE_KEYS = frozenset(c.lower() for c in ENGINE_COLUMNS)

_BASE = (ROW_ID, *IDENTITY_COLUMNS)
_SCD1 = (*_BASE, HASH_KEY, CREATE_DATE, CREATED_BY, UPDATE_DATE, UPDATED_BY, DELETE_FLAG)
# The engine columns of a target written by each action, in table order after the SELECT's columns.
ACTION_COLUMNS: dict[str, tuple[str, ...]] = {
    "CREATE_TABLE": _BASE,
    "OVERWRITE_TABLE": (*_BASE, UPDATE_DATE),
    "APPEND_TABLE": (*_BASE, CREATE_DATE),
    "SCD1_MERGE": _SCD1,
    "SCD2_MERGE": (*_SCD1, ACTIVE_FLAG),
}
MERGE_ACTIONS = ("SCD1_MERGE", "SCD2_MERGE")

# Internal columns of a deduplicating stage; never part of the SELECT's columns.
STAGE_ROW_NUMBER = "etl_craft_row_number"
STAGE_RANK = "etl_craft_rank"
STAGE_INTERNAL = frozenset({STAGE_ROW_NUMBER, STAGE_RANK})

PLAIN_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def engine_column_type(name: str, timestamp_type: str, text_type: Callable[[int | None], str]) -> str:
    """The type of an engine column; `text_type` gives the warehouse's text of an optional length."""
    if name in (ROW_ID, *IDENTITY_COLUMNS):
        return "BIGINT"
    if name == HASH_KEY:
        return text_type(32)
    if name in (CREATE_DATE, UPDATE_DATE):
        return timestamp_type
    if name in (DELETE_FLAG, ACTIVE_FLAG):
        return text_type(1)
    return text_type(None)


def is_engine_column(name: str) -> bool:
    return name.lower() in ENGINE_KEYS


def refuse_engine_columns(names: Iterable[str], where: str) -> None:
    """B12: the SELECT must not return a column etl-craft writes itself."""
    clashes = [n for n in names if is_engine_column(n)]
    if clashes:
        raise SqlGuardError(
            where,
            found=f"the SELECT returns {', '.join(clashes)}, which etl-craft writes itself",
            expected=f"no column named {', '.join(ENGINE_COLUMNS)}",
            remedy="list the columns you need instead of *, or alias them",
        )


def refuse_unquotable(names: Sequence[str], identifier_case: str | None, where: str) -> None:
    """B45: every output name must be usable unquoted in the warehouse's folded case."""
    for name in names:
        plain = bool(PLAIN_NAME.match(name))
        folded_ok = (
            (identifier_case == "lower" and name == name.lower())
            or (identifier_case == "upper" and name == name.upper())
            or identifier_case is None
        )
        if not (plain and folded_ok):
            suggestion = re.sub(r"[^a-z0-9_]+", "_", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()).strip("_")
            if not suggestion or not PLAIN_NAME.match(suggestion):
                suggestion = "column_1"
            raise SqlGuardError(
                where,
                found=f"the SELECT returns a column named {name!r}, which needs quoting",
                expected="names of letters, digits and _ that don't start with a digit"
                + ({"lower": ", in lower case", "upper": ", in upper case"}.get(identifier_case or "", "")),
                remedy=f"alias it, for example AS {suggestion}",
            )


def refuse_repeated_names(names: Sequence[str], where: str) -> None:
    seen: set[str] = set()
    for name in names:
        if name.lower() in seen:
            raise SqlGuardError(
                where,
                found=f"the SELECT returns the column {name!r} twice",
                expected="one column per name",
                remedy="alias one of them",
            )
        seen.add(name.lower())
