"""Generated input for the CLI and what every answer to it must satisfy.

Commands run in this process through `etl_craft.cli.main.main` (a process per example would be too
slow), with stdout and stderr as strict UTF-8 streams like a terminal's, so a character the output
can't encode fails the example as it would fail the command.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import logging
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from etl_craft.cli.main import main
from etl_craft.core.errors import ExitCode
from etl_craft.core.text import CODE_RULE
from etl_craft.engine.schema import migrations
from tests.fixtures import postgres as pg
from tests.fixtures.harness import Harness
from tests.fixtures.project import Project

# Statuses a command may end with on bad input: every documented one but a bug's and a fault point's.
DOCUMENTED = frozenset(int(code) for code in ExitCode) - {int(ExitCode.UNEXPECTED), int(ExitCode.INJECTED_FAULT)}
# What may never reach the reader unescaped (printable() in etl_craft.core.text escapes these).
_UNSAFE_OUT = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")
_UNSAFE_ERR = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069\ud800-\udfff]")

FUZZ_SETTINGS = settings(
    max_examples=int(os.environ.get("ETL_CRAFT_FUZZ_EXAMPLES", "20")),
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --- values --------------------------------------------------------------------------------------------

HOSTILE = (
    "",
    " ",
    "\x1b[2J\x1b[H\x1b[31mrepainted",
    "\u202eevil\u202c",
    "a\x00b",
    "line one\nline two",
    "\udcff",
    "-x",
    "--",
    "'; DROP TABLE CFG_TASKS; --",
    "%s %(name)s {0} $$run_date",
    "\u00e9\u4e2d\U0001f600",
)
CONTROLS = st.text(st.characters(categories=("Cc", "Cf", "Zl", "Zp", "Cs")), min_size=1, max_size=8)
LONG = st.builds(lambda char, n: char * n, st.characters(codec="utf-8"), st.integers(129, 120_000))
TEXT = st.one_of(st.text(max_size=30), CONTROLS, LONG, st.sampled_from(HOSTILE))
INTEGER = st.one_of(
    st.integers().map(str),
    st.integers(2**63 - 2, 2**63 + 2).map(str),
    st.integers(-(2**63) - 2, -(2**63) + 2).map(str),
    st.sampled_from(["99999999999999999999", "0", "-1", " 7", "1_000", "\u0661\u0662", "0x10", "1e3", "+5"]),
    TEXT,
)
DATE = st.one_of(st.dates().map(str), st.sampled_from(["2024-02-30", "9999-12-31", "0001-01-01", "today"]), TEXT)
TIMESTAMP = st.one_of(st.datetimes(timezones=st.timezones()).map(lambda d: d.isoformat()), DATE)
BACKFILL = st.one_of(st.tuples(DATE, DATE).map(":".join), TEXT)
# Relative paths only: a generated path must never reach outside the project's folder.
PATH = st.one_of(
    st.sampled_from([".", "migrations", "config", "craft-connector.yml", "nope", "x" * 300, "a\x00b"]),
    TEXT.map(lambda t: "fuzz/" + t),
)


def codes(*real: str) -> st.SearchStrategy[str]:
    """Codes of active rows, codes that could be one and text that can't."""
    known = st.sampled_from(real) if real else st.nothing()
    return st.one_of(known, st.from_regex(CODE_RULE, fullmatch=True), TEXT)


# --- command lines ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Spec:
    """A command's options: each drawn with its values or left out; switches on or off."""

    name: tuple[str, ...]
    options: dict[str, st.SearchStrategy[str]]
    switches: tuple[str, ...] = ()
    positional: st.SearchStrategy[str] | None = None  # always given
    fixed: tuple[str, ...] = ()  # always given (e.g. a config that can't be found, for `server`)


