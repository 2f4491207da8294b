"""Turning selected rows into frozen row values: the columns a value class names, one value per row."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields
from typing import Any, TypeVar

import sqlalchemy as sa

R = TypeVar("R")


def columns_of(table: sa.Table, cls: type) -> list[sa.ColumnElement[Any]]:
    return [table.c[f.name] for f in fields(cls)]


def rows_of(cls: type[R], result: Iterable[sa.Row[Any]]) -> list[R]:
    return [cls(**row._mapping) for row in result]
