"""etl-craft's own look: the logo, wordmark and favicon shipped as package data.

The SVG files are the hand-written sources; the PNG files are exports of them made by
`tools/export_brand_png.py`. Everything that shows the brand (the catalog site, the web UI, the
docs) reads the files through `asset`, so a wheel, an sdist and a checkout behave the same.
"""

from __future__ import annotations

from importlib import resources

from etl_craft.core.errors import ResourceNotFoundError

_ASSETS = resources.files(__name__) / "assets"


def asset_names() -> tuple[str, ...]:
    """Every shipped asset's file name (SVG sources and PNG exports), sorted."""
    return tuple(sorted(item.name for item in _ASSETS.iterdir() if item.name.endswith((".svg", ".png"))))


def asset(name: str) -> bytes:
    """The bytes of one asset, e.g. `asset("favicon.svg")`."""
    names = asset_names()
    if name not in names:
        raise ResourceNotFoundError(
            f"etl-craft has no brand asset {name!r}",
            remedy=f"use one of: {', '.join(names)}",
        )
    return (_ASSETS / name).read_bytes()
