"""Warehouse fixtures: every scenario runs on every installed warehouse dialect that ships a provision."""

from tests.fixtures.warehouse import shared_warehouse, sqlp, warehouse

__all__ = ["shared_warehouse", "sqlp", "warehouse"]
