"""`etl-craft server`: the overseer and the HTTP API, until SIGTERM or Ctrl-C (`--api-only`: the API alone)."""

from __future__ import annotations

import argparse
import logging

from etl_craft.cli.banner import add_banner_flag, show_banner
from etl_craft.cli.framework import Command

log = logging.getLogger("etl_craft.server")


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--api-only",
        action="store_true",
        help="serve the HTTP API without the overseer (a replica beside the server that runs the pipelines)",
    )
    add_banner_flag(parser)


def _serve_api_only(args: argparse.Namespace) -> int:
    from etl_craft.engine.database import open_engine_db
    from etl_craft.services.context import open_context
    from etl_craft_server.api.listener import serve_alone

    ctx = open_context(args.config)
    try:
        api_db = open_engine_db(ctx.config)
        try:
            serve_alone(ctx.config, api_db)
        finally:
            api_db.dispose()
    finally:
        ctx.close()
    return 0


def _serve(args: argparse.Namespace) -> int:
    show_banner(args, "server: the HTTP API only" if args.api_only else "server: overseer and HTTP API")
    if args.api_only:
        return _serve_api_only(args)
    from etl_craft import __version__ as core_version
    from etl_craft.core.errors import ExitCode, RemoteUnsupportedError
    from etl_craft.engine.database import open_engine_db
    from etl_craft.execution.processes.identity import my_owner_id
    from etl_craft.execution.run_loop.signals import StopSignals
    from etl_craft.services.context import open_context
    from etl_craft_server import __version__
    from etl_craft_server.api.listener import ApiListener
    from etl_craft_server.leadership import OverseerHeartbeat, leadership
    from etl_craft_server.metrics import observe_statements
    from etl_craft_server.overseer import Overseer
    from etl_craft_server.schedule_clock import ScheduleClock

    # The overseer rides out connection errors (Overseer.serve), so it skips the ping before each of
    # its transactions: several round trips for every attempt it dispatches.
    ctx = open_context(args.config, ping=False)
    try:
        orchestration = ctx.config.orchestration
        if orchestration.mode == "remote":
            raise RemoteUnsupportedError(
                "etl-craft server",
                found="Orchestration.Mode: remote",
                expected="Mode: local (in remote mode the external orchestrator schedules and starts tasks)",
                remedy="run the generated DAGs in your orchestrator, or set Orchestration.Mode to local",
            )
        # The API's own pool, so its readers and the overseer never wait for each other's connections.
        api_db = open_engine_db(ctx.config)
        api = ApiListener(ctx.config, api_db)
        observe_statements(ctx.db.engine)  # the overseer's statements too, not only the API's
        clock = ScheduleClock.from_environment()
        owner = my_owner_id()
        leading = leadership(ctx.db, __version__, ctx.actor)
        with StopSignals("etl-craft server").installed() as signals, leading as (oid, still_held):
            log.info(
                "etl-craft server %s (core %s): overseer %s, owner %s, Engine DB %s, leader; "
                "schedules in %s%s; up to %s task process(es) at once across its runs",
                __version__,
                core_version,
                oid,
                owner,
                ctx.db.display_url,
                orchestration.timezone,
                "" if clock.real else f" on the test clock {clock.path}",
                orchestration.max_parallel_tasks,
            )
            heartbeat = OverseerHeartbeat(ctx.db, oid, str(owner), still_held, signals)
            heartbeat.start()
            try:
                api.start()
                try:
                    Overseer(ctx.db, ctx.config, owner, clock, signals, args.log_level).serve()
                finally:
                    api.stop()
            finally:
                heartbeat.stop()
                api_db.dispose()
            log.info("etl-craft server: overseer %s stopped (%s)", oid, signals.reason)
    finally:
        ctx.close()
    # A lost leadership is an Engine DB failure: a process supervisor restarts the server, which then
    # leads again or names the server that does.
    return int(ExitCode.ENGINE_DB if heartbeat.lost else ExitCode.SUCCESS)


SERVER = Command(
    "server",
    "the overseer and the HTTP API: create scheduled runs, supervise every local run and serve "
    "Orchestration.Api_address until SIGTERM or Ctrl-C",
    _serve,
    _configure,
)
