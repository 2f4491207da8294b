"""Warehouse fixtures: every scenario runs on DuckDB and on PostgreSQL."""

from tests.fixtures.warehouse import shared_warehouse, sqlp, warehouse

__all__ = ["shared_warehouse", "sqlp", "warehouse"]
