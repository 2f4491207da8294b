"""The terminal banner: the logo drawn in text, with the installed version.

Only the interactive entry points (`server`, `demo`, `worker`) call `show_banner`, once, before they
start; imports, task processes and every other command never print it. It appears only on a terminal
in text mode, so JSON, piped and redirected output stay machine-readable; `--no-banner` or
`ETL_CRAFT_NO_BANNER=1` suppress it. rich decides colour (NO_COLOR, TERM=dumb) and width.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TextIO

from etl_craft import __version__

SUPPRESS_VARIABLE = "ETL_CRAFT_NO_BANNER"
# Two sources flowing into a table, as in brand/assets/logo.svg; s marks the sources' colour, t the table's.
_UNICODE = (
    ("s", " ●──╮   ", "t", "┌──────┐"),
    ("s", "    ├──>", "t", "├──┬───┤"),
    ("s", " ●──╯   ", "t", "│  │   │"),
    ("s", "        ", "t", "└──┴───┘"),
)
_ASCII = (
    ("s", " o--.   ", "t", "+------+"),
    ("s", "    |-->", "t", "+--+---+"),
    ("s", " o--'   ", "t", "|  |   |"),
    ("s", "        ", "t", "+--+---+"),
)
_STYLES = {"s": "yellow", "t": "cyan"}
_MINIMUM_WIDTH = 56  # narrower terminals get the one-line form


def add_banner_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--no-banner",
        action="store_true",
        help=f"do not print the etl-craft banner at start (also: {SUPPRESS_VARIABLE}=1)",
    )


def _suppressed(args: argparse.Namespace) -> bool:
    return bool(getattr(args, "no_banner", False)) or os.environ.get(SUPPRESS_VARIABLE, "") not in ("", "0")


def show_banner(args: argparse.Namespace, subtitle: str, stream: TextIO | None = None) -> bool:
    """Print the banner on `stream` (stdout) when it is a terminal in text mode; True if printed."""
    out = sys.stdout if stream is None else stream
    if _suppressed(args) or getattr(args, "format", "text") == "json" or not out.isatty():
        return False
    from rich.console import Console  # only interactive starts pay for rich
    from rich.text import Text

    console = Console(file=out, highlight=False, soft_wrap=False)
    title = f"etl-craft {__version__}"
    if console.width < _MINIMUM_WIDTH:
        console.print(Text(f"{title} - {subtitle}" if len(title) + len(subtitle) + 3 <= console.width else title))
        return True
    plain = console.is_dumb_terminal or not (console.encoding or "").lower().startswith("utf")
    art = _ASCII if plain else _UNICODE
    captions = ("", title, subtitle, "")
    for (source_key, source, table_key, table), caption in zip(art, captions, strict=True):
        line = Text()
        line.append(source, style=_STYLES[source_key])
        line.append(table, style=_STYLES[table_key])
        if caption:
            line.append("   ")
            line.append(caption, style="bold" if caption == title else "")
        console.print(line)
    console.print()
    return True
