"""The Airflow DAG factory for etl-craft YAML exports; never imports etl_craft."""

from __future__ import annotations

__version__ = "0.1.0"
