"""`generate-docs` and `docs-version`: the catalog site and the versions of tasks' DOCUMENTATION."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from etl_craft.cli import arguments
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit, table, wants_json, write


def _configure_generate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", type=arguments.path, metavar="DIR", help="the catalog folder (else Docs_site.Output, else catalog/)"
    )
    parser.add_argument(
        "--strict", action="store_true", help="write nothing and exit 1 if a SQL task has no column lineage"
    )
    parser.add_argument(
        "--with-warehouse",
        action="store_true",
        help="add each table's column types and comments, read from the warehouse (PostgreSQL, DuckDB)",
    )


def _generate(args: argparse.Namespace) -> int:
    from etl_craft.services.catalog import generate_docs
    from etl_craft.services.context import open_context

    ctx = open_context(args.config)
    try:
        built = generate_docs(
            ctx, Path(args.output) if args.output else None, strict=args.strict, with_warehouse=args.with_warehouse
        )
    finally:
        ctx.close()
    if not wants_json(args):
        for task in built.untraced:
            write(
                sys.stderr, f"column lineage unavailable: {task}: no lineage recorded (etl-craft lineage --refresh)\n"
            )
    pages = [p for p in built.written if p.endswith(".html")]
    message = (
        f"generate-docs: wrote nothing: {len(built.untraced)} SQL task(s) without column lineage (--strict)"
        if built.exit_code
        else f"generate-docs: wrote {len(pages)} page(s) to {built.output} ({built.pages - len(pages)} unchanged)"
    )
    emit(args, "catalog-build", built, message)
    return built.exit_code


def _configure_version(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--check", action="store_true", help="show what would be recorded and record nothing")


def _version(args: argparse.Namespace) -> int:
    from etl_craft.services.catalog.documentation import docs_version
    from etl_craft.services.context import open_context

    ctx = open_context(args.config)
    try:
        versions = docs_version(ctx, check=args.check)
    finally:
        ctx.close()
    rows = [[v.pipeline_code, v.task_code, v.version, "yes" if v.changed else "no"] for v in versions.tasks]
    emit(args, "docs-version", versions, table(["PIPELINE_CODE", "TASK_CODE", "VERSION", "CHANGED"], rows))
    return 0


def _configure_publish(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output", type=arguments.path, metavar="DIR", help="the catalog folder (else Docs_site.Output, else catalog/)"
    )
    parser.add_argument(
        "--local-only",
        action="store_true",
        help="serve on --host/--port only, without ngrok (also behind your own proxy)",
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port",
        type=arguments.whole_number(0, 65535),
        default=0,
        metavar="PORT",
        help="port to listen on (default 0: any free port)",
    )
    parser.add_argument(
        "--accept-new-url", action="store_true", help="record a published URL that differs from the last one"
    )


def _publish(args: argparse.Namespace) -> int:
    from etl_craft.services.catalog.publish import Publication, publish_docs
    from etl_craft.services.context import open_context

    def ready(publication: Publication) -> None:
        public = f" (published at {publication.public_url})" if publication.public_url else ""
        emit(
            args,
            "docs-publication",
            publication,
            f"publish-docs: serving {publication.folder} at {publication.local_url}{public}",
        )

    ctx = open_context(args.config)
    try:
        publish_docs(
            ctx,
            Path(args.output) if args.output else None,
            local_only=args.local_only,
            host=args.host,
            port=args.port,
            accept_new_url=args.accept_new_url,
            ready=ready,
        )
    finally:
        ctx.close()
    return 0


GENERATE_DOCS = Command(
    "generate-docs", "write the catalog site of the pipelines (static HTML)", _generate, _configure_generate
)
DOCS_VERSION = Command(
    "docs-version", "record a new version of each task DOCUMENTATION that changed", _version, _configure_version
)
PUBLISH_DOCS = Command(
    "publish-docs",
    "serve the catalog site (ngrok, or --local-only) until Ctrl-C or SIGTERM",
    _publish,
    _configure_publish,
)
