"""Every row of the six metadata tables, active and retired, in one read per table.

`validate` judges the whole project at once (retired rows included, so a dependency on a retired
task can be named) and `config export|plan|apply` compares the Engine DB with the files; both read
through here. PIPELINE_PARAMETERS comes back as its JSON text, so a malformed value can be reported
instead of failing the read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa

from etl_craft.engine.schema import tables as t
from etl_craft.engine.schema.tables import STAMP_COLUMNS

Row = Mapping[str, Any]
_STAMPS = frozenset(name.lower() for name in STAMP_COLUMNS)


@dataclass(frozen=True)
class CfgRows:
    """Rows keyed by lower-case column name, ordered by id; trigger-kept stamp columns left out."""

    pipelines: tuple[Row, ...]
    tasks: tuple[Row, ...]
    task_parameters: tuple[Row, ...]
    task_dependencies: tuple[Row, ...]
    pipeline_dependencies: tuple[Row, ...]
    business_rules: tuple[Row, ...]


def _read(conn: sa.Connection, table: sa.Table) -> tuple[Row, ...]:
    columns: list[sa.ColumnElement[Any]] = []
    for column in table.columns:
        if column.name in _STAMPS:
            continue
        if isinstance(column.type, sa.JSON):
            columns.append(sa.cast(column, sa.Text).label(column.name))
        else:
            columns.append(column)
    primary = next(iter(table.primary_key.columns))
    return tuple(dict(row._mapping) for row in conn.execute(sa.select(*columns).order_by(primary)))


def read_cfg_rows(conn: sa.Connection) -> CfgRows:
    return CfgRows(
        pipelines=_read(conn, t.cfg_pipelines),
        tasks=_read(conn, t.cfg_tasks),
        task_parameters=_read(conn, t.cfg_task_parameters),
        task_dependencies=_read(conn, t.cfg_task_dependency),
        pipeline_dependencies=_read(conn, t.cfg_pipeline_dependency),
        business_rules=_read(conn, t.cfg_business_rules),
    )
