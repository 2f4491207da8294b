"""`etl-craft lineage`: column lineage of every active SQL task, cached in AUD_COLUMN_LINEAGE.

A task is traced again only when its cache key changes (its SELECT, target, the warehouse dialect,
sqlglot's version or the active catalog), or with --refresh. A task that can't be traced is cached
too, as one row for column `*` whose TRANSFORMATION says why.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from etl_craft.core.errors import EtlCraftError, UsageError
from etl_craft.core.text import close_matches, did_you_mean
from etl_craft.engine.records.lineage import LineageRow, cached_lineage, store_lineage
from etl_craft.handlers.sql.catalog import SqlTaskRow, active_tasks, key_of
from etl_craft.handlers.sql.lineage import LINEAGE_TOKENS, Trace, cache_key, trace
from etl_craft.handlers.sql.spec import source_text
from etl_craft.handlers.sql.text import replace_tokens, strip_trailing
from etl_craft.services.context import OperationContext
from etl_craft.warehouse.dialect import load_dialect

UNTRACED = "untraced: "


@dataclass(frozen=True)
class EdgeView:
    target_column: str
    source_object: str | None
    source_column: str | None
    transformation: str


@dataclass(frozen=True)
class TaskLineageView:
    pipeline_code: str
    task_code: str
    task_id: int
    target: str
    traced: bool
    reason: str | None
    columns: tuple[str, ...]
    source_tables: tuple[str, ...]
    edges: tuple[EdgeView, ...]

    @property
    def label(self) -> str:
        return f"{self.pipeline_code}.{self.task_code}"


@dataclass(frozen=True)
class TreeLine:
    level: int
    direction: str  # "upstream" | "downstream"
    table: str
    column: str | None
    transformation: str | None
    task: str


@dataclass(frozen=True)
class LineageView:
    tasks: tuple[TaskLineageView, ...]
    untraced: tuple[str, ...]  # "PIPE.task: reason"
    recomputed: int
    table: str | None
    column: str | None
    depth: int
    tree: tuple[TreeLine, ...]


def _sql(ctx: OperationContext, row: SqlTaskRow) -> str:
    raw, _label = source_text(row.parameters, ctx.config.sql_files_dir, row.task_code)
    return strip_trailing(replace_tokens(raw, LINEAGE_TOKENS))


def _cached(ctx: OperationContext, task_ids: list[int]) -> dict[int, tuple[str, list[LineageRow]]]:
    with ctx.db.read() as conn:
        return cached_lineage(conn, task_ids)


def _store(ctx: OperationContext, task_id: int, key: str, target: str, result: Trace) -> list[LineageRow]:
    edges = list(result.edges) if result.traced else [LineageRow("*", None, None, f"{UNTRACED}{result.reason}")]
    with ctx.db.write() as conn:
        store_lineage(conn, task_id, key, target, edges)
    return edges


def _view(row: SqlTaskRow, target: str, edges: list[LineageRow]) -> TaskLineageView:
    untraced = [e for e in edges if e.target_column == "*" and e.transformation.startswith(UNTRACED)]
    reason = untraced[0].transformation[len(UNTRACED) :] if untraced else None
    kept = [e for e in edges if not untraced]
    columns = tuple(dict.fromkeys(e.target_column for e in kept))
    sources = tuple(sorted({e.source_object for e in kept if e.source_object}))
    return TaskLineageView(
        row.pipeline_code,
        row.task_code,
        row.task_id,
        target,
        reason is None,
        reason,
        columns,
        sources,
        tuple(EdgeView(e.target_column, e.source_object, e.source_column, e.transformation) for e in kept),
    )


_NO_ROWS = frozenset({"SETUP_TABLE", "DROP_TABLE"})


def compute(ctx: OperationContext, *, refresh: bool = False) -> tuple[list[TaskLineageView], int]:
    """Every active SQL task's lineage, traced again where its cache key changed."""
    dialect = load_dialect(ctx.config)
    database = dialect.database_name()
    catalog = f"{dialect.name}:{database or ''}"
    with ctx.db.read() as conn:
        # Only tasks that put rows into their target: SETUP_TABLE creates it empty, DROP_TABLE removes it.
        rows = [r for r in active_tasks(conn) if r.action and r.action not in _NO_ROWS and r.target]
    cached = _cached(ctx, [r.task_id for r in rows])
    views = []
    recomputed = 0
    for row in rows:
        target = key_of(row.target, database) or ""
        try:
            sql = _sql(ctx, row)
        except EtlCraftError as exc:
            views.append(_view(row, target, [LineageRow("*", None, None, f"{UNTRACED}{exc.found or exc}")]))
            continue
        key = cache_key(sql, target, dialect.name, catalog)
        hit = cached.get(row.task_id)
        if hit is not None and hit[0] == key and not refresh:
            edges = hit[1]
        else:
            edges = _store(ctx, row.task_id, key, target, trace(sql, dialect.sqlglot_dialect, database))
            recomputed += 1
        views.append(_view(row, target, edges))
    return views, recomputed


