"""One WarehouseDialect per warehouse for etl-craft."""

from __future__ import annotations

__version__ = "0.1.0"
