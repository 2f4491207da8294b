"""`generate-yml`: the DAG YAML an orchestrator such as Airflow runs a pipeline from (remote mode)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from etl_craft.cli import arguments
from etl_craft.cli.framework import Command
from etl_craft.cli.output import emit, wants_json, write
from etl_craft.core.errors import ExitCode

DEFAULT_RANGE = ">=2.2.0"  # services.dag_yaml.DEFAULT_RANGE, repeated so --help imports no service


def _configure(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--pipeline_code", type=arguments.code, metavar="CODE", help="one pipeline's DAG")
    which.add_argument("--global", dest="whole", action="store_true", help="one DAG for every pipeline")
    which.add_argument("--docs", action="store_true", help="a DAG that rebuilds the catalog site")
    parser.add_argument(
        "--airflow-version",
        default=DEFAULT_RANGE,
        metavar="RANGE",
        help=f"the Airflow versions the DAG must run on (default {DEFAULT_RANGE})",
    )
    parser.add_argument("--output", type=arguments.path, metavar="PATH", help="write the YAML here (else stdout)")


def _run(args: argparse.Namespace) -> int:
    from etl_craft.services.context import open_context
    from etl_craft.services.dag_yaml import generate_yml

    ctx = open_context(args.config)
    try:
        generated = generate_yml(
            ctx,
            pipeline_code=args.pipeline_code,
            whole=args.whole,
            docs=args.docs,
            airflow_range=args.airflow_version,
            output=Path(args.output) if args.output else None,
        )
    finally:
        ctx.close()
    if wants_json(args):  # one document: the DAG id, where it went, and the YAML itself
        emit(args, "dag-yaml", generated, "")
    elif generated.output is None:
        write(sys.stdout, generated.text)
    else:
        write(sys.stderr, f"generate-yml: wrote DAG {generated.dag_id} to {generated.output}\n")
    return ExitCode.SUCCESS


GENERATE_YML = Command(
    "generate-yml", "write a pipeline's DAG YAML for an orchestrator (remote mode)", _run, _configure
)
