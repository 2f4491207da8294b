"""The terminal banner: shown by interactive entry points on a terminal, never in machine output.

Each case runs the real `etl-craft demo` in a child process whose stdout is a pseudo-terminal (or a
pipe), pointed at a folder that already holds a file so the demo refuses at once after the banner.
"""

from __future__ import annotations

import os
import pty
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from tests.fixtures.cli import ETL_CRAFT

pytestmark = pytest.mark.unit
VERSION = metadata.version("etl-craft-core")
TITLE = f"etl-craft {VERSION}"
COLOURS = ("\x1b[33m", "\x1b[36m")  # the sources' yellow and the table's cyan


def _busy_folder(tmp_path: Path) -> Path:
    (tmp_path / "keep.txt").write_text("not a demo\n", encoding="utf-8")
    return tmp_path


def _run(args: list[str], *, terminal: bool, **env: str) -> tuple[int, str]:
    """Run etl-craft; returns its exit status and what it wrote on stdout."""
    environment = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "ETL_CRAFT_NO_BANNER", "COLUMNS")}
    environment.update({"TERM": "xterm-256color", **env})
    if not terminal:
        done = subprocess.run(
            [ETL_CRAFT, *args], check=False, capture_output=True, text=True, env=environment, timeout=120
        )
        return done.returncode, done.stdout
    leader, follower = pty.openpty()
    child = subprocess.Popen([ETL_CRAFT, *args], stdout=follower, stderr=subprocess.DEVNULL, env=environment)
    os.close(follower)
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return child.wait(timeout=120), b"".join(chunks).decode("utf-8")


def test_a_terminal_gets_the_logo_with_the_installed_version_in_colour(tmp_path: Path) -> None:
    status, out = _run(["demo", str(_busy_folder(tmp_path))], terminal=True, COLUMNS="100")
    assert status != 0  # the demo refused the folder: the banner came first
    assert TITLE in out
    assert "┌──────┐" in out and "●──╮" in out
    assert all(colour in out for colour in COLOURS)


def test_no_color_and_a_dumb_terminal_get_plain_text(tmp_path: Path) -> None:
    _, no_colour = _run(["demo", str(_busy_folder(tmp_path))], terminal=True, COLUMNS="100", NO_COLOR="1")
    assert TITLE in no_colour and "┌──────┐" in no_colour
    assert not any(colour in no_colour for colour in COLOURS)
    _, dumb = _run(["demo", str(tmp_path)], terminal=True, COLUMNS="100", TERM="dumb")
    assert TITLE in dumb and "+------+" in dumb and "●" not in dumb
    assert not any(colour in dumb for colour in COLOURS)


def test_a_narrow_terminal_gets_one_line(tmp_path: Path) -> None:
    _, out = _run(["demo", str(_busy_folder(tmp_path))], terminal=True, COLUMNS="40", NO_COLOR="1")
    assert TITLE in out
    assert "┌" not in out and "+---" not in out


@pytest.mark.parametrize(
    ("extra", "env"),
    [(["--no-banner"], {}), ([], {"ETL_CRAFT_NO_BANNER": "1"}), (["--format", "json"], {})],
    ids=["flag", "variable", "json"],
)
def test_suppressed_by_the_flag_the_variable_and_json(tmp_path: Path, extra: list[str], env: dict[str, str]) -> None:
    status, out = _run(["demo", str(_busy_folder(tmp_path)), *extra], terminal=True, COLUMNS="100", **env)
    assert status != 0
    assert TITLE not in out and "┌" not in out


def test_piped_output_and_other_commands_never_show_it(tmp_path: Path) -> None:
    _, piped = _run(["demo", str(_busy_folder(tmp_path))], terminal=False)
    assert TITLE not in piped and "┌" not in piped
    _, validate = _run(["--config", str(tmp_path / "none.yml"), "validate"], terminal=True, COLUMNS="100")
    assert TITLE not in validate and "┌" not in validate
