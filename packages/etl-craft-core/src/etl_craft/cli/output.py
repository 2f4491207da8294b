"""Rendering: one JSON document on stdout with --format json, else text; errors go to stderr.

Everything printed passes through `core.text.printable` (text) or `json_printable` (documents), so
stored text can't act on the reader's terminal. A reader that closes its end early (`etl-craft audit
| head`) ends only the output: the rest is discarded and the command finishes as it would have.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, TextIO

from etl_craft.core.text import printable
from etl_craft.services.documents import document, dumps


def wants_json(args: argparse.Namespace) -> bool:
    return getattr(args, "format", "text") == "json"


def discard(stream: TextIO) -> None:
    """Point the stream's file descriptor at /dev/null, as Python's documentation advises after a
    BrokenPipeError, so its later writes (and the flush at exit) succeed without a reader."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file (tests capture output in memory)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, fd)
    finally:
        os.close(devnull)


def write(stream: TextIO, text: str) -> None:
    """Write and flush; a stream whose reader has gone is discarded quietly."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        discard(stream)


def finish() -> None:
    """Flush stdout before the process exits (a reader that went away is not an error)."""
    write(sys.stdout, "")


def text_line(line: str) -> str:
    """A line of text output with every control character escaped; tabs between cells stay."""
    return "\t".join(printable(cell) for cell in line.split("\t"))


def emit(args: argparse.Namespace, kind: str, view: Any, text: str | list[str]) -> None:
    """Print the view as the `kind` document (JSON) or as the given text."""
    if wants_json(args):
        write(sys.stdout, dumps(document(kind, view)) + "\n")
    else:
        lines = text if isinstance(text, list) else [text]
        write(sys.stdout, "".join(text_line(line) + "\n" for line in lines))


def note(args: argparse.Namespace, line: str) -> None:
    """A progress line for people: on stdout in text mode, on stderr with --format json."""
    write(sys.stderr if wants_json(args) else sys.stdout, text_line(line) + "\n")


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """Tab-separated lines with a header, as every listing command prints them."""
    return ["\t".join(header)] + ["\t".join("" if v is None else str(v) for v in row) for row in rows]
