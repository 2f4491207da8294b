"""etl-craft: a metadata-driven ETL orchestrator."""

from __future__ import annotations

__version__ = "0.1.0"
