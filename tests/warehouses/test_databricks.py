"""The Databricks dialect's configuration and SQL forms (no workspace can be reached here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from etl_craft.config.loader import load_config
from etl_craft.core.errors import ConfigurationError
from etl_craft.warehouse.dialect import load_dialect
from etl_craft_warehouses.databricks import DatabricksDialect, type_text
from tests.fixtures import emulation

pytestmark = pytest.mark.unit
URL = "jdbc:databricks://adb-1.azuredatabricks.net/Main?httpPath=/sql/1.0/warehouses/abc"
LOGIN = "  schema: Marts\n  user: token\n  auth_mode: token\n  secret: DBX_TOKEN\n"


def load(tmp_path: Path, url: str = URL, login: str = LOGIN) -> DatabricksDialect:
    path = tmp_path / "craft-connector.yml"
    path.write_text(
        "Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n"
        f"Engine:\n  jdbc_url: jdbc:sqlite:engine.db\nWarehouse:\n  jdbc_url: {url}\n{login}",
        encoding="utf-8",
    )
    found = load_dialect(load_config(path, {"DBX_TOKEN": "dapi-secret"}))
    assert isinstance(found, DatabricksDialect)
    return found


def test_a_databricks_url_names_the_workspace_catalog_and_sql_warehouse(tmp_path: Path) -> None:
    dialect = load(tmp_path)
    assert dialect.connection_arguments() == {
        "server_hostname": "adb-1.azuredatabricks.net",
        "http_path": "/sql/1.0/warehouses/abc",
        "access_token": "dapi-secret",
        "catalog": "Main",
        "schema": "marts",
        "user_agent_entry": "etl-craft",
    }
    assert dialect.database_name() == "main"
    assert dialect.table_sql(("Marts", "Customers")) == "`marts`.`customers`"
    assert dialect.quote("a`b") == "`a``b`"
    assert dialect.session_settings == ("SET TIME ZONE 'UTC'",)
    engine = dialect.script_engine()
    try:
        assert (engine.dialect.name, engine.url.host, engine.url.query["http_path"]) == (
            "databricks", "adb-1.azuredatabricks.net", "/sql/1.0/warehouses/abc"
        )  # fmt: skip
        assert "dapi-secret" not in str(engine.url)
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("jdbc:databricks://h:443;httpPath=/sql/1.0/warehouses/a", "JDBC driver settings after ';'"),
        ("jdbc:databricks://h/main", "names no SQL warehouse"),
        ("jdbc:databricks://h?httpPath=/sql/x", "does not name exactly one catalog"),
        ("jdbc:databricks://h/main/s?httpPath=/sql/x", "does not name exactly one catalog"),
        ("jdbc:databricks://h/main?httpPath=/sql/x&catalog=y", "catalog are not read by the Databricks dialect"),
    ],
)
def test_a_databricks_url_it_cannot_use_is_refused(tmp_path: Path, url: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load(tmp_path, url)


def test_only_a_personal_access_token_logs_in(tmp_path: Path) -> None:
    for login in ("  schema: m\n  user: u\n  auth_mode: password\n  secret: DBX_TOKEN\n", "  schema: m\n"):
        with pytest.raises(ConfigurationError, match="auth_mode token with secret"):
            load(tmp_path, login=login)


def test_updates_are_one_databricks_merge_and_timestamps_have_no_quoted_letters(tmp_path: Path) -> None:
    dialect = load(tmp_path)
    sql = dialect.update_from_stage("`m`.`t`", "`m`.`stage`", ["`id`"], [("`name`", "s.`name`")], None)
    assert isinstance(sqlglot.parse_one(sql, read="databricks"), sqlglot.exp.Merge)
    text = dialect.canonical_text("x", "timestamp")
    assert text is not None and "''" not in text and "\\" not in text
    assert [type_text(t) for t in ("DECIMAL(12, 2)", "INT", "STRING", "TIMESTAMP")] == [
        "decimal(12,2)", "int", "string", "timestamp"
    ]  # fmt: skip


def test_the_emulation_refuses_what_sqlglot_keeps_only_as_a_command() -> None:
    with pytest.raises(AssertionError, match="does not parse"):
        emulation.parse("VACUUM `m`.`t` RETAIN 0 HOURS GARBAGE", "databricks")
    assert emulation.warehouse_type(emulation.DATABRICKS, "TIMESTAMP WITH TIME ZONE") == "timestamp"
