"""Rendering: one JSON document on stdout with --format json, else text; errors go to stderr."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from etl_craft.services.documents import document, dumps


def wants_json(args: argparse.Namespace) -> bool:
    return getattr(args, "format", "text") == "json"


def emit(args: argparse.Namespace, kind: str, view: Any, text: str | list[str]) -> None:
    """Print the view as the `kind` document (JSON) or as the given text."""
    if wants_json(args):
        sys.stdout.write(dumps(document(kind, view)) + "\n")
    else:
        lines = text if isinstance(text, list) else [text]
        for line in lines:
            sys.stdout.write(line + "\n")
    sys.stdout.flush()


def note(args: argparse.Namespace, line: str) -> None:
    """A progress line for people: on stdout in text mode, on stderr with --format json."""
    stream = sys.stderr if wants_json(args) else sys.stdout
    stream.write(line + "\n")
    stream.flush()


def table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """Tab-separated lines with a header, as every listing command prints them."""
    return ["\t".join(header)] + ["\t".join("" if v is None else str(v) for v in row) for row in rows]
