"""Column lineage of one SQL task's SELECT, traced with sqlglot through CTEs, subqueries and joins.

Each output column gets edges: `copy` from a source column, an expression (such as `o.amount * r.rate`)
per source column it reads, or an expression with no source (`COUNT(*)`, a constant). Table names are
lower case with the active warehouse database left out. The cache key is a hash of the SQL, the
target, the warehouse dialect, sqlglot's version and the active catalog (S2.K.7).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from etl_craft.engine.records.lineage import LineageRow


@dataclass(frozen=True)
class Trace:
    edges: tuple[LineageRow, ...]
    reason: str | None = None  # why the SELECT could not be traced

    @property
    def traced(self) -> bool:
        return self.reason is None


LINEAGE_TOKENS = {
    "pipeline_id": "0",
    "pipeline_run_id": "0",
    "task_run_id": "0",
    "pipeline_run_id_filter": "1=1",
    "run_date": "DATE '1970-01-01'",
}


def cache_key(sql: str, target: str, dialect: str, catalog: str) -> str:
    import sqlglot

    text = "\n".join((sql, target.lower(), dialect, sqlglot.__version__, catalog))
    return hashlib.sha256(text.encode()).hexdigest()


def _table_name(table: object, database: str | None) -> str:
    parts = [getattr(table, "catalog", ""), getattr(table, "db", ""), getattr(table, "name", "")]
    parts = [p.lower() for p in parts if p]
    if len(parts) == 3 and database and parts[0] == database.lower():
        parts = parts[1:]
    return ".".join(parts)


def trace(sql: str, sqlglot_dialect: str, database: str | None) -> Trace:
    """The edges of every output column, or the reason the SELECT can't be traced."""
    import sqlglot
    from sqlglot import exp
    from sqlglot.lineage import lineage

    try:
        query = sqlglot.parse_one(sql, read=sqlglot_dialect)
    except sqlglot.errors.SqlglotError as exc:
        return Trace((), f"the SELECT does not parse ({str(exc).strip().splitlines()[0]})")
    if not isinstance(query, exp.Query):
        return Trace((), "not a query")
    names = query.named_selects
    if "*" in names or any(isinstance(s, exp.Star) or (isinstance(s, exp.Column) and s.is_star) for s in query.selects):
        return Trace((), "SELECT * over columns the catalog does not know; list the columns")
    edges: list[LineageRow] = []
    for name in names:
        try:
            node = lineage(name, query, {}, dialect=sqlglot_dialect)
        except (sqlglot.errors.SqlglotError, ValueError, KeyError) as exc:
            return Trace((), f"column {name}: {exc}")
        top = node.expression.this if isinstance(node.expression, exp.Alias) else node.expression
        how = "copy" if isinstance(top, exp.Column) else top.sql(dialect=sqlglot_dialect)
        sources = set()
        for leaf in node.walk():
            if leaf.downstream:
                continue
            if isinstance(leaf.source, exp.Table) and leaf.source.name not in ("", "?"):
                sources.add((_table_name(leaf.source, database), leaf.name.split(".")[-1].lower()))
            elif isinstance(leaf.expression, exp.Placeholder):
                how = f"unresolved: {top.sql(dialect=sqlglot_dialect)}"
        if not sources:
            edges.append(LineageRow(name.lower(), None, None, how))
        for table, column in sorted(sources):
            edges.append(LineageRow(name.lower(), table, column, how))
    return Trace(tuple(edges))
