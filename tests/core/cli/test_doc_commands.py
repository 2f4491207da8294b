"""Every `etl-craft ...` command line quoted in docs/ and the README parses with the real argument parser.

A command line is a line of a code block, or an inline code span, that starts with `etl-craft <word>`
(after an optional `$ ` prompt or a `uv run` launcher). Lines quoting program output (`INFO ...`,
`error: ...`) don't start that way and are not commands. Synopses are expanded: `[...]` is optional,
`(a | b)` and `[a | b]` are alternatives, `A|B` inside a word is a choice of words, and an indented
line continues the command above it. Placeholders (`P`, `N`, `FROM:TO`, `<code>`, ...) become sample
values, so a documented flag's value must still pass the flag's type and choices.

A code block shows a whole command, so it must parse completely. An inline span may only refer to a
command in prose ("`etl-craft run --init-only` starts a run"): every command, flag and value it names
must exist and be accepted, but it need not give the arguments the command requires.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from etl_craft.cli.commands import CORE_COMMANDS
from etl_craft.cli.main import BadArguments, build_parser, contributed_commands

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[3]
DOC_FILES = [*sorted((ROOT / "docs").rglob("*.md")), ROOT / "README.md"]

# Code blocks in these languages hold no shell commands.
NOT_SHELL = {"python", "sql", "yaml", "json", "csv"}

PLACEHOLDERS = {
    "P": "sales",
    "T": "load_orders",
    "CODE": "sales",
    "N": "7",
    "ID": "7",
    "K": "daily:2026-10-07",
    "KEY": "daily:2026-10-07",
    "R": "the vendor resent October",
    "DIR": "demo-folder",
    "PATH": "settings",
    "A": "MERGE_SCD1",
    "S.T": "mart.orders",
    "DATE": "2026-10-01",
    "TIMESTAMP": "2026-10-01T06:00:00Z",
    "FROM:TO": "2026-10-01:2026-10-07",
}

# The errors that only say a reference is incomplete (a required flag or a flag's value left out).
INCOMPLETE = re.compile(r"the following arguments are required|argument \S+: expected one argument$")
COMMAND_START = re.compile(r"^(?:\$\s+)?(?:(?:python3\s+-m\s+)?uv\s+run(?:\s+--\S+)*\s+)?etl-craft(?=\s|$)(.*)$")


@dataclass(frozen=True)
class Quoted:
    """One command line as the docs write it, and where."""

    where: str
    text: str
    complete: bool  # a code block's line, not a reference in prose


def _commands_in(text: str) -> list[str]:
    """The `etl-craft` arguments of each shell command in one line (`a && b` holds two)."""
    found = []
    for segment in text.split("&&"):
        match = COMMAND_START.match(segment.strip())
        if match and match.group(1).strip():
            found.append(match.group(1).strip())
    return found


def _block_lines(content: str) -> list[tuple[int, str]]:
    """A code block's lines (and their offsets), each indented or `\\`-continued line joined to the one above."""
    lines: list[tuple[int, str]] = []
    for offset, raw in enumerate(content.splitlines()):
        line = re.sub(r"(^|\s)#(\s.*)?$", "", raw)  # a shell comment
        if lines and (raw[:1].isspace() or lines[-1][1].endswith("\\")) and line.strip():
            lines[-1] = (lines[-1][0], lines[-1][1].rstrip("\\").rstrip() + " " + line.strip())
        else:
            lines.append((offset, line.rstrip()))
    return lines


def _span_line(lines: list[str], first: int, last: int, content: str) -> int:
    """The line (1-based) where an inline code span starts; the span may wrap over lines of its paragraph."""
    paragraph = "\n".join(lines[first:last])
    found = re.search("`" + r"\s+".join(map(re.escape, content.split())), paragraph)
    return first + 1 + (paragraph.count("\n", 0, found.start()) if found else 0)


