"""Core finds warehouse dialects through entry points; each declares its capabilities."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from etl_craft.config.loader import load_config
from etl_craft.config.model import ConnectorConfig
from etl_craft.config.warehouses import WarehouseKind, installed_warehouses
from etl_craft.core.errors import ConfigurationError
from etl_craft.warehouse.dialect import WarehouseDialect, load_dialect
from etl_craft_warehouses.duckdb import DuckDBDialect
from etl_craft_warehouses.postgres import PostgresDialect

pytestmark = pytest.mark.unit


def config(tmp_path: Path, warehouse: str) -> ConnectorConfig:
    path = tmp_path / "craft-connector.yml"
    path.write_text(
        "Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n"
        f"Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n{warehouse}",
        encoding="utf-8",
    )
    return load_config(path, {})


def test_the_installed_dialects_are_found_through_entry_points() -> None:
    assert {"postgres", "duckdb"} <= set(installed_warehouses())


def test_each_warehouse_url_loads_its_dialect(tmp_path: Path) -> None:
    duck = load_dialect(config(tmp_path, "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n"))
    assert isinstance(duck, DuckDBDialect) and duck.database_name() == "warehouse"
    pg = load_dialect(
        config(tmp_path, "Warehouse:\n  jdbc_url: jdbc:postgresql://127.0.0.1:5432/dwh\n  schema: public\n  user: u\n")
    )
    assert isinstance(pg, PostgresDialect) and pg.database_name() == "dwh"


def test_capabilities_are_declared_as_class_attributes() -> None:
    table = {
        cls.name: (cls.jdbc_subprotocols, cls.identifier_case, cls.identity_columns, cls.single_writer)
        for cls in (PostgresDialect, DuckDBDialect)
    }
    assert table == {
        "postgres": (("postgresql",), "lower", True, False),
        "duckdb": (("duckdb",), None, False, True),
    }
    assert PostgresDialect.session_settings == ("SET TIME ZONE 'UTC'",)
    assert DuckDBDialect.session_settings == ("SET TimeZone = 'UTC'",)
    assert all(issubclass(c, WarehouseDialect) for c in (PostgresDialect, DuckDBDialect))
    kinds: list[WarehouseKind] = [PostgresDialect, DuckDBDialect]  # what the configuration sees of them
    assert all(isinstance(kind, WarehouseKind) for kind in kinds)


def test_an_unknown_warehouse_or_table_format_is_refused_naming_the_supported_ones(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigurationError, match=r"warehouse 'sqlserver' is not supported.*duckdb \(jdbc:duckdb:<file>\)"
    ):
        config(tmp_path, "Warehouse:\n  jdbc_url: jdbc:sqlserver://h:1433\n")
    with pytest.raises(ConfigurationError, match=r"iceberg is not available on a DuckDB warehouse"):
        config(tmp_path, "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n  Table_format: iceberg\n")
    base = config(tmp_path, "Warehouse:\n  jdbc_url: jdbc:duckdb:warehouse.duckdb\n")
    with pytest.raises(ConfigurationError, match=r"no Warehouse section"):
        load_dialect(dataclasses.replace(base, warehouse=None))
