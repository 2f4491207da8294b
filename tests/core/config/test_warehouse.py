"""The Warehouse section, and the URL rules every JDBC URL shares."""

from __future__ import annotations

from pathlib import Path

import pytest

from etl_craft.core.text import CREDENTIAL_KEYS, redact_url

pytestmark = pytest.mark.unit

HEAD = "Orchestration:\n  Mode: local\nEngine:\n  jdbc_url: jdbc:sqlite:engine.db\nWarehouse:\n"
PG = "jdbc:postgresql://wh.example.com/analytics"


def warehouse(lines: str) -> str:
    return HEAD + "".join(f"  {line}\n" for line in lines.splitlines())


def test_duckdb_file_resolved_beside_the_config(project):
    config = project.load(warehouse("Name: DuckDB\njdbc_url: jdbc:duckdb:data/warehouse.duckdb"))
    assert config.warehouse is not None
    assert config.warehouse.jdbc_url == f"jdbc:duckdb:{project.root / 'data' / 'warehouse.duckdb'}"
    assert config.warehouse.schema == "main"
    assert config.warehouse.table_format == "native"
    assert config.warehouse.name == "DuckDB"


@pytest.mark.parametrize("url", ["jdbc:duckdb:", "jdbc:duckdb::memory:", "jdbc:duckdb::memory:shared"])
def test_in_memory_duckdb_is_refused(project, url):
    message = project.refuse(warehouse(f'jdbc_url: "{url}"'))
    assert "craft-connector.yml: Warehouse.jdbc_url (line 6): an in-memory DuckDB database" in message


def test_duckdb_file_stem_must_be_an_identifier(project):
    message = project.refuse(warehouse("jdbc_url: jdbc:duckdb:my-warehouse.duckdb"))
    assert "the file name 'my-warehouse.duckdb' does not make a catalog name" in message


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("jdbc:sqlserver://host:1433", "sqlserver"),
    ],
)
def test_unsupported_warehouses_are_refused_naming_the_supported(project, url, kind):
    message = project.refuse(warehouse(f"jdbc_url: {url}"))
    assert f"warehouse '{kind}' is not supported in this release" in message
    assert "postgres" in message and "duckdb" in message


def test_an_unsupported_warehouse_name_is_refused(project):
    message = project.refuse(warehouse("Name: Oracle\njdbc_url: jdbc:duckdb:w.duckdb"))
    assert "Warehouse.Name (line 6): Oracle is not supported in this release" in message


def test_name_must_match_the_warehouse_url(project):
    message = project.refuse(warehouse("Name: Postgres\njdbc_url: jdbc:duckdb:w.duckdb"))
    assert "does not match jdbc_url, which names a DuckDB database" in message


def test_iceberg_on_postgres_is_refused(project):
    message = project.refuse(warehouse(f"jdbc_url: {PG}\nschema: marts\nTable_format: iceberg"))
    assert "Warehouse.Table_format (line 8): iceberg is not available on a PostgreSQL warehouse" in message


def test_postgres_warehouse_follows_the_engine_login_rules(project):
    config = project.load(
        warehouse(f"jdbc_url: {PG}\nschema: marts\nuser: loader\nsecret: WAREHOUSE_SECRET"),
        {"WAREHOUSE_SECRET": "wh-pw"},
    )
    assert config.warehouse is not None
    assert (config.warehouse.auth_mode, config.warehouse.user) == ("password", "loader")
    assert config.warehouse.secret_var == "WAREHOUSE_SECRET"
    message = project.refuse(warehouse(f"jdbc_url: {PG}\nschema: marts\nuser: loader\nauth_mode: sso"))
    assert "Warehouse.auth_mode (line 9): sso is not supported in this release" in message


def test_duckdb_refuses_a_login(project):
    message = project.refuse(warehouse("jdbc_url: jdbc:duckdb:w.duckdb\nsecret: X"))
    assert "Warehouse.secret (line 7): is not used: a DuckDB file has no login" in message


def test_a_table_format_no_installed_dialect_stores_is_refused(project):
    message = project.refuse(warehouse("jdbc_url: jdbc:duckdb:lake.duckdb\nTable_format: iceberg"))
    assert "Warehouse.Table_format (line 7): iceberg is not available on a DuckDB warehouse" in message
    assert "install the dialect that stores iceberg tables" in message


def test_a_key_no_installed_warehouse_reads_is_unknown(project):
    message = project.refuse(warehouse("jdbc_url: jdbc:duckdb:w.duckdb\ns3_secret: LAKE_S3"), {"LAKE_S3": "x"})
    assert "Warehouse.s3_secret (line 7): unknown key" in message


def test_database_and_catalog_keys_are_refused_with_the_reason(project):
    message = project.refuse(warehouse("jdbc_url: jdbc:duckdb:w.duckdb\ncatalog: main"))
    assert "Warehouse.catalog (line 7): unknown key" in message
    assert "Databricks" in message and "db=" in message


SNOWFLAKE = "jdbc:snowflake://myorg-acct.snowflakecomputing.com/?db=ANALYTICS&warehouse=LOAD_WH&role=LOADER"


def test_snowflake_warehouse_reads_its_url_and_login(project):
    config = project.load(
        warehouse(f"jdbc_url: {SNOWFLAKE}\nschema: marts\nuser: loader\nsecret: SF_SECRET"), {"SF_SECRET": "pw"}
    )
    assert config.warehouse is not None
    assert (config.warehouse.dialect, config.warehouse.auth_mode, config.warehouse.user) == (
        "snowflake",
        "password",
        "loader",
    )
    assert config.warehouse.table_format == "native"


