"""The Trino dialect's configuration, and its statements as Trino SQL (no Trino server runs here)."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from etl_craft.core.errors import ConfigurationError
from etl_craft.warehouse.dialect import load_dialect
from etl_craft_warehouses.trino import TrinoDialect
from tests.fixtures import emulation
from tests.warehouses.test_dialects import config

pytestmark = pytest.mark.unit
SECTION = "Warehouse:\n  jdbc_url: {url}\n  schema: Sales\n  user: loader\n"


def test_a_trino_url_names_the_server_and_the_iceberg_catalog(tmp_path: Path) -> None:
    dialect = load_dialect(config(tmp_path, SECTION.format(url="jdbc:trino://trino.example:8443/Lake?SSL=true")))
    assert isinstance(dialect, TrinoDialect)
    assert (dialect.database_name(), dialect.server_address(), dialect.table_formats) == (
        "lake", ("trino.example", 8443, "Lake"), ("iceberg",)
    )  # fmt: skip
    args = dialect.connection_arguments()
    assert {k: args[k] for k in ("host", "port", "catalog", "schema", "user", "http_scheme", "timezone")} == {
        "host": "trino.example", "port": 8443, "catalog": "Lake", "schema": "sales", "user": "loader",
        "http_scheme": "https", "timezone": "UTC",
    }  # fmt: skip
    assert "auth" not in args  # no auth_mode: the user alone, as an unsecured Trino takes it
    assert dialect.scratch_sql("etl_stage_1_ab") == '"sales"."etl_stage_1_ab"'


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("jdbc:trino://h:8080", "does not name exactly one catalog"),
        ("jdbc:trino://h:8080/iceberg/sales", "does not name exactly one catalog"),
        ("jdbc:trino://h:8080/iceberg?sessionProperties=x", "sessionproperties are not read by the Trino dialect"),
        ("jdbc:trino://h:8080/iceberg?SSL=maybe", "expected SSL=true or SSL=false"),
        ("jdbc:trino://u:p@h:8080/iceberg", "the URL carries a login"),
    ],
)
def test_a_trino_url_that_says_something_the_dialect_does_not_read_is_refused(
    tmp_path: Path, url: str, message: str
) -> None:
    with pytest.raises(ConfigurationError, match=message):
        config(tmp_path, SECTION.format(url=url))


def test_password_and_token_logins_reach_the_client_and_key_files_are_refused(tmp_path: Path) -> None:
    url = "jdbc:trino://h:8443/iceberg?SSL=true"
    path = tmp_path / "craft-connector.yml"
    for mode, auth in (("password", "BasicAuthentication"), ("token", "JWTAuthentication")):
        section = SECTION.format(url=url) + f"  auth_mode: {mode}\n  secret: TRINO_SECRET\n"
        path.write_text(
            "Secrets:\n  Source_type: environment\nOrchestration:\n  Mode: local\n"
            f"Engine:\n  jdbc_url: jdbc:sqlite:engine.db\n{section}",
            encoding="utf-8",
        )
        from etl_craft.config.loader import load_config

        dialect = load_dialect(load_config(path, {"TRINO_SECRET": "s3cret"}))
        assert type(dialect.connection_arguments()["auth"]).__name__ == auth
    with pytest.raises(ConfigurationError, match="Trino's certificate login is not supported"):
        config(tmp_path, SECTION.format(url=url) + "  auth_mode: key_file\n  key_file: k.pem\n")


def test_the_script_engine_is_the_trino_sqlalchemy_dialect(tmp_path: Path) -> None:
    dialect = load_dialect(config(tmp_path, SECTION.format(url="jdbc:trino://h:8080/iceberg")))
    engine = dialect.script_engine()
    try:
        assert (engine.dialect.name, engine.url.host, engine.url.port, engine.url.database) == (
            "trino", "h", 8080, "iceberg/sales"
        )  # fmt: skip
    finally:
        engine.dispose()


def test_the_merge_update_is_one_trino_merge_statement(tmp_path: Path) -> None:
    dialect = load_dialect(config(tmp_path, SECTION.format(url="jdbc:trino://h:8080/iceberg")))
    sql = dialect.update_from_stage('"s"."t"', '"s"."stage"', ['"id"'], [('"name"', 's."name"')], 't."x" = 1')
    tree = sqlglot.parse_one(sql, read="trino")
    assert isinstance(tree, sqlglot.exp.Merge)
    assert "UPDATE ... FROM" not in sql and sql.startswith('MERGE INTO "s"."t" AS t\nUSING "s"."stage" AS s')


def test_a_statement_that_is_not_trino_sql_fails_the_emulation() -> None:
    with pytest.raises(sqlglot.errors.ParseError):
        emulation.to_duckdb("UPDATE t SET a = 1 FROM (SELECT")
    assert emulation.trino_type("DECIMAL(12,2)") == "decimal(12,2)"
    assert emulation.trino_type("TIMESTAMP WITH TIME ZONE") == "timestamp(6) with time zone"


def test_the_autocommit_session_counts_changed_rows_and_commits_each_statement(tmp_path: Path) -> None:
    """The session Trino and Databricks share, over a real DB-API driver (sqlite3 in autocommit)."""
    import sqlite3

    from etl_craft_warehouses.autocommit import AutocommitSession

    dialect = load_dialect(config(tmp_path, SECTION.format(url="jdbc:trino://h:8080/iceberg")))
    path = tmp_path / "w.sqlite"
    session = AutocommitSession(dialect, sqlite3.connect(path, isolation_level=None), sqlite3.Error)
    session.execute("CREATE TABLE t (id INTEGER)")
    assert session.dml("INSERT INTO t VALUES (1), (2), (3)") == 3
    session.begin()
    assert session.dml("DELETE FROM t WHERE id > ?", [1]) == 2
    session.rollback()  # nothing to roll back: the DELETE committed as it ran
    with sqlite3.connect(path) as other:
        assert other.execute("SELECT id FROM t").fetchall() == [(1,)]
    assert session.rows("SELECT id FROM t") == [(1,)]
    session.close()
