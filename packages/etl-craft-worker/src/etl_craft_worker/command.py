"""`etl-craft worker`: claim attempts of one pool from the PostgreSQL queue until SIGTERM (which drains)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable

from etl_craft.cli.banner import add_banner_flag, show_banner
from etl_craft.cli.framework import Command

log = logging.getLogger("etl_craft.worker")


def _whole(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not (text.isascii() and text.isdigit()) or int(text) < minimum:
            raise argparse.ArgumentTypeError(f"found {text!r}; expected a whole number of at least {minimum}")
        return int(text)

    return parse


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pool", default="default", help="the pool whose queued attempts it claims (default: default)")
    parser.add_argument(
        "--ingestion-slots", type=_whole(0), default=4, help="PYTHON tasks it runs at once (default: 4)"
    )
    parser.add_argument(
        "--warehouse-slots", type=_whole(0), default=16, help="every other task it runs at once (default: 16)"
    )
    parser.add_argument(
        "--drain-seconds",
        type=_whole(0),
        default=300,
        help="on SIGTERM, how long it waits for its attempts before it stops them (default: 300)",
    )
    add_banner_flag(parser)


def _serve(args: argparse.Namespace) -> int:
    from etl_craft.core.actor import acting_as
    from etl_craft.core.errors import ExitCode, UsageError
    from etl_craft.execution.pools.interface import SlotKind
    from etl_craft.execution.processes.identity import my_owner_id
    from etl_craft.execution.run_loop.signals import StopSignals
    from etl_craft.services.context import open_context
    from etl_craft_worker.agent import Worker, WorkerSettings
    from etl_craft_worker.registration import refuse_unless_queue, register

    if args.ingestion_slots + args.warehouse_slots == 0:
        raise UsageError(
            "etl-craft worker",
            found="--ingestion-slots 0 and --warehouse-slots 0",
            expected="at least one slot",
            remedy="give the worker a slot of at least one kind",
        )
    show_banner(args, f"worker: pool {args.pool}")
    ctx = open_context(args.config, require_schema=False, ping=False)
    try:
        refuse_unless_queue(ctx.db)
        settings = WorkerSettings(
            pool=args.pool,
            slots={SlotKind.INGESTION: args.ingestion_slots, SlotKind.WAREHOUSE: args.warehouse_slots},
            drain_seconds=float(args.drain_seconds),
            log_level=args.log_level,
        )
        owner = my_owner_id()
        with StopSignals("etl-craft worker").installed() as signals:
            actor, worker_id, version = register(ctx.db, owner, settings)
            with acting_as(actor):
                log.info(
                    "etl-craft worker %s (%s): owner %s, pool %s, %s ingestion and %s warehouse slot(s), Engine DB %s",
                    worker_id,
                    version,
                    owner,
                    settings.pool,
                    args.ingestion_slots,
                    args.warehouse_slots,
                    ctx.db.display_url,
                )
                worker = Worker(ctx.db, ctx.config, owner, settings, signals)
                worker.serve()
    finally:
        ctx.close()
    # A worker fenced out (GONE) is an Engine DB failure: a process supervisor restarts it.
    return int(ExitCode.ENGINE_DB if worker.gone else ExitCode.SUCCESS)


WORKER = Command(
    "worker",
    "claim attempts of one pool from the PostgreSQL queue and run each in its own task process, "
    "until SIGTERM (which drains) or Ctrl-C",
    _serve,
    _configure,
)
