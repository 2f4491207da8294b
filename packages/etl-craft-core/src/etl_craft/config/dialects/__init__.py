"""The Engine DB's URL forms, one module per database: the configuration's half of the Engine DB dialects."""

from __future__ import annotations

from etl_craft.config.dialects.form import EngineForm
from etl_craft.config.dialects.postgresql import POSTGRESQL
from etl_craft.config.dialects.sqlite import SQLITE
from etl_craft.config.urls import url_kind

__all__ = ["ENGINE_FORMS", "EngineForm", "engine_form"]

ENGINE_FORMS: dict[str, EngineForm] = {form.name: form for form in (SQLITE, POSTGRESQL)}


def engine_form(url: str) -> EngineForm | None:
    """The form of an Engine jdbc_url, by its subprotocol; None for any other database."""
    return ENGINE_FORMS.get(url_kind(url))
