"""`generate-docs` and `docs-version`: the catalog site of the project's pipelines, from the Engine DB."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from etl_craft.core.errors import ExitCode
from etl_craft.engine.reads.catalog import read_catalog_facts
from etl_craft.services.catalog.pages import build_pages, search_entries
from etl_craft.services.catalog.site import write_site
from etl_craft.services.context import OperationContext

HISTORY_RUNS = 20  # runs shown per pipeline


@dataclass(frozen=True)
class CatalogBuild:
    output: Path
    pages: int
    written: tuple[str, ...]
    unchanged: int
    removed: tuple[str, ...]
    untraced: tuple[str, ...]
    exit_code: int


def catalog_folder(ctx: OperationContext, output: Path | None) -> Path:
    """--output, else Docs_site.Output (relative to the config), else catalog/ beside the config."""
    if output is not None:
        return output.resolve()
    configured = ctx.config.docs_site.output if ctx.config.docs_site else Path("catalog")
    return (ctx.config.project_dir / configured).resolve()


def generate_docs(
    ctx: OperationContext, output: Path | None, *, strict: bool, with_warehouse: bool = False
) -> CatalogBuild:
    folder = catalog_folder(ctx, output)
    with ctx.db.snapshot() as conn:
        facts = read_catalog_facts(conn, history=HISTORY_RUNS)
    describe = None
    if with_warehouse:
        from etl_craft.services.catalog.warehouse_columns import warehouse_columns

        describe = functools.partial(warehouse_columns, ctx)
    pages = build_pages(facts, ctx.config.redaction, ctx.config.scripts_dir, describe)
    index = next(page for page in pages if page.path == "index.html")
    untraced = tuple(ref["label"] for ref in index.context["untraced"])
    if strict and untraced:
        return CatalogBuild(folder, len(pages), (), 0, (), untraced, int(ExitCode.FAILURE))
    done = write_site(folder, pages, search_entries(pages), {})
    return CatalogBuild(folder, len(pages), done.written, done.unchanged, done.removed, untraced, int(ExitCode.SUCCESS))
