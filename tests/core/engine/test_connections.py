"""What an Engine DB engine does with a pooled connection the server dropped (PostgreSQL): by default
it pings before each transaction and replaces it unnoticed; a process that retries connection errors
itself (the overseer, a task process) opens its engine without the ping, sees one error, and the
next transaction connects afresh."""

from __future__ import annotations

import psycopg
import pytest

from etl_craft.engine.database import EngineDb, open_engine_db
from etl_craft.engine.retry import TRANSIENT
from tests.fixtures import postgres as pg
from tests.fixtures.project import Project

pytestmark = pytest.mark.parametrize("dialect", [pytest.param("postgresql", marks=pytest.mark.postgres, id="postgres")])


def _backend(db: EngineDb) -> int:
    with db.read() as conn:
        return int(conn.exec_driver_sql("SELECT pg_backend_pid()").scalar_one())


def _drop_connections(database: str) -> None:
    with psycopg.connect(pg.admin_dsn(), autocommit=True) as admin:
        dropped = admin.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE datname = %s", (database,)
        ).fetchone()
    assert dropped is not None and dropped[0] >= 1


def test_an_engine_pings_a_pooled_connection_and_replaces_a_dropped_one(project: Project) -> None:
    db = open_engine_db(project.load())
    first = _backend(db)
    assert project.pg_database is not None
    _drop_connections(project.pg_database)
    assert _backend(db) != first
    db.dispose()


def test_an_engine_without_the_ping_fails_once_on_a_dropped_connection_then_connects_afresh(project: Project) -> None:
    db = open_engine_db(project.load(), ping=False)
    first = _backend(db)
    assert project.pg_database is not None
    _drop_connections(project.pg_database)
    with pytest.raises(TRANSIENT):
        _backend(db)
    assert _backend(db) != first
    db.dispose()
