"""What the configuration knows of an Engine DB: its JDBC URL form, its Name, whether it is a file."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from etl_craft.config.urls import JdbcTarget, Refuse, Resolve


@dataclass(frozen=True)
class EngineForm:
    name: str  # the JDBC subprotocol, as the Engine DB dialect of the same name (etl_craft.engine.dialects)
    title: str  # the database's name in messages
    display_name: str  # what the section's optional Name says
    url_form: str
    parse: Callable[[str, Resolve, Refuse], JdbcTarget]
    # A file has no login and no schema (`main` by convention); a server needs both.
    file: bool
    # (host, port, database) of a server, to tell whether two profiles name the same database.
    address: Callable[[str], tuple[str, int, str]] | None = None
