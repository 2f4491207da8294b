"""Operator text (--reason, pause reasons): at most 2,000 characters, stored exactly as given, and
printed with its control characters escaped by every command that shows it, in text and in JSON."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from etl_craft.core.errors import UsageError
from etl_craft.core.text import OPERATOR_TEXT_LIMIT, printable
from etl_craft.services.context import open_context
from etl_craft.services.interventions.pause import set_pause
from tests.core.interventions.conftest import Ops
from tests.fixtures.cli import Result

# Clears the screen, turns the text red, sets the window title, reverses what follows and fakes a line.
HOSTILE = "\x1b[2J\x1b[H\x1b[31mdisk full\x1b]0;owned\x07 \u202eKO\u202c\nP: pipeline_run_id=9 SUCCESS \x9b"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def shown(result: Result) -> str:
    """What the command printed, after checking it holds nothing a terminal would act on."""
    assert result.returncode == 0, str(result)
    assert not RAW.search(result.stdout), repr(result.stdout)
    assert "\nP: pipeline_run_id=9 SUCCESS" not in result.stdout  # the reason could not fake a line
    return result.stdout


def values(doc: Any) -> list[Any]:
    if isinstance(doc, dict):
        return [v for value in doc.values() for v in values(value)]
    if isinstance(doc, list):
        return [v for value in doc for v in values(value)]
    return [doc]


def test_a_reason_is_stored_as_given_and_printed_escaped_everywhere(ops: Ops) -> None:
    ops.define("p", {"a": "quick.py"})
    stand_in = ops.cli(
        "mark", "--pipeline_code", "p", "--task_code", "a", "--status", "SUCCESS", "--new-run", "--reason", HOSTILE
    )
    shown(stand_in)
    paused = ops.cli("pause", "--pipeline_code", "p", "--reason", HOSTILE)
    assert shown(paused).startswith(f"p: paused by alice@ops: {printable(HOSTILE)}")

    # Stored exactly as given.
    assert [p["reason"] for p in ops.pauses()] == [HOSTILE]
    assert {i["reason"] for i in ops.interventions()} == {HOSTILE}
    assert [a["arguments"]["reason"] for a in ops.actions("mark", "pause")] == [HOSTILE, HOSTILE]

    # Printed escaped: as a table cell (runs of spaces become one) and in a line of its own.
    cell = " ".join(printable(HOSTILE).split())
    run_id = str(ops.runs()[0]["pipeline_run_id"])
    texts = {
        "history": ["history", "--pipeline_code", "p"],
        "status": ["status", "--pipeline_code", "p", "--run-id", run_id],
        "explain": ["explain", "--pipeline_code", "p", "--task_code", "a", "--run-id", run_id],
        "list": ["list"],
        "run": ["run", "--pipeline_code", "p"],
        "audit": ["audit"],
    }
    for name, argv in texts.items():
        text = shown(ops.cli(*argv))
        assert printable(HOSTILE) in text or cell in text or "\\u001b[2J" in text, (name, text)

    # JSON documents carry the exact text; what a terminal would act on is a \u escape in them.
    for name, argv in texts.items():
        result = ops.cli(*argv, "--format", "json")
        assert not RAW.search(result.stdout), (name, result.stdout)
        found = [v for v in values(json.loads(result.stdout)) if isinstance(v, str) and "disk full" in v]
        assert found and all(HOSTILE in v for v in found), (name, found)


@pytest.mark.parametrize(
    "argv",
    [
        ["pause", "--pipeline_code", "p"],
        ["resume", "--pipeline_code", "p"],
        ["cancel", "--pipeline_code", "p"],
        ["reopen", "--pipeline_code", "p", "--run-id", "1"],
        ["mark", "--pipeline_code", "p", "--status", "FAILED", "--new-run"],
        ["run", "--pipeline_code", "p", "--skip"],
        ["run", "--pipeline_code", "p", "--backfill", "2026-01-01:2026-01-02"],
    ],
    ids=lambda argv: " ".join(argv[:1] + argv[3:]),
)
def test_a_reason_over_the_limit_is_refused_before_anything_is_recorded(ops: Ops, argv: list[str]) -> None:
    ops.define("p", {"a": "quick.py"})
    before = (ops.actions(), ops.pauses(), ops.runs(), ops.interventions())
    refused = ops.cli(*argv, "--reason", "x" * (OPERATOR_TEXT_LIMIT + 1), "--format", "json")
    assert refused.returncode == 2, str(refused)
    assert refused.stderr.splitlines()[-1] == (
        f"error: argument --reason: found {OPERATOR_TEXT_LIMIT + 1} characters; "
        f"expected UTF-8 text of at most {OPERATOR_TEXT_LIMIT} characters"
    )
    assert refused.json()["exit_code"] == 2
    assert (ops.actions(), ops.pauses(), ops.runs(), ops.interventions()) == before


def test_a_reason_at_the_limit_is_recorded_whole(ops: Ops) -> None:
    ops.define("p", {"a": "quick.py"})
    reason = "\u00e9" * OPERATOR_TEXT_LIMIT  # characters, not bytes, are counted
    assert ops.cli("pause", "--pipeline_code", "p", "--reason", reason).returncode == 0
    assert [p["reason"] for p in ops.pauses()] == [reason]


def test_the_service_refuses_what_the_parser_refuses(ops: Ops) -> None:
    """The HTTP API calls the services directly: the same limit holds there."""
    ops.define("p", {"a": "quick.py"})
    ctx = open_context(str(ops.project.config_path))
    try:
        for reason, found in (("x" * (OPERATOR_TEXT_LIMIT + 1), "2001 characters"), ("a\x00b", "NUL")):
            with pytest.raises(UsageError, match=found):
                set_pause(ctx, "pause", "p", reason)
    finally:
        ctx.close()
    assert ops.pauses() == []
