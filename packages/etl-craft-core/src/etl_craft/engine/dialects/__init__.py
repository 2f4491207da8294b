"""The Engine DB dialects: every difference between SQLite and PostgreSQL lives on one of these objects."""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.engine.dialects.base import EngineDialect, Listener
from etl_craft.engine.dialects.postgresql import POSTGRESQL
from etl_craft.engine.dialects.sqlite import SQLITE

__all__ = ["ENGINE_DIALECTS", "EngineDialect", "Listener", "for_connection"]

# By the JDBC subprotocol of an Engine jdbc_url, which is also SQLAlchemy's name for the database.
ENGINE_DIALECTS: dict[str, EngineDialect] = {dialect.name: dialect for dialect in (SQLITE, POSTGRESQL)}


def for_connection(conn: sa.Connection) -> EngineDialect:
    """The dialect of an Engine DB connection, for code that holds a connection and not its EngineDb."""
    return ENGINE_DIALECTS[conn.dialect.name]
