"""The etl-craft worker agent: claims task attempts from the PostgreSQL queue."""

from __future__ import annotations

__version__ = "0.1.0"