def _table_tree(tasks: list[TaskLineageView], table: str, depth: int, direction: str) -> list[TreeLine]:
    lines: list[TreeLine] = []

    def walk(current: str, level: int, seen: frozenset[str]) -> None:
        if level > depth:
            return
        for task in tasks:
            if direction == "upstream" and task.target == current:
                nexts = task.source_tables
            elif direction == "downstream" and current in task.source_tables:
                nexts = (task.target,)
            else:
                continue
            for name in nexts:
                lines.append(TreeLine(level, direction, name, None, None, task.label))
                if name not in seen:
                    walk(name, level + 1, seen | {name})

    walk(table, 1, frozenset({table}))
    return lines


def _column_tree(tasks: list[TaskLineageView], table: str, column: str, depth: int, direction: str) -> list[TreeLine]:
    by_target: dict[tuple[str, str], list[tuple[EdgeView, str]]] = defaultdict(list)
    by_source: dict[tuple[str, str], list[tuple[EdgeView, str]]] = defaultdict(list)
    for task in tasks:
        for edge in task.edges:
            by_target[(task.target, edge.target_column)].append((edge, task.label))
            if edge.source_object and edge.source_column:
                by_source[(edge.source_object, edge.source_column)].append((edge, task.label))
    lines: list[TreeLine] = []
    targets = {task.target: task.target for task in tasks}

    def walk(at: tuple[str, str], level: int, seen: frozenset[tuple[str, str]]) -> None:
        if level > depth:
            return
        if direction == "upstream":
            for edge, label in by_target.get(at, []):
                lines.append(
                    TreeLine(level, direction, edge.source_object or "", edge.source_column, edge.transformation, label)
                )
                nxt = (edge.source_object or "", edge.source_column or "")
                if edge.source_object and nxt not in seen:
                    walk(nxt, level + 1, seen | {nxt})
        else:
            for edge, label in by_source.get(at, []):
                target = next(t.target for t in tasks if t.label == label)
                lines.append(
                    TreeLine(level, direction, targets[target], edge.target_column, edge.transformation, label)
                )
                nxt = (target, edge.target_column)
                if nxt not in seen:
                    walk(nxt, level + 1, seen | {nxt})

    walk((table, column), 1, frozenset({(table, column)}))
    return lines


def _unknown_name_note(tasks: list[TaskLineageView]) -> str:
    untraced = sum(1 for t in tasks if not t.traced)
    return f" ({untraced} SQL task(s) could not be traced, so what they read is not known)" if untraced else ""


def _near_tables(table: str, tables: set[str]) -> str:
    """A 'did you mean' hint: by table name among the tables of the same schema, when it has any."""
    schema, _, name = table.rpartition(".")
    same = {t.rpartition(".")[2]: t for t in tables if t.rpartition(".")[0] == schema}
    near = [same[n] for n in close_matches(name, same)] if same else close_matches(table, tables)
    return f" (did you mean {', '.join(near)}?)" if near else ""


def _check_known(tasks: list[TaskLineageView], table: str, column: str | None) -> None:
    """Refuse a table or column no SQL task writes or reads, so a typo never looks like a name with no lineage.

    A column of a table written by a task that could not be traced is not judged: its columns are unknown.
    """
    tables = {t.target for t in tasks} | {name for t in tasks for name in t.source_tables}
    if table not in tables:
        raise UsageError(
            f"--table {table}",
            found="no active SQL task writing or reading it" + _unknown_name_note(tasks),
            expected="a table an active SQL task writes (its TARGET_OBJECT) or reads, as schema.table",
            remedy="name one of them" + (_near_tables(table, tables) or "; etl-craft lineage lists them"),
        )
    writers = [t for t in tasks if t.target == table]
    if column is None or any(not t.traced for t in writers):
        return
    columns = {e.target_column for t in writers for e in t.edges} | {
        e.source_column for t in tasks for e in t.edges if e.source_object == table and e.source_column
    }
    if column not in columns:
        raise UsageError(
            f"--column {column}",
            found=f"no active SQL task writing or reading {table}.{column}" + _unknown_name_note(tasks),
            expected=f"a column of {table} that an active SQL task writes or reads",
            remedy="name one of them"
            + (did_you_mean(column, columns) or f"; etl-craft lineage --table {table} lists the tasks around it"),
        )


def lineage(
    ctx: OperationContext,
    *,
    table: str | None = None,
    column: str | None = None,
    upstream: bool = False,
    downstream: bool = False,
    depth: int = 3,
    refresh: bool = False,
) -> LineageView:
    if column and not table:
        raise UsageError("--column", found="no --table", expected="--table with --column", remedy="add --table S.T")
    if depth < 1:
        raise UsageError("--depth", found=str(depth), expected="1 or more", remedy="give a depth of at least 1")
    tasks, recomputed = compute(ctx, refresh=refresh)
    directions = [d for d, on in (("upstream", upstream), ("downstream", downstream)) if on] or [
        "upstream",
        "downstream",
    ]
    tree: list[TreeLine] = []
    wanted = table.lower() if table else None
    if wanted:
        _check_known(tasks, wanted, column.lower() if column else None)
        for direction in directions:
            if column:
                tree += _column_tree(tasks, wanted, column.lower(), depth, direction)
            else:
                tree += _table_tree(tasks, wanted, depth, direction)
    untraced = tuple(f"{t.label}: {t.reason}" for t in tasks if not t.traced)
    return LineageView(
        tuple(tasks), untraced, recomputed, wanted, column.lower() if column else None, depth, tuple(tree)
    )
