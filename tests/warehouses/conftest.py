"""Warehouse fixtures: every scenario runs on DuckDB and on PostgreSQL."""

from tests.fixtures.warehouse import sqlp, warehouse, warehouse_pg_database

__all__ = ["sqlp", "warehouse", "warehouse_pg_database"]
