"""No code outside the dialect modules branches on a database's name.

Everything that differs between databases lives on a dialect object (one per warehouse in
etl-craft-warehouses, one per Engine DB in etl_craft.engine), so this walks the syntax tree of every
module under packages/*/src and of the warehouse compliance suite and refuses, naming file and line:

- a comparison (==, !=, in, not in, also against a tuple, list or set) with a database's name;
- a `match` case on a database's name;
- a dictionary keyed by a database's name (a mapping table such as postgres -> postgresql);
- a string test or cut (startswith, endswith, removeprefix, removesuffix) with a database's JDBC URL
  prefix, e.g. `url.startswith("jdbc:duckdb:")`.

To extend: add names to DATABASE_NAMES, and modules allowed to name databases to ALLOWED.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from fnmatch import fnmatch
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("packages/*/src/**/*.py", "tests/warehouses/compliance/**/*.py")
WAREHOUSE_NAMES = ("postgres", "postgresql", "duckdb", "snowflake", "trino", "databricks", "iceberg")
ENGINE_DB_NAMES = ("sqlite", "postgresql")
DATABASE_NAMES = frozenset((*WAREHOUSE_NAMES, *ENGINE_DB_NAMES))
# Modules that may name databases: the dialect modules.
ALLOWED = (
    "packages/etl-craft-warehouses/src/etl_craft_warehouses/*",
    "packages/etl-craft-core/src/etl_craft/engine/dialects/*",
    "packages/etl-craft-core/src/etl_craft/config/dialects/*",
)
# A project's own files (the demo's ingestion scripts), not etl-craft's code.
NOT_SCANNED = ("packages/etl-craft-core/src/etl_craft/demo/project/*",)
STRING_TESTS = frozenset({"startswith", "endswith", "removeprefix", "removesuffix"})


def _strings(node: ast.AST) -> Iterator[str]:
    """The string constants of a node: itself, or the items of a tuple, list or set literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for item in node.elts:
            yield from _strings(item)


def _named(text: str, names: frozenset[str]) -> str | None:
    return text if text.strip().lower() in names else None


def _prefixed(text: str, names: frozenset[str]) -> str | None:
    lowered = text.lower()
    return text if any(lowered.startswith(f"jdbc:{name}:") for name in names) or _named(text, names) else None


def branches(tree: ast.AST, names: frozenset[str]) -> Iterator[tuple[int, str]]:
    """(line, what) of every branch on one of `names` in a module's tree."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                for text in _strings(operand):
                    if _named(text, names):
                        yield node.lineno, f"a comparison with {text!r}"
        elif isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue):
            for text in _strings(node.pattern.value):
                if _named(text, names):
                    yield node.pattern.lineno, f"a match case {text!r}"
        elif isinstance(node, ast.Dict):
            for key in node.keys:
                for text in _strings(key) if key is not None else ():
                    if _named(text, names):
                        yield key.lineno, f"a mapping keyed by {text!r}"  # type: ignore[union-attr]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in STRING_TESTS:
            for argument in node.args:
                for text in _strings(argument):
                    if _prefixed(text, names):
                        yield node.lineno, f".{node.func.attr}({text!r})"


def scanned(allowed: tuple[str, ...] = ALLOWED) -> list[str]:
    """The modules checked, relative to the repository, without the allowed ones and the demo's project."""
    found = {path.relative_to(ROOT).as_posix() for pattern in SCANNED for path in ROOT.glob(pattern)}
    return sorted(p for p in found if not any(fnmatch(p, pattern) for pattern in (*allowed, *NOT_SCANNED)))


def offenders(names: frozenset[str], allowed: tuple[str, ...] = ALLOWED) -> list[str]:
    found = []
    for relative in scanned(allowed):
        tree = ast.parse((ROOT / relative).read_text(encoding="utf-8"), filename=relative)
        found += [f"{relative}:{line}: {what}" for line, what in branches(tree, names)]
    return found


def test_no_module_outside_the_dialects_branches_on_a_database_name() -> None:
    found = offenders(DATABASE_NAMES)
    assert not found, "branches on a database name outside the dialect modules:\n" + "\n".join(found)


def test_the_check_finds_each_kind_of_branch() -> None:
    source = """
if kind == "duckdb": pass
if url_kind(u) in ("duckdb", "DuckDB"): pass
match kind:
    case "snowflake": pass
TABLE = {"postgres": "postgresql"}
url.startswith("jdbc:trino:")
path = url.removeprefix("jdbc:duckdb:")
name = "duckdb"  # naming a database is fine; only branching on it is refused
"""
    found = list(branches(ast.parse(source), DATABASE_NAMES))
    assert found == [
        (2, "a comparison with 'duckdb'"),
        (3, "a comparison with 'duckdb'"),
        (3, "a comparison with 'DuckDB'"),
        (5, "a match case 'snowflake'"),
        (6, "a mapping keyed by 'postgres'"),
        (7, ".startswith('jdbc:trino:')"),
        (8, ".removeprefix('jdbc:duckdb:')"),
    ]
    checked = scanned()
    assert "packages/etl-craft-core/src/etl_craft/config/warehouses.py" in checked
    assert "tests/warehouses/compliance/test_read_only.py" in checked
    assert "packages/etl-craft-core/src/etl_craft/engine/database.py" in checked
    assert "packages/etl-craft-warehouses/src/etl_craft_warehouses/duckdb.py" not in checked
    assert "packages/etl-craft-core/src/etl_craft/engine/dialects/sqlite.py" not in checked
