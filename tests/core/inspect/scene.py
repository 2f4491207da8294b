"""A project with real runs to inspect, and how the tests run commands in it."""

from __future__ import annotations

import contextlib
import io
import logging
import textwrap
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from etl_craft.cli.main import main
from etl_craft.core.clock import as_utc
from etl_craft.services.context import open_context
from etl_craft.services.documents import document, plain
from tests.fixtures.cli import Result, run_cli
from tests.fixtures.project import Project

ACTOR = "alice@test"

OK_SCRIPT = """\
from etl_craft.scripting import ScriptResult


def run(task):
    return ScriptResult(row_count=1)
"""

# Fails while a file named like the script with .flag exists beside it; deleting the flag fixes the feed.
FLAKY_SCRIPT = """\
from pathlib import Path

from etl_craft.scripting import ScriptResult


def run(task):
    if Path(__file__).with_suffix(".flag").exists():
        raise RuntimeError("the feed is down")
    return ScriptResult(row_count=1)
"""


@dataclass
class Scene:
    """A project with an Engine DB, its ingestion scripts and the commands run in it."""

    project: Project

    @property
    def root(self) -> Path:
        return self.project.root

    def cli(self, *args: str) -> Result:
        return run_cli(*args, env=self.project.env(ETL_CRAFT_ACTOR=ACTOR), cwd=self.root)

    def ok(self, *args: str) -> Result:
        result = self.cli(*args)
        assert result.returncode == 0, result
        return result

    def main(self, *args: str) -> Result:
        """The same command line run by `etl_craft.cli.main.main` in this process: the real parser,
        services and rendering without a process start (for JSON documents and refusals)."""
        out, err = io.StringIO(), io.StringIO()
        root = logging.getLogger()
        handlers, level = root.handlers[:], root.level
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["--config", str(self.project.config_path), *args])
        except SystemExit as exit_:  # argparse refusing the arguments
            code = int(exit_.code or 0)
        finally:
            root.handlers[:] = handlers
            root.setLevel(level)
        return Result(code, out.getvalue(), err.getvalue())

    def json(self, *args: str) -> Any:
        result = self.main(*args, "--format", "json")
        assert result.returncode == 0, result
        return result.json()

    def migration(self, name: str, sql: str) -> None:
        folder = self.root / "migrations"
        folder.mkdir(exist_ok=True)
        (folder / name).write_text(textwrap.dedent(sql), encoding="utf-8")

    def script(self, name: str, body: str, *, failing: bool = False) -> None:
        folder = self.root / "ingestion_scripts"
        folder.mkdir(exist_ok=True)
        (folder / name).write_text(body, encoding="utf-8")
        if failing:
            (folder / name).with_suffix(".flag").write_text("down\n")

    def fix(self, name: str) -> None:
        (self.root / "ingestion_scripts" / name).with_suffix(".flag").unlink()

    def service(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        ctx = open_context(str(self.project.config_path))
        try:
            return function(ctx, *args, **kwargs)
        finally:
            ctx.close()

    def document(self, kind: str, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """The service's JSON document, as `--format json` must print it."""
        return plain(document(kind, self.service(function, *args, **kwargs)))


def when(iso_text: str | None) -> str:
    """How the text output shows a time from a JSON document: UTC to the second."""
    if iso_text is None:
        return "-"
    return as_utc(datetime.fromisoformat(iso_text)).strftime("%Y-%m-%dT%H:%M:%SZ")


def tabbed(*cells: object) -> str:
    return "\t".join(str(c) for c in cells)
