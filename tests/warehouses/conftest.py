"""Warehouse fixtures: every scenario runs on every installed warehouse dialect that ships a provision."""

from tests.fixtures import trino_emulation
from tests.fixtures.warehouse import shared_warehouse, sqlp, warehouse

trino_emulation.install()  # Trino sessions run on DuckDB while the Trino provision says so

__all__ = ["shared_warehouse", "sqlp", "warehouse"]