def quoted_commands(path: Path, text: str | None = None) -> list[Quoted]:
    text = path.read_text(encoding="utf-8") if text is None else text
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    lines = text.splitlines()
    found = []
    for token in MarkdownIt("commonmark").parse(text):
        first, last = token.map or (0, 0)
        if token.type in ("fence", "code_block") and token.info.strip().lower() not in NOT_SHELL:
            fence = 1 if token.type == "fence" else 0
            for offset, block_line in _block_lines(token.content):
                where = f"{name}:{first + fence + offset + 1}"
                found += [Quoted(where, c, complete=True) for c in _commands_in(block_line)]
        elif token.type == "inline":
            for child in token.children or []:
                if child.type == "code_inline":
                    where = f"{name}:{_span_line(lines, first, last, child.content)}"
                    found += [Quoted(where, c, complete=False) for c in _commands_in(child.content)]
    return found


# A synopsis as a tree: a sequence holds words (each a tuple of choices) and groups (each a tuple of
# alternative sequences, plus whether the group may be left out).
Word = tuple[str, ...]
Group = tuple[tuple["Seq", ...], bool]
Seq = tuple["Word | Group", ...]


def _tokens(synopsis: str) -> list[str]:
    tokens = []
    for word in shlex.split(synopsis):
        if " " in word:  # a quoted value: brackets in it are text
            tokens.append(word)
            continue
        head = re.match(r"^[\[(]*", word).group(0)  # type: ignore[union-attr]
        tail = re.search(r"[\])]*$", word[len(head) :]).group(0)  # type: ignore[union-attr]
        core = word[len(head) : len(word) - len(tail)]
        tokens += [*head, *([core] if core else []), *tail]
    return tokens


def _parse(tokens: list[str], closing: str | None) -> tuple[tuple[Seq, ...], int]:
    """Alternative sequences up to `closing` (or the end); returns them and how many tokens were read."""
    alternatives: list[Seq] = []
    current: list[Word | Group] = []
    at = 0
    while at < len(tokens):
        token = tokens[at]
        at += 1
        if token in ("[", "("):
            inner, used = _parse(tokens[at:], "]" if token == "[" else ")")
            current.append((inner, token == "["))
            at += used
        elif token == closing:
            break
        elif token in ("]", ")"):
            raise ValueError(f"unbalanced {token!r} in the synopsis")
        elif token == "|":
            alternatives.append(tuple(current))
            current = []
        else:
            current.append(tuple(token.split("|")) if re.fullmatch(r"[^\s|]+(\|[^\s|]+)+", token) else (token,))
    else:
        if closing is not None:
            raise ValueError(f"missing {closing!r} in the synopsis")
    alternatives.append(tuple(current))
    return tuple(alternatives), at


def _expand(seq: Seq) -> list[list[str]]:
    options: list[list[list[str]]] = []
    for item in seq:
        if item and isinstance(item[0], str):
            options.append([[choice] for choice in item])  # type: ignore[union-attr]
        else:
            alternatives, optional = item  # type: ignore[misc]
            expanded = [variant for alternative in alternatives for variant in _expand(alternative)]
            options.append([[], *expanded] if optional else expanded)
    return [[token for part in parts for token in part] for parts in itertools.product(*options)]


def _value(token: str) -> str:
    angled = re.fullmatch(r"<([^<>]+)>", token)
    if angled:
        key = angled.group(1).upper().replace("-", "_")
        if key not in PLACEHOLDERS:
            raise ValueError(f"unknown placeholder {token}: add it to PLACEHOLDERS in {Path(__file__).name}")
        return PLACEHOLDERS[key]
    return PLACEHOLDERS.get(token, token)


def command_lines(synopsis: str) -> list[list[str]]:
    """Every concrete argument list a documented synopsis stands for."""
    alternatives, _ = _parse(_tokens(synopsis), None)
    if len(alternatives) > 1:
        raise ValueError("a top-level `a | b` is ambiguous: write the alternatives as `(a | b)` or `[a | b]`")
    return [[_value(token) for token in line] for line in _expand(alternatives[0])]


