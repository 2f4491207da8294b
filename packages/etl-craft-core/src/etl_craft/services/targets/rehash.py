"""`etl-craft rehash --target S.T`: recompute a merge target's HASH_KEY with the version-2 expression.

The compare columns come from the active merge tasks writing the target, which must agree on one
ordered list. Every row is recomputed (SCD2 history included) in one statement under the target's
lock, and version 2 is recorded only after the warehouse commit; a failed recording is repaired by
running rehash again.
"""

from __future__ import annotations

from dataclasses import dataclass

from etl_craft.core.errors import SqlGuardError, UsageError
from etl_craft.engine import locks
from etl_craft.engine.records.actions import record_request
from etl_craft.handlers.sql import target_lock
from etl_craft.handlers.sql.catalog import active_tasks, key_of, target_key
from etl_craft.handlers.sql.columns import HASH_KEY, MERGE_ACTIONS
from etl_craft.handlers.sql.hashing import HASH_VERSION, hash_sql, publish_version, recorded_version
from etl_craft.handlers.sql.spec import parse_target
from etl_craft.services.context import OperationContext
from etl_craft.warehouse.dialect import load_dialect


@dataclass(frozen=True)
class RehashView:
    target: str
    dry_run: bool
    tasks: tuple[str, ...]  # PIPELINE.TASK of the merge tasks whose compare list was used
    compare_columns: tuple[str, ...]
    rows: int  # rows whose HASH_KEY changed (with --dry-run: would change)
    total_rows: int
    previous_version: int | None
    hash_version: int | None  # the version recorded now (unchanged with --dry-run)
    message: str


def _compare_list(ctx: OperationContext, key: str, database: str | None, target: str) -> tuple[list[str], list[str]]:
    with ctx.db.read() as conn:
        writers = [
            row for row in active_tasks(conn) if row.action in MERGE_ACTIONS and key_of(row.target, database) == key
        ]
    if not writers:
        raise UsageError(
            f"--target {target}",
            found="no active SCD1_MERGE or SCD2_MERGE task writing it",
            expected="a merge target, whose compare columns come from its merge tasks",
            remedy="name the target of a merge task (TARGET_OBJECT)",
        )
    lists = {
        tuple(p.strip() for p in (row.parameters.get("MERGE_COMPARE_COLUMNS") or "").split("|")) for row in writers
    }
    if len(lists) != 1:
        shown = "; ".join(f"{row.label}: {row.parameters.get('MERGE_COMPARE_COLUMNS')}" for row in writers)
        raise SqlGuardError(
            f"rehash {target}",
            found=f"merge tasks with different MERGE_COMPARE_COLUMNS ({shown})",
            expected="one ordered compare list for every merge task of a target",
            remedy="make the tasks' MERGE_COMPARE_COLUMNS identical, then run rehash again",
        )
    return list(lists.pop()), [row.label for row in writers]


def rehash(ctx: OperationContext, target: str, *, dry_run: bool = False) -> RehashView:
    parts = parse_target(target, "rehash", "--target")
    dialect = load_dialect(ctx.config)
    key = target_key(parts, dialect.database_name())
    compare, tasks = _compare_list(ctx, key, dialect.database_name(), target)
    previous = recorded_version(ctx.db, key)
    if not dry_run:
        record_request(ctx.db, ctx.actor, "rehash", {"target": target, "dry_run": dry_run})
    table = dialect.table_sql(parts)
    with dialect.session(ctx.db) as session, locks.hold(ctx.db, target_lock(key)):
        types = {c.key: c for c in dialect.columns(session, parts)}
        if not types:
            raise UsageError(
                f"--target {target}",
                found="no such table",
                expected="an existing merge target",
                remedy="check the name",
            )
        missing = [c for c in (*compare, HASH_KEY) if c.lower() not in types]
        if missing:
            raise SqlGuardError(
                f"rehash {target}",
                found=f"no column(s) {', '.join(missing)}",
                expected="the compare columns and HASH_KEY",
                remedy="run the merge's SETUP_TABLE, or correct MERGE_COMPARE_COLUMNS",
            )
        values = [(f"t.{dialect.quote(types[c.lower()].name)}", c, types[c.lower()].type) for c in compare]
        digest = hash_sql(dialect, values, f"rehash {target} (MERGE_COMPARE_COLUMNS)")
        stale = f"t.{dialect.ident(HASH_KEY)} IS DISTINCT FROM {digest}"
        with session.transaction():
            total = int(session.scalar(f"SELECT COUNT(*) FROM {table}"))
            if dry_run:
                changed = int(session.scalar(f"SELECT COUNT(*) FROM {table} t WHERE {stale}"))
            else:
                changed = session.dml(f"UPDATE {table} AS t SET {dialect.ident(HASH_KEY)} = {digest} WHERE {stale}")
        if not dry_run:
            with ctx.db.write() as conn:
                publish_version(conn, key)
    verb = "would change" if dry_run else "changed"
    return RehashView(
        target=target,
        dry_run=dry_run,
        tasks=tuple(tasks),
        compare_columns=tuple(compare),
        rows=changed,
        total_rows=total,
        previous_version=previous,
        hash_version=previous if dry_run else HASH_VERSION,
        message=f"{target}: {verb} HASH_KEY of {changed} of {total} row(s)"
        + ("" if dry_run else f"; recorded hash version {HASH_VERSION}"),
    )
