"""Serving the API with uvicorn: in a thread beside the overseer loop, or alone (`--api-only`).

The two never wait on each other: the API has its own Engine DB connection pool, its endpoints run
in uvicorn's worker threads, and the overseer loop keeps its own thread.
"""

from __future__ import annotations

import logging
import threading
import time

import uvicorn

from etl_craft.config.model import ConnectorConfig
from etl_craft.core.errors import ConfigurationError
from etl_craft.engine.database import EngineDb
from etl_craft_server.api.app import create_app

log = logging.getLogger("etl_craft.server.api")
START_SECONDS = 15.0


def split_address(address: str) -> tuple[str, int]:
    """Orchestration.Api_address (already checked by the config loader) as host and port."""
    if address.startswith("["):
        host, _, port = address[1:].partition("]:")
    else:
        host, _, port = address.rpartition(":")
    return host, int(port)


def _server(config: ConnectorConfig, db: EngineDb) -> uvicorn.Server:
    host, port = split_address(config.orchestration.api_address)
    settings = uvicorn.Config(
        create_app(config, db),
        host=host,
        port=port,
        log_config=None,  # etl-craft's logging configuration stays
        access_log=False,  # an access line would carry paths only, but keep the log to what etl-craft says
        server_header=False,
        timeout_graceful_shutdown=10,
    )
    return uvicorn.Server(settings)


def _refused(address: str) -> ConfigurationError:
    return ConfigurationError(
        "craft-connector.yml: Orchestration.Api_address",
        found=f"{address}, where the API could not listen (in use, or not an address of this host)",
        expected="a free host:port of this machine",
        remedy="stop what listens there, or set Orchestration.Api_address to another port",
    )


class ApiListener:
    """uvicorn in a daemon thread; `start` returns once it listens, or raises if it could not."""

    def __init__(self, config: ConnectorConfig, db: EngineDb) -> None:
        self.address = config.orchestration.api_address
        self.server = _server(config, db)
        self.thread = threading.Thread(target=self.server.run, name="etl-craft-api", daemon=True)

    def start(self) -> None:
        self.thread.start()
        deadline = time.monotonic() + START_SECONDS
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        if not self.server.started:
            self.stop()
            raise _refused(self.address)
        log.info("etl-craft server: HTTP API on http://%s/api/v1 (OpenAPI at /api/v1/openapi.json)", self.address)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=15)


def serve_alone(config: ConnectorConfig, db: EngineDb) -> None:
    """`etl-craft server --api-only`: the API until SIGTERM or Ctrl-C, with no overseer (a read-mostly
    replica beside another server's overseer). The main thread waits for the signal, as the overseer
    does, so the process ends with exit 0 after uvicorn has finished its requests."""
    from etl_craft.execution.run_loop.signals import StopSignals

    listener = ApiListener(config, db)
    with StopSignals("etl-craft server --api-only").installed() as signals:
        listener.start()
        while signals.sleep(3600.0):
            pass
        log.info("etl-craft server --api-only: stopping (%s)", signals.reason)
        listener.stop()
