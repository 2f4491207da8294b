"""Writing the catalog folder: the marker, the assets, the pages whose facts changed, the manifest.

The manifest (`manifest.json`) holds each page's fingerprint (a hash of its facts and of the
templates); a page whose fingerprint is unchanged is neither rendered nor written, so a rebuild after
one pipeline changed rewrites that pipeline's page and the pages that show it, nothing else.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from etl_craft.brand import asset
from etl_craft.core.errors import UsageError
from etl_craft.services.catalog.pages import Page, table_file
from etl_craft.services.documents import plain

MARKER = ".etl-craft-catalog"
MANIFEST = "manifest.json"
_TEMPLATES = resources.files(__package__) / "templates"
_STATIC = ("style.css", "search.js")
_BRAND = ("logo.svg", "favicon.svg", "favicon-32.png")


@dataclass(frozen=True)
class SiteWrite:
    written: tuple[str, ...]
    unchanged: int
    removed: tuple[str, ...]


def claim_folder(folder: Path) -> None:
    """Only a new or empty folder, or one etl-craft marked as its catalog, is written to."""
    if folder.exists() and not folder.is_dir():
        raise UsageError(
            f"catalog folder {folder}",
            found="a file",
            expected="a new or empty folder, or a catalog folder generate-docs wrote",
            remedy="choose another --output",
        )
    if folder.is_dir() and any(folder.iterdir()) and not (folder / MARKER).is_file():
        raise UsageError(
            f"catalog folder {folder}",
            found=f"files that generate-docs did not write (no {MARKER} marker)",
            expected="a new or empty folder, or a catalog folder generate-docs wrote",
            remedy="choose another --output, or empty this folder yourself",
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / MARKER).write_text("written by etl-craft generate-docs; it may empty and rewrite this folder\n")


def _environment() -> Any:
    import jinja2  # only generate-docs pays for it

    env = jinja2.Environment(
        loader=jinja2.FunctionLoader(lambda name: (_TEMPLATES / name).read_text(encoding="utf-8")),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["table_href"] = table_file
    return env


def _templates_hash() -> str:
    digest = hashlib.sha256()
    for item in sorted(_TEMPLATES.iterdir(), key=lambda i: i.name):
        digest.update(item.name.encode() + item.read_bytes())
    return digest.hexdigest()


def _replace(path: Path, data: bytes) -> None:
    """Write beside and rename, so a server reading the folder never sees half a page."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    partial.write_bytes(data)
    os.replace(partial, path)


def write_site(folder: Path, pages: list[Page], search: list[dict[str, str]], extras: dict[str, str]) -> SiteWrite:
    """Write what changed; `extras` are page-independent files (e.g. rendered SVG) keyed by path."""
    claim_folder(folder)
    manifest_path = folder / MANIFEST
    try:
        previous: dict[str, str] = json.loads(manifest_path.read_text(encoding="utf-8"))["pages"]
    except (OSError, ValueError, KeyError, TypeError):
        previous = {}
    templates = _templates_hash()
    env = None
    current: dict[str, str] = {}
    written: list[str] = []
    files: dict[str, bytes] = {f"assets/{name}": (_TEMPLATES / name).read_bytes() for name in _STATIC}
    files.update({f"assets/{name}": asset(name) for name in _BRAND})
    files["assets/search-index.js"] = (
        "window.ETL_CRAFT_SEARCH = " + json.dumps(search, ensure_ascii=False, sort_keys=True) + ";\n"
    ).encode()
    files.update({path: text.encode() for path, text in extras.items()})
    for path, data in files.items():
        current[path] = hashlib.sha256(data).hexdigest()
        if previous.get(path) != current[path] or not (folder / path).is_file():
            _replace(folder / path, data)
            written.append(path)
    for page in pages:
        facts = json.dumps(plain(page.context), sort_keys=True, default=str)
        fingerprint = hashlib.sha256(f"{templates}\n{page.template}\n{facts}".encode()).hexdigest()
        current[page.path] = fingerprint
        if previous.get(page.path) == fingerprint and (folder / page.path).is_file():
            continue
        env = env or _environment()
        root = "../" * page.path.count("/")
        html = env.get_template(page.template).render(root=root, page_path=page.path, **page.context)
        _replace(folder / page.path, html.encode("utf-8"))
        written.append(page.path)
    removed = []
    for path in sorted(set(previous) - set(current)):
        target = folder / path
        if target.is_file():
            target.unlink()
            removed.append(path)
    _replace(manifest_path, json.dumps({"pages": current}, indent=1, sort_keys=True).encode())
    return SiteWrite(tuple(written), len(current) - len(written), tuple(removed))
