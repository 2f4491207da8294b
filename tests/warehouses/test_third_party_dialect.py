"""A warehouse needs no core change: a third-party distribution plugs its dialect in through the entry
points and runs the compliance suite's smoke subset.

The toy distribution is written here (a pyproject and a module: DuckDB files behind its own
`jdbc:toyduck:` URL, and its provision), built and installed into a folder of its own with uv (its
native build backend, offline), and the suite runs in a child process that has that folder on its
path, so `importlib.metadata` finds the toy's entry points there and nowhere else.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.duckdb

ROOT = Path(__file__).resolve().parents[2]

PYPROJECT = """\
[project]
name = "toy-warehouse"
version = "0.1.0"
requires-python = ">=3.11"

[project.entry-points."etl_craft.warehouses"]
toy = "toy_warehouse:ToyDialect"

[project.entry-points."etl_craft.warehouse_provisions"]
toy = "toy_warehouse:ToyProvision"

[build-system]
requires = ["uv_build>=0.9,<1"]
build-backend = "uv_build"
"""

MODULE = '''\
"""A toy warehouse from outside etl-craft: DuckDB files behind a jdbc:toyduck: URL."""

from etl_craft_warehouses.duckdb import DuckDBDialect
from etl_craft_warehouses.provision import DuckDBProvision


class ToyDialect(DuckDBDialect):
    name = "toy"
    display_name = "Toy"
    jdbc_subprotocols = ("toyduck",)
    url_form = "jdbc:toyduck:<file>"


class ToyProvision(DuckDBProvision):
    name = "toy"
    url_prefix = "jdbc:toyduck:"
'''


def uv() -> list[str]:
    found = shutil.which("uv")
    if found:
        return [found]
    python = shutil.which("python3")
    assert python, "neither uv nor python3 (with uv) is on PATH"
    return [python, "-m", "uv"]


def install_toy(tmp_path: Path) -> Path:
    source = tmp_path / "toy-warehouse"
    (source / "src" / "toy_warehouse").mkdir(parents=True)
    (source / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (source / "src" / "toy_warehouse" / "__init__.py").write_text(MODULE, encoding="utf-8")
    target = tmp_path / "site"
    subprocess.run(
        [*uv(), "pip", "install", "--offline", "--no-deps", "--python", sys.executable, "--target", str(target),
         str(source)],
        check=True, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    return target


def test_a_toy_dialect_from_another_distribution_passes_the_smoke_subset(tmp_path: Path) -> None:
    site = install_toy(tmp_path)
    assert (site / "toy_warehouse-0.1.0.dist-info" / "entry_points.txt").is_file()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")]))}
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/warehouses/compliance", "-m", "smoke", "-k", "toy",
         "-p", "no:cacheprovider", "-p", "no:xdist", "-rA", "-q", f"--basetemp={tmp_path / 'suite'}"],
        check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    output = run.stdout + run.stderr
    assert run.returncode == 0, output
    passed = [line for line in output.splitlines() if line.startswith("PASSED ")]
    assert len(passed) >= 8, output
    assert all("toy" in line for line in passed), output
    assert not re.search(r"\b\d+ (failed|skipped|error)", output), output
