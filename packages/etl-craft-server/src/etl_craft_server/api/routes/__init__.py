"""API v1 routes. Each endpoint calls exactly one service operation and returns the JSON document the
CLI prints for it with `--format json`. Importing this package registers every route in ENDPOINTS."""

from etl_craft_server.api.endpoints import ENDPOINTS, Endpoint, router
from etl_craft_server.api.routes import admin, attempts, reads, writes

__all__ = ["ENDPOINTS", "Endpoint", "admin", "attempts", "reads", "router", "writes"]
