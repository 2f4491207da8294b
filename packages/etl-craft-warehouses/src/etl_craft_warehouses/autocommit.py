"""A DB-API session for warehouses where every statement commits as it runs (Trino's Iceberg, Delta).

There is no transaction to open, commit or roll back: the actions on these warehouses publish each
replacement in one statement (`WarehouseDialect.transactional` is False), so nothing is left half
written to roll back.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from etl_craft.warehouse.dialect import WarehouseDialect
from etl_craft.warehouse.session import Session


class AutocommitSession(Session):
    def __init__(self, dialect: WarehouseDialect, conn: Any, error_class: type[Exception]) -> None:
        super().__init__(dialect, error_class)
        self.conn = conn

    def _statement(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        cursor = self.conn.cursor()
        try:
            if params is None:
                cursor.execute(sql)
            else:
                cursor.execute(sql, list(params))
            rows = [tuple(r) for r in cursor.fetchall()] if cursor.description else []
            if fetch:
                return rows, len(rows)
            if cursor.rowcount is not None and cursor.rowcount >= 0:
                return [], cursor.rowcount
            # Databricks answers DML with one row whose first column is the number of rows changed.
            return [], rows[0][0] if rows and isinstance(rows[0][0], int) else -1
        finally:
            cursor.close()

    def begin(self) -> None:
        """Each statement commits on its own: there is no transaction to open."""

    def commit(self) -> None:
        """Every statement committed as it ran."""

    def rollback(self) -> None:
        """Nothing is left to roll back."""

    def close(self) -> None:
        self.conn.close()
