"""SQLite's JDBC URL form: a file beside craft-connector.yml, never an in-memory database."""

from __future__ import annotations

from etl_craft.config.dialects.form import EngineForm
from etl_craft.config.urls import JdbcTarget, Refuse, Resolve, shown_url

SQLITE_FORM = "jdbc:sqlite:<file>"


def parse_sqlite(url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
    rest = url[len("jdbc:sqlite:") :]
    in_memory = (
        rest in ("", ":memory:")
        or rest.startswith("file::memory:")
        or (rest.startswith("file:") and "mode=memory" in rest)
    )
    if in_memory:
        raise refuse(
            "an in-memory SQLite database",
            found=shown_url(url),
            expected=f"{SQLITE_FORM}, e.g. jdbc:sqlite:engine.db",
            remedy="name a file: each task runs in its own process and would see an empty in-memory database",
        )
    if rest.startswith("file:"):
        raise refuse(
            found=shown_url(url),
            expected=f"{SQLITE_FORM} with a plain path",
            remedy="write the file path without file: and URI settings, e.g. jdbc:sqlite:engine.db",
        )
    return JdbcTarget("sqlite", f"jdbc:sqlite:{resolve(rest)}")


SQLITE = EngineForm(
    name="sqlite", title="SQLite", display_name="SQLite", url_form=SQLITE_FORM, parse=parse_sqlite, file=True
)
