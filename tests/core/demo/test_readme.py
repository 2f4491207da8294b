"""The README's set-up: exactly two commands, the first installs etl-craft and runs the demo."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

README = Path(__file__).resolve().parents[3] / "README.md"
QUICK_START = README.parent / "docs" / "quick-start.md"


def marked_command(text: str, marker: str) -> str:
    found = re.search(rf"<!-- {marker} -->\n```\n(.*?)\n```", text, flags=re.DOTALL)
    assert found, f"README.md has no block after <!-- {marker} -->"
    return found.group(1)


def test_the_readme_has_two_set_up_commands_and_the_first_runs_the_demo() -> None:
    text = README.read_text(encoding="utf-8")
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert setup.count("```\n") == 4  # two blocks, each opened and closed
    assert (
        marked_command(text, "first command")
        == "python3 -m pip install --quiet uv && python3 -m uv run --frozen --compile-bytecode etl-craft demo"
    )
    assert (
        marked_command(text, "test command")
        == "python3 -m pip install --quiet uv && python3 -m uv run --frozen pytest -n 2"
    )


def test_the_quick_start_opens_with_the_same_two_commands() -> None:
    readme, quick_start = README.read_text(encoding="utf-8"), QUICK_START.read_text(encoding="utf-8")
    for marker in ("first command", "test command"):
        assert f"```\n{marked_command(readme, marker)}\n```" in quick_start