def parse_error(arguments: list[str]) -> str | None:
    """What the real parser says about an argument list, or None when it accepts it."""
    parser = build_parser([*CORE_COMMANDS, *contributed_commands()])
    try:
        with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
            args = parser.parse_args(arguments)
    except BadArguments as refused:
        return refused.message
    return None if getattr(args, "command", None) else "no command named"


def problems(quoted: Quoted) -> list[str]:
    try:
        lines = command_lines(quoted.text)
    except ValueError as error:
        return [f"{quoted.where}: `etl-craft {quoted.text}`: {error}"]
    found = []
    for line in lines:
        error = parse_error(line)
        if error and not (not quoted.complete and INCOMPLETE.search(error)):
            found.append(f"{quoted.where}: `etl-craft {quoted.text}` as `etl-craft {shlex.join(line)}`: {error}")
    return found


ALL_QUOTED = [quoted for path in DOC_FILES for quoted in quoted_commands(path)]


def test_the_docs_quote_commands_from_every_page_that_shows_one() -> None:
    # The scan itself must find the commands: a broken extraction would make the next test pass vacuously.
    pages = {quoted.where.split(":")[0] for quoted in ALL_QUOTED}
    assert {"README.md", "docs/quick-start.md", "docs/guides/running.md", "docs/guides/run-control.md"} <= pages
    assert any(q.text.startswith("run --pipeline_code") and "--backfill" in q.text for q in ALL_QUOTED)
    assert len(ALL_QUOTED) > 100


@pytest.mark.parametrize("quoted", ALL_QUOTED, ids=lambda q: q.where)
def test_every_documented_command_line_parses(quoted: Quoted) -> None:
    assert problems(quoted) == []


def test_a_command_or_flag_the_parser_does_not_know_is_reported() -> None:
    page = ROOT / "docs" / "example.md"
    text = (
        "Run `etl-craft backfill --pipeline_code P`, then:\n\n"
        "```\n"
        "etl-craft run --pipeline_code P --from-date DATE   # not a flag\n"
        "etl-craft history --pipeline_code P [--limit N | --all]\n"
        "etl-craft mark --pipeline_code P --status SUCCESS|DONE --reason R\n"
        "INFO etl-craft server: output, not a command\n"
        "```\n"
    )
    quoted = quoted_commands(page, text)
    assert [q.where for q in quoted] == [
        "docs/example.md:1",
        "docs/example.md:4",
        "docs/example.md:5",
        "docs/example.md:6",
    ]
    reports = [problems(q) for q in quoted]
    assert "invalid choice: 'backfill'" in reports[0][0]
    assert "unrecognized arguments: --from-date 2026-10-01" in reports[1][0]
    assert reports[2] == []  # three lines: without --limit/--all, with --limit 7, with --all
    assert len(reports[3]) == 1 and "invalid choice: 'DONE'" in reports[3][0]


def test_synopses_expand_to_every_form_with_sample_values() -> None:
    assert command_lines("reopen --pipeline_code P --reason R (--run-id N | --run-key KEY)") == [
        ["reopen", "--pipeline_code", "sales", "--reason", "the vendor resent October", "--run-id", "7"],
        [
            "reopen",
            "--pipeline_code",
            "sales",
            "--reason",
            "the vendor resent October",
            "--run-key",
            "daily:2026-10-07",
        ],
    ]
    assert command_lines("reconcile [--pipeline_code <code> [--task_code T]]") == [
        ["reconcile"],
        ["reconcile", "--pipeline_code", "sales"],
        ["reconcile", "--pipeline_code", "sales", "--task_code", "load_orders"],
    ]
    assert command_lines('run --pipeline_code P --reason "fix [a] | b"') == [
        ["run", "--pipeline_code", "sales", "--reason", "fix [a] | b"]
    ]
    with pytest.raises(ValueError, match="ambiguous"):
        command_lines("reopen --pipeline_code P --run-id N | --run-key KEY")
    with pytest.raises(ValueError, match="unknown placeholder <owner>"):
        command_lines("reconcile --pipeline_code <owner>")
