"""`--airflow-version RANGE`: the Airflow versions a generated DAG must run on.

Only the range's lowest version matters to generation: each template or trigger rule the YAML uses
needs some Airflow version, and a range that admits an older one is refused (exit 18).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from etl_craft.core.errors import RemoteUnsupportedError, UsageError

DEFAULT_RANGE = ">=2.2.0"
# `run_id` and `data_interval_end` in templates, which every command uses (S3.C).
TEMPLATES_SINCE = (2, 2, 0)
# The `one_done` trigger rule (a task with RUN_CONDITION ANY over ALWAYS dependencies).
ONE_DONE_SINCE = (2, 5, 0)

_CLAUSE = re.compile(r"\s*(>=|<=|==|!=|~=|>|<)\s*([0-9]+(?:\.[0-9]+){0,2})(\.\*)?\s*")


def shown(version: tuple[int, int, int]) -> str:
    return ".".join(str(part) for part in version)


def _version(text: str) -> tuple[int, int, int]:
    parts = [int(p) for p in text.split(".")]
    parts += [0] * (3 - len(parts))
    return (parts[0], parts[1], parts[2])


@dataclass(frozen=True)
class AirflowRange:
    text: str
    lowest: tuple[int, int, int]

    def require(self, since: tuple[int, int, int], subject: str, feature: str) -> None:
        """Refuse a range that admits an Airflow older than `since`, which lacks `feature`."""
        if self.lowest < since:
            raise RemoteUnsupportedError(
                subject,
                found=f"{feature}, which Airflow has only since {shown(since)}, and --airflow-version "
                f"{self.text!r}, which admits Airflow {shown(self.lowest)}",
                expected=f"a range of Airflow {shown(since)} or newer",
                remedy=f"pass --airflow-version '>={shown(since)}' (or a narrower range above it)",
            )


def parse_range(text: str) -> AirflowRange:
    """A comma-separated list of version clauses (PEP 440 operators); its lowest version is the
    highest of the lower bounds (>=, >, ==, ~=)."""
    lows: list[tuple[int, int, int]] = []
    for clause in text.split(","):
        match = _CLAUSE.fullmatch(clause)
        if match is None:
            raise UsageError(
                "--airflow-version",
                found=repr(text),
                expected="clauses such as '>=2.2.0', '>=3.0,<4' or '==2.11.*', separated by commas",
                remedy="correct the range",
            )
        operator, version = match.group(1), _version(match.group(2))
        if operator in (">=", ">", "==", "~="):
            lows.append(version)
    if not lows:
        raise UsageError(
            "--airflow-version",
            found=f"{text!r}, which has no lower bound",
            expected="a range with a lower bound, such as '>=2.2.0'",
            remedy=f"add a lower bound of at least {shown(TEMPLATES_SINCE)}",
        )
    return AirflowRange(text.strip(), max(lows))
