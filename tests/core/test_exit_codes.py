"""The exit code reference documents exactly the ExitCode enum."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from etl_craft.core.errors import ExitCode

pytestmark = pytest.mark.unit

DOC = Path(__file__).parents[2] / "docs/reference/exit-codes.md"


def test_the_reference_lists_every_exit_code_with_its_number() -> None:
    rows = re.findall(r"^\| (\d+) \| (\w+) \|", DOC.read_text(encoding="utf-8"), re.M)
    assert [(int(n), name) for n, name in rows] == [(code.value, code.name) for code in ExitCode]


def test_the_fixed_codes_keep_their_numbers() -> None:
    assert (ExitCode.CONFIGURATION, ExitCode.STALE_TRANSITION, ExitCode.SQL_GUARD) == (3, 20, 21)
