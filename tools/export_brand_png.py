"""Rasterize the hand-written brand SVGs into the small PNG exports shipped beside them.

Run from the repository root after editing an SVG: uv run python -m tools.export_brand_png
It drives Debian's chromium headless (the browser the test suite uses), so no image library or
downloaded tool is needed; each SVG is drawn at its exact size on a transparent background.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

ASSETS = Path(__file__).resolve().parent.parent / "packages/etl-craft-core/src/etl_craft/brand/assets"
EXPORTS = (  # (source SVG, PNG name, width, height)
    ("favicon.svg", "favicon-16.png", 16, 16),
    ("favicon.svg", "favicon-32.png", 32, 32),
    ("logo.svg", "logo-64.png", 64, 64),
    ("logo.svg", "logo-128.png", 128, 128),
    ("logo-dark.svg", "logo-dark-128.png", 128, 128),
    ("logo-mono.svg", "logo-mono-128.png", 128, 128),
    ("wordmark.svg", "wordmark-232.png", 232, 64),
    ("wordmark-dark.svg", "wordmark-dark-232.png", 232, 64),
)


def export(source: str, target: str, width: int, height: int, browser: str) -> None:
    with tempfile.TemporaryDirectory() as work:
        page = Path(work) / "page.html"
        page.write_text(
            f'<html><body style="margin:0"><img src="{(ASSETS / source).as_uri()}" '
            f'style="display:block;width:{width}px;height:{height}px"></body></html>',
            encoding="utf-8",
        )
        subprocess.run(
            [browser, "--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars",
             "--default-background-color=00000000", f"--window-size={width},{height}",
             f"--screenshot={ASSETS / target}", page.as_uri()],
            check=True, capture_output=True, timeout=120,
        )  # fmt: skip


if __name__ == "__main__":
    chromium = shutil.which("chromium")
    if chromium is None:
        raise SystemExit("chromium is not installed: apt-get install chromium")
    for source, target, width, height in EXPORTS:
        export(source, target, width, height, chromium)
        print(f"wrote {ASSETS / target}")
