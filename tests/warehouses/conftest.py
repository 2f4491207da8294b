"""Warehouse fixtures: every scenario runs on every installed warehouse dialect that ships a provision."""

from tests.fixtures import emulation
from tests.fixtures.warehouse import shared_warehouse, sqlp, warehouse

emulation.install()  # Trino and Databricks sessions run on DuckDB while their provisions say so

__all__ = ["shared_warehouse", "sqlp", "warehouse"]
