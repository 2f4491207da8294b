"""The brand assets: every variant present and well formed, reachable through `etl_craft.brand.asset`,
and inside both the wheel and the sdist that `uv build` makes."""

from __future__ import annotations

import re
import subprocess
import tarfile
import zipfile
from pathlib import Path
from xml.etree import ElementTree

import pytest

from etl_craft.brand import asset, asset_names
from etl_craft.core.errors import ResourceNotFoundError

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[3]
SOURCES = {f"{kind}{variant}.svg" for kind in ("logo", "wordmark") for variant in ("", "-dark", "-mono")} | {
    "favicon.svg"
}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_every_variant_is_a_parseable_svg_and_every_export_a_png() -> None:
    names = set(asset_names())
    assert names >= SOURCES
    for name in SOURCES:
        root = ElementTree.fromstring(asset(name))
        assert root.tag == "{http://www.w3.org/2000/svg}svg" and root.get("viewBox")
    pngs = {name for name in names if name.endswith(".png")}
    assert {"favicon-16.png", "favicon-32.png", "logo-128.png", "logo-dark-128.png", "logo-mono-128.png"} <= pngs
    assert all(asset(name).startswith(PNG_SIGNATURE) for name in pngs)


def test_the_monochrome_variants_use_only_the_current_colour() -> None:
    for name in ("logo-mono.svg", "wordmark-mono.svg"):
        text = asset(name).decode("utf-8")
        assert "currentColor" in text and "#" not in text


def test_an_unknown_asset_is_refused_with_the_names_there_are() -> None:
    with pytest.raises(ResourceNotFoundError) as refused:
        asset("../tables.py")
    assert "logo.svg" in refused.value.message


def test_the_wheel_and_the_sdist_carry_the_assets_and_their_license(tmp_path: Path) -> None:
    subprocess.run(
        ["uv", "build", "--package", "etl-craft-core", "--offline", "--out-dir", str(tmp_path)],
        cwd=ROOT, check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    wanted = {*asset_names(), "LICENSE.md"}
    (wheel,) = tmp_path.glob("*.whl")
    in_wheel = {Path(n).name for n in zipfile.ZipFile(wheel).namelist() if "/brand/assets/" in n}
    (sdist,) = tmp_path.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        in_sdist = {Path(n).name for n in archive.getnames() if "/brand/assets/" in n}
    assert wanted <= in_wheel
    assert wanted <= in_sdist


def test_the_readme_and_the_brand_guide_show_files_that_exist() -> None:
    for page in (ROOT / "README.md", ROOT / "docs" / "brand.md"):
        text = page.read_text(encoding="utf-8")
        linked = re.findall(r'(?:src|srcset)="([^"]+\.svg)"|\]\(([^)]+\.svg)\)', text)
        paths = [a or b for a, b in linked]
        assert paths, page
        for path in paths:
            assert (page.parent / path).resolve().is_file(), (page, path)