@st.composite
def command_line(draw: st.DrawFn, spec: Spec) -> list[str]:
    argv = [*spec.name, *spec.fixed]
    for flag, values in spec.options.items():
        if draw(st.integers(0, 3)):  # most options are given, so deeper checks are reached
            argv += [flag, draw(values)]
    argv += [flag for flag in spec.switches if draw(st.booleans())]
    if spec.positional is not None:
        argv.append(draw(spec.positional))
    if draw(st.integers(0, 9)) == 0:
        argv += ["--log-level", draw(st.one_of(st.sampled_from(["debug", "ERROR"]), TEXT))]
    if draw(st.integers(0, 19)) == 0 and "--config" not in spec.fixed:
        argv += ["--config", draw(PATH)]
    fmt = draw(st.sampled_from(["json", "json", "text", None]))
    if fmt is not None:
        argv += ["--format", fmt]
    return argv


# --- the project ------------------------------------------------------------------------------------


@contextlib.contextmanager
def fuzz_harness(root: Path, dialect: str) -> Iterator[Harness]:
    """An initialised project on either Engine DB, shared by many examples (a module's fixture)."""
    with contextlib.ExitStack() as stack:
        database = None
        if dialect == "postgresql":
            pg.require_postgres()
            database = stack.enter_context(pg.throwaway_database())
        project = Project(root, dialect, database)
        stack.callback(project.close)
        project.write_config()
        migrations.init_db(project.open_db(create=True))
        harness = Harness(project)
        stack.callback(harness.close)
        yield harness


# --- running and judging -------------------------------------------------------------------------------


@dataclass
class Outcome:
    argv: list[str]
    status: int
    stdout: str
    stderr: str

    def __str__(self) -> str:
        shown = [a if len(a) < 200 else f"{a[:200]}… ({len(a)} characters)" for a in self.argv]
        return f"{shown!r}: exit {self.status}\n--- stdout\n{self.stdout[:3000]}\n--- stderr\n{self.stderr[:3000]}"


def _terminal() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict", newline="\n")


def _read(stream: io.TextIOWrapper) -> str:
    stream.flush()
    return stream.buffer.getvalue().decode("utf-8")  # type: ignore[attr-defined]


@contextlib.contextmanager
def inside(root: Path, env: dict[str, str]) -> Iterator[None]:
    """The project's folder as working folder and its environment, restored afterwards."""
    saved, cwd = dict(os.environ), Path.cwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(root)
    try:
        yield
    finally:
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(saved)


def invoke(argv: list[str]) -> Outcome:
    out, err = _terminal(), _terminal()
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(argv)
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
    return Outcome(argv, status, _read(out), _read(err))


def json_requested(argv: list[str]) -> bool:
    """As the parser reads it: the last --format given wins."""
    formats = [b for a, b in itertools.pairwise(argv) if a == "--format"]
    return bool(formats) and formats[-1] == "json"


def judge(outcome: Outcome) -> Any:
    """A documented status, no traceback, nothing a terminal acts on, and one JSON document on
    stdout when JSON was asked for (its exit code the status, for an error). Returns the document."""
    assert outcome.status in DOCUMENTED, outcome
    assert "Traceback" not in outcome.stderr, outcome
    assert not _UNSAFE_OUT.search(outcome.stdout), outcome
    assert not _UNSAFE_ERR.search(outcome.stderr), outcome
    if outcome.status not in (ExitCode.SUCCESS, ExitCode.FAILURE, ExitCode.INCOMPLETE, ExitCode.WAITING):
        assert "error: " in outcome.stderr, outcome
    if not json_requested(outcome.argv) or "--help" in outcome.argv:
        return None
    try:
        doc = json.loads(outcome.stdout)
    except ValueError:
        raise AssertionError(f"stdout is not one JSON document: {outcome}") from None
    assert str(doc.get("schema", "")).startswith("etl-craft/"), outcome
    if doc["schema"] == "etl-craft/error/1":
        assert doc["exit_code"] == outcome.status, outcome
    return doc
