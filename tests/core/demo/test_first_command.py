"""The README's first command, exactly as written, in a fresh clone of this repository.

The clone has no virtual environment: `uv run --frozen` creates one from uv.lock (from uv's cache
when it is warm) and the demo runs in a new `etl-craft-demo` folder inside the clone. A clone takes
what is committed, so this test checks the last commit, as a newcomer would get it.

The command compiles the environment to bytecode once, at install; a later `uv run` in the synced
clone prints nothing of its own (a `compile-bytecode` setting in the workspace would make every
`uv run` compile again and print "Bytecode compiled ...").
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from tests.core.demo.test_readme import README, marked_command

pytestmark = [pytest.mark.sqlite, pytest.mark.duckdb, pytest.mark.timeout(600)]

REPOSITORY = README.parent


def _fresh_clone(target: Path) -> Path:
    if shutil.which("git") is None or not (REPOSITORY / ".git").exists():
        pytest.skip("the README's first command is tested from a git checkout")
    subprocess.run(["git", "clone", "--quiet", str(REPOSITORY), str(target)], check=True)
    return target


def test_the_first_command_runs_the_demo_in_a_fresh_clone(tmp_path: Path) -> None:
    clone = _fresh_clone(tmp_path / "clone")
    assert not (clone / ".venv").exists()
    command = marked_command(README.read_text(encoding="utf-8"), "first command")
    # Nothing of this test run leaks in: no active virtual environment (its bin folder leaves PATH, so
    # python3 is the machine's, as for a newcomer), no project config.
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "ETL_CRAFT_CONFIG", "UV_PROJECT_ENVIRONMENT", "UV_COMPILE_BYTECODE")
    }
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p and p != venv_bin)
    # No import writes a .pyc file, so any the environment has were compiled at install.
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    done = subprocess.run(
        ["bash", "-c", command], check=False, cwd=clone, env=env, capture_output=True, text=True, timeout=540
    )

    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    compiled = list((clone / ".venv").glob("lib/python3.*/site-packages/sqlalchemy/__pycache__/__init__.*.pyc"))
    assert len(compiled) == 1, "the first command did not compile the environment to bytecode"
    helped = subprocess.run(
        ["python3", "-m", "uv", "run", "--frozen", "etl-craft", "--help"],
        check=False,
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (helped.returncode, helped.stderr) == (0, ""), helped.stderr
    assert helped.stdout.startswith("usage: etl-craft ") and "    demo " in helped.stdout
    assert "every run of the demo ended SUCCESS (9 runs)" in done.stdout
    project = clone / "etl-craft-demo"
    engine = sa.create_engine(f"sqlite:///{project / 'engine.db'}")
    try:
        with engine.connect() as conn:
            runs = conn.execute(sa.select(t.aud_pipelines_run_log.c.status)).scalars().all()
    finally:
        engine.dispose()
    assert runs == ["SUCCESS"] * 9
    assert (project / "warehouse.duckdb").is_file()
