"""No module over 500 lines but the declarative table definitions, no function over 80 lines (issue 17):
small modules whose names say what they hold, functions that do one thing. Fails naming each one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
MODULE_LINES = 500
FUNCTION_LINES = 80
# Declarative: every Engine DB table and column, in the schema's order (the generators read it).
DECLARATIVE = frozenset({"packages/etl-craft-core/src/etl_craft/engine/schema/tables.py"})


def oversized(root: Path = ROOT) -> list[str]:
    found = []
    for path in sorted(root.glob("packages/*/src/**/*.py")):
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MODULE_LINES and relative not in DECLARATIVE:
            found.append(f"{relative}: {lines} lines (at most {MODULE_LINES})")
        for node in ast.walk(ast.parse(text, filename=relative)):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > FUNCTION_LINES:
                    found.append(
                        f"{relative}:{node.lineno}: {node.name}() is {length} lines (at most {FUNCTION_LINES})"
                    )
    return found


def test_no_module_or_function_is_too_long() -> None:
    found = oversized()
    assert not found, "split these (docs/contributing/architecture.md):\n" + "\n".join(found)


def test_the_check_finds_a_long_module_and_a_long_function(tmp_path: Path) -> None:
    module = tmp_path / "packages" / "x" / "src" / "x" / "big.py"
    module.parent.mkdir(parents=True)
    body = "\n".join(f"    a{i} = {i}" for i in range(81))
    module.write_text(f"def long():\n{body}\n" + "\n" * 430, encoding="utf-8")
    assert oversized(tmp_path) == [
        "packages/x/src/x/big.py: 512 lines (at most 500)",
        "packages/x/src/x/big.py:1: long() is 82 lines (at most 80)",
    ]
