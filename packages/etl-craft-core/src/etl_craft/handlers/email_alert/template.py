"""EMAIL_ALERT parameters: recipients, when to send, and the subject and body templates with `$$` tokens.

Every template the task holds is checked before anything is sent (not only the one this outcome
uses), so a misspelt token in EMAIL_SUBJECT_FAILED fails the task on the first run rather than on
the day something fails.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from etl_craft.core.errors import TaskParameterError
from etl_craft.core.text import did_you_mean, one_line

OUTCOMES = ("SUCCESS", "COMPLETED_WITH_ERRORS", "FAILED")
TOKENS = ("status", "pipeline_id", "pipeline_run_id", "pipeline_code", "task_code", "run_date", "error_message")
SUBJECT_LIMIT = 200
_TOKEN = re.compile(r"\$\$([A-Za-z_][A-Za-z0-9_]*)")  # a `$$` not followed by a name is plain text
_ADDRESS = re.compile(r"[^@\s<>,|]+@[^@\s<>,|]+")
_REMEDY = "correct the parameter in the task's CFG_TASK_PARAMETERS with a project migration"


@dataclass(frozen=True)
class AlertParameters:
    recipients: tuple[str, ...]
    on_status: tuple[str, ...]
    pipelines: tuple[str, ...] | None  # None: no report; ("ALL",) or pipeline codes
    parameters: Mapping[str, str]

    def template(self, kind: str, outcome: str) -> str | None:
        """EMAIL_SUBJECT_<OUTCOME> (or EMAIL_BODY_<OUTCOME>) when set, else EMAIL_SUBJECT (EMAIL_BODY)."""
        return self.parameters.get(f"EMAIL_{kind}_{outcome}") or self.parameters.get(f"EMAIL_{kind}")


def _split(value: str) -> list[str]:
    return [part.strip() for part in value.split("|") if part.strip()]


def _recipients(task_code: str, raw: str | None) -> tuple[str, ...]:
    subject = f"task {task_code}: parameter EMAIL_TO"
    if raw is None or not raw.strip():
        raise TaskParameterError(
            subject,
            found="no value" if raw is None else repr(raw),
            expected="one or more addresses separated by |, e.g. data-team@example.com|oncall@example.com",
            remedy="add EMAIL_TO to the task's CFG_TASK_PARAMETERS",
        )
    addresses = _split(raw)
    bad = [a for a in addresses if not _ADDRESS.fullmatch(a)]
    if bad:
        raise TaskParameterError(
            subject,
            found=", ".join(repr(a) for a in bad),
            expected="email addresses such as etl@example.com, separated by |",
            remedy=_REMEDY,
        )
    return tuple(dict.fromkeys(addresses))


def _outcomes(task_code: str, raw: str | None) -> tuple[str, ...]:
    if raw is None or not raw.strip():
        return OUTCOMES
    chosen = _split(raw)
    for outcome in chosen:
        if outcome not in OUTCOMES:
            raise TaskParameterError(
                f"task {task_code}: parameter EMAIL_ON_STATUS",
                found=repr(outcome),
                expected="outcomes among " + ", ".join(OUTCOMES) + ", separated by |",
                remedy=_REMEDY + did_you_mean(outcome, OUTCOMES),
            )
    return tuple(dict.fromkeys(chosen))


def check_tokens(task_code: str, name: str, text: str) -> None:
    """Refuse any `$$` token other than the documented ones, naming the parameter and the token."""
    for match in _TOKEN.finditer(text):
        token = match.group(1)
        if token not in TOKENS:
            raise TaskParameterError(
                f"task {task_code}: parameter {name}",
                found=f"the token $${token}",
                expected="tokens among " + ", ".join(f"$${t}" for t in TOKENS),
                remedy=_REMEDY + did_you_mean(token, TOKENS),
            )


def parse_parameters(task_code: str, parameters: Mapping[str, str]) -> AlertParameters:
    recipients = _recipients(task_code, parameters.get("EMAIL_TO"))
    on_status = _outcomes(task_code, parameters.get("EMAIL_ON_STATUS"))
    listed = parameters.get("EMAIL_PIPELINES")
    pipelines = None
    if listed is not None and listed.strip():
        codes = _split(listed)
        pipelines = ("ALL",) if codes == ["ALL"] else tuple(dict.fromkeys(codes))
    for kind in ("SUBJECT", "BODY"):
        for name in (f"EMAIL_{kind}", *(f"EMAIL_{kind}_{o}" for o in OUTCOMES)):
            text = parameters.get(name)
            if text is not None:
                check_tokens(task_code, name, text)
    alert = AlertParameters(recipients, on_status, pipelines, parameters)
    for outcome in on_status:
        if alert.template("SUBJECT", outcome) is None:
            raise TaskParameterError(
                f"task {task_code}: parameter EMAIL_SUBJECT",
                found=f"no subject for outcome {outcome}",
                expected=f"EMAIL_SUBJECT (or EMAIL_SUBJECT_{outcome})",
                remedy="add EMAIL_SUBJECT to the task's CFG_TASK_PARAMETERS",
            )
        if alert.template("BODY", outcome) is None and pipelines is None:
            raise TaskParameterError(
                f"task {task_code}: parameter EMAIL_BODY",
                found=f"no body for outcome {outcome}",
                expected=f"EMAIL_BODY (or EMAIL_BODY_{outcome}), or EMAIL_PIPELINES to send a report",
                remedy="add EMAIL_BODY to the task's CFG_TASK_PARAMETERS",
            )
    return alert


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace each `$$token` with its value (tokens were checked by parse_parameters)."""
    return _TOKEN.sub(lambda m: values[m.group(1)], text)


def subject_line(text: str, values: Mapping[str, str]) -> str:
    """The subject: substituted, then one safe line of at most 200 characters (S2.F.1)."""
    return one_line(substitute(text, values), SUBJECT_LIMIT)