@pytest.mark.parametrize(
    ("section", "says"),
    [
        (f"jdbc_url: {SNOWFLAKE}\nschema: marts", "Warehouse.secret: missing"),
        (
            "jdbc_url: jdbc:snowflake://acct.snowflakecomputing.com/?warehouse=W\nschema: m\nuser: u\nsecret: S",
            "the URL names no database",
        ),
        (
            "jdbc_url: jdbc:snowflake://acct.snowflakecomputing.com/?db=D&schema=X\nschema: m\nuser: u\nsecret: S",
            "the setting(s) schema are not read by the Snowflake dialect",
        ),
        (f"jdbc_url: {SNOWFLAKE}\nschema: m\nuser: u\nsecret: S\nTable_format: iceberg", "iceberg is not available"),
        (f"jdbc_url: {SNOWFLAKE}\nuser: u\nsecret: S", "Warehouse.schema: missing"),
    ],
)
def test_snowflake_refusals(project, section, says):
    assert says in project.refuse(warehouse(section), {"S": "x"})


CREDENTIAL_SPELLINGS = [*sorted(CREDENTIAL_KEYS), "PASSWORD", "Access_Token", "sslpassword"]


@pytest.mark.parametrize("key", CREDENTIAL_SPELLINGS)
def test_every_credential_query_key_is_refused_on_the_engine(project, key):
    message = project.refuse(
        "Orchestration: {}\nEngine:\n"
        f"  jdbc_url: jdbc:postgresql://db/etl?sslmode=require&{key}=hunter2\n  schema: etl\n"
    )
    assert f"Engine.jdbc_url (line 3): the query setting '{key}' carries a credential" in message
    assert "put the secret in a variable and name it in `secret`" in message.lower()
    assert "hunter2" not in message


@pytest.mark.parametrize("key", CREDENTIAL_SPELLINGS)
def test_every_credential_query_key_is_refused_on_the_warehouse(project, key):
    message = project.refuse(warehouse(f"jdbc_url: jdbc:duckdb:w.duckdb?{key}=hunter2"))
    assert f"Warehouse.jdbc_url (line 6): the query setting '{key}' carries a credential" in message
    assert "hunter2" not in message


def test_a_password_in_the_url_is_refused_without_showing_it(project):
    message = project.refuse(warehouse("jdbc_url: jdbc:postgresql://loader:hunter2@wh/analytics\nschema: m"))
    assert "Warehouse.jdbc_url (line 6): the URL carries a password" in message
    assert "hunter2" not in message


def test_url_file_settings_are_resolved_beside_the_config(project):
    config = project.load(
        warehouse(
            f"jdbc_url: {PG}?sslmode=verify-full&sslrootcert=certs/ca.pem&sslcert=c.crt&sslkey=/abs/c.key\n"
            "schema: marts"
        )
    )
    assert config.warehouse is not None
    assert dict(config.warehouse.url_files) == {
        "sslrootcert": project.root / "certs" / "ca.pem",
        "sslcert": project.root / "c.crt",
        "sslkey": Path("/abs/c.key"),
    }


def test_sslrootcert_system_is_not_a_file(project):
    config = project.load(
        "Orchestration: {}\nEngine:\n"
        "  jdbc_url: jdbc:postgresql://db/etl?sslmode=verify-full&sslrootcert=system\n  schema: etl\n"
    )
    assert config.engine.url_files == ()


def test_redact_url_masks_a_password_and_a_token_like_query_value():
    shown = redact_url("postgresql://loader:hunter2@db:5432/etl?sslmode=require&api_token=abc123&sslkey=k")
    assert "hunter2" not in shown and "abc123" not in shown
    assert "loader:***@db:5432" in shown
    assert "api_token=***" in shown
    assert "sslmode=require" in shown


def test_a_login_name_in_the_url_is_refused_pointing_at_user(project):
    message = project.refuse(warehouse("jdbc_url: jdbc:postgresql://loader@wh/analytics\nschema: m"))
    assert "Warehouse.jdbc_url (line 6): the URL carries a login name" in message
    assert "write it in `user`" in message


def test_an_empty_url_file_setting_is_refused(project):
    message = project.refuse(warehouse(f"jdbc_url: {PG}?sslrootcert=\nschema: m"))
    assert "the query setting 'sslrootcert' is empty" in message


def test_a_warehouse_url_without_jdbc_prefix_is_refused(project):
    message = project.refuse(warehouse("jdbc_url: duckdb:w.duckdb"))
    assert "Warehouse.jdbc_url (line 6): found 'duckdb:w.duckdb'" in message
    assert "Start the URL with jdbc:" in message


def test_max_warehouse_queries_is_the_connections_limit_and_must_be_a_whole_number(project):
    assert project.load(warehouse("jdbc_url: jdbc:duckdb:w.duckdb")).warehouse.max_queries is None
    limited = project.load(warehouse("jdbc_url: jdbc:duckdb:w.duckdb\nMax_warehouse_queries: 3"))
    assert limited.warehouse.max_queries == 3
    message = project.refuse(warehouse("jdbc_url: jdbc:duckdb:w.duckdb\nMax_warehouse_queries: 0"))
    assert "Warehouse.Max_warehouse_queries (line 7)" in message and "a whole number from 1 to 10000" in message
