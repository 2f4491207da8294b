"""The SQL handler: one read-only SELECT per task, written to its target by one of eight actions.

The task process calls `run(ctx)`. Each action runs in one warehouse transaction while the task holds
the target's Engine DB lock (and, on a single-writer warehouse, the writer lock), so concurrent
writers of a target queue instead of interleaving, and ROW_ID allocation never repeats a value.
Engine DB records about the target (its hash version) are written after the warehouse commit,
fenced by the attempt.
"""

from __future__ import annotations

from collections.abc import Callable

from etl_craft.core.errors import SqlGuardError
from etl_craft.engine import locks
from etl_craft.handlers.context import Counts, HandlerResult, TaskContext
from etl_craft.handlers.sql import merge, replace
from etl_craft.handlers.sql.catalog import target_key
from etl_craft.handlers.sql.hashing import clear_version, publish_version
from etl_craft.handlers.sql.runner import ActionRun
from etl_craft.handlers.sql.spec import SqlTaskSpec, TaskIdentity, parse_spec
from etl_craft.warehouse.dialect import WarehouseDialect, load_dialect, refuse_table_format

ACTIONS: dict[str, Callable[[ActionRun], None]] = {
    "CREATE_TABLE": replace.create_table,
    "SETUP_TABLE": replace.setup_table,
    "OVERWRITE_TABLE": replace.overwrite_table,
    "DROP_TABLE": replace.drop_table,
    "APPEND_TABLE": merge.append_table,
    "SCD1_MERGE": merge.scd1_merge,
    "SCD2_MERGE": merge.scd2_merge,
    "DELETE_ROWS": merge.delete_rows,
}


def target_lock(key: str) -> str:
    """The Engine DB lock every mutation of a target holds (actions, rehash, upgrade-targets)."""
    return f"target:{key}"


def lock_timeout(ctx: TaskContext) -> float | None:
    """Wait for locks as long as the task may run (0 means no limit)."""
    raw = ctx.parameters.get("TASK_TIMEOUT_SECONDS")
    seconds = int(raw) if raw is not None and raw.strip().isdigit() else ctx.config.orchestration.task_timeout_seconds
    return None if seconds == 0 else float(seconds)


def task_spec(ctx: TaskContext, dialect: WarehouseDialect) -> SqlTaskSpec:
    identity = TaskIdentity(
        ctx.task_code, ctx.pipeline_id, ctx.pipeline_run_id, ctx.task_run_id, ctx.refresh_type, ctx.run_date
    )
    spec = parse_spec(
        ctx.parameters,
        identity,
        ctx.config.sql_files_dir,
        dialect.sqlglot_dialect,
        dialect.storage_parameters,
        dialect.state_changing_functions,
    )
    check_warehouse_fit(spec, dialect, ctx.task_code)
    return spec


def check_warehouse_fit(spec: SqlTaskSpec, dialect: WarehouseDialect, task_code: str) -> None:
    """What the configured warehouse refuses without being asked: its table formats and its database."""
    if spec.table_format is not None:
        refuse_table_format(dialect, spec.table_format, f"{spec.action} {spec.target_name}")
    database = dialect.database_name()
    if len(spec.target) == 3 and database is not None and spec.target[0].lower() != database.lower():
        raise SqlGuardError(
            f"task {task_code}: TARGET_OBJECT",
            found=f"{spec.target_name}, in database {spec.target[0]}",
            expected=f"a table of the warehouse's database {database}",
            remedy="write the target as schema.table in the configured warehouse",
        )


def run(ctx: TaskContext) -> HandlerResult:
    dialect = load_dialect(ctx.config)
    spec = task_spec(ctx, dialect)
    key = target_key(spec.target, dialect.database_name())
    timeout = lock_timeout(ctx)
    with (
        dialect.session(ctx.engine_db, lock_timeout=timeout) as session,
        locks.hold(ctx.engine_db, target_lock(key), timeout=timeout),
    ):
        action = ActionRun(ctx, spec, dialect, session, key)
        with session.transaction():
            ACTIONS[spec.action](action)
            action.fault("after_write")
        action.fault("after_commit")
        if action.hash_change is not None:
            with ctx.fenced_write() as conn:
                if action.hash_change == "publish":
                    publish_version(conn, key)
                else:
                    clear_version(conn, key)
    counts = action.counts
    return HandlerResult(
        counts=Counts(
            source=counts.get("source"),
            target=counts.get("target"),
            inserted=counts.get("inserted"),
            updated=counts.get("updated"),
            deleted=counts.get("deleted"),
        ),
        variables=(("SQL_ACTION", spec.action), ("TARGET_OBJECT", spec.target_name), *action.variables),
        warnings=tuple(action.warnings),
    )
