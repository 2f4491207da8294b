"""Actions that change rows in place: APPEND_TABLE, SCD1_MERGE, SCD2_MERGE and DELETE_ROWS.

Updates are set-based (`WarehouseDialect.update_from_stage`: UPDATE ... FROM on PostgreSQL, DuckDB
and Snowflake, MERGE on Trino and Databricks), joined to the deduplicated stage; inserts are one
INSERT ... SELECT with an anti-join.
"""

from __future__ import annotations

from etl_craft.handlers.sql import columns as cols
from etl_craft.handlers.sql.hashing import require_version
from etl_craft.handlers.sql.runner import ActionRun, Stage


def append_table(run: ActionRun) -> None:
    """Insert the SELECT's rows stamped with TASK_RUN_ID, first removing an earlier attempt's rows (W4)."""
    target = run.existing_target()
    engine_columns = cols.ACTION_COLUMNS["APPEND_TABLE"]
    run.require_engine_columns(target, engine_columns)
    stage = run.build_stage()
    run.count_source(stage, keyed=False)
    run.compare_shapes(stage, target, may_evolve=False)
    with run.step("remove rows of an earlier attempt"):
        earlier = run.session.dml(
            f"DELETE FROM {run.target_sql} WHERE {run.ident(cols.TASK_RUN_ID)} = {run.ctx.task_run_id}"
        )
    if earlier:
        run.warnings.append(f"removed {earlier} row(s) an earlier attempt of task run {run.ctx.task_run_id} appended")
    run.counts.update(deleted=earlier, updated=0, inserted=run.insert_from_stage(stage, engine_columns))
    run.drop_stage(stage)
    run.count_target()


def _prepare_merge(run: ActionRun) -> tuple[Stage, str, str, str]:
    """Everything a merge checks before it touches the target.

    Returns the stage, the HASH_KEY expressions for inserted and for updated rows, and the test of a
    changed row. A row changes when a compare column's value differs from the target's: HASH_KEY is the
    digest of exactly those values, so this is the same test, but the warehouse computes digests only
    for the rows it writes instead of for every row it joins.
    """
    target = run.existing_target()
    run.require_engine_columns(target, cols.ACTION_COLUMNS[run.spec.action])
    require_version(run.ctx.engine_db, run.key, run.spec.action, run.spec.target_name)
    stage = run.build_stage(rank=run.spec.dedupe_order is not None)
    run.count_source(stage, keyed=True)
    new = run.compare_shapes(stage, target, may_evolve=True)
    after = [*target, *new]
    values = run.compare_values(stage, after, preserve=run.spec.preserve_target)
    plain = run.hash_of(run.compare_values(stage, after))
    updated = run.hash_of(values) if run.spec.preserve_target else plain
    differs = " OR ".join(f"t.{run.dialect.quote(name)} IS DISTINCT FROM {expr}" for expr, name, _type in values)
    changed = (
        f"{differs} OR t.{run.ident(cols.HASH_KEY)} IS NULL OR t.{run.ident(cols.DELETE_FLAG)} = 'Y'"  # B17: revive
    )
    run.dedupe(stage)
    run.evolve(new)
    return stage, plain, updated, changed


def _missing_key(run: ActionRun, alias: str = "t", active_only: bool = False) -> str:
    active = f" AND {alias}.{run.ident(cols.ACTIVE_FLAG)} = 'Y'" if active_only else ""
    return f"NOT EXISTS (SELECT 1 FROM {run.target_sql} {alias} WHERE {run.key_match(alias, 's')}{active})"


def scd1_merge(run: ActionRun) -> None:
    """Update changed keys in place (and revive soft-deleted ones, B17); insert new keys."""
    stage, plain, preserved, changed = _prepare_merge(run)
    keys = {k.lower() for k in run.spec.merge_key}
    assignments = []
    for column in stage.columns:
        if column.key in keys:
            continue
        name = run.dialect.quote(column.name)
        value = f"COALESCE(s.{name}, t.{name})" if run.spec.preserve_target else f"s.{name}"
        assignments.append((name, value))
    assignments += [
        (run.ident(cols.HASH_KEY), preserved),
        (run.ident(cols.UPDATE_DATE), run.stamp(cols.UPDATE_DATE)),
        (run.ident(cols.UPDATED_BY), run.stamp(cols.UPDATED_BY)),
        (run.ident(cols.DELETE_FLAG), "'N'"),
        *run.identity_assignments(),
    ]
    sql = run.dialect.update_from_stage(run.target_sql, stage.sql, run.keys_sql(), assignments, changed)
    with run.step("update changed rows"):
        updated = run.session.dml(sql)
    inserted = run.insert_from_stage(
        stage, cols.ACTION_COLUMNS["SCD1_MERGE"], where=_missing_key(run), hash_expr=plain, step="insert new keys"
    )
    run.counts.update(inserted=inserted, updated=updated, deleted=0)
    run.drop_stage(stage)
    run.count_target()


def scd2_merge(run: ActionRun) -> None:
    """Close the active version of each changed (or soft-deleted, B17) key, then insert new active versions.

    A version's stamps (UPDATE_DATE, UPDATED_BY and the identities) say when and by whom it ended. A
    soft-deleted version already ended when it was flagged, so reviving its key only sets its
    ACTIVE_FLAG: the deletion stamp stays (docs/guides/sql-tasks.md, "SCD2 history").
    """
    stage, plain, _updated, changed = _prepare_merge(run)
    active = f"t.{run.ident(cols.ACTIVE_FLAG)}"
    deleted = f"t.{run.ident(cols.DELETE_FLAG)} = 'Y'"
    stamps = [(run.ident(n), run.stamp(n)) for n in (cols.UPDATE_DATE, cols.UPDATED_BY, *cols.IDENTITY_COLUMNS)]
    assignments = [
        (run.ident(cols.ACTIVE_FLAG), "'N'"),
        *((name, f"CASE WHEN {deleted} THEN t.{name} ELSE {value} END") for name, value in stamps),
    ]
    changed = f"{active} = 'Y' AND ({changed})"
    sql = run.dialect.update_from_stage(run.target_sql, stage.sql, run.keys_sql(), assignments, changed)
    with run.step("close changed versions"):
        closed = run.session.dml(sql)
    missing = _delete_missing_keys(run, stage) if run.spec.delete_missing_keys else 0
    inserted = run.insert_from_stage(
        stage,
        cols.ACTION_COLUMNS["SCD2_MERGE"],
        where=_missing_key(run, active_only=True),
        hash_expr=plain,
        step="insert new versions",
    )
    run.counts.update(inserted=inserted, updated=closed, deleted=missing)
    run.drop_stage(stage)
    run.count_target()


def _delete_missing_keys(run: ActionRun, stage: Stage) -> int:
    """DELETE_MISSING_KEYS: flag the current version of every key the SELECT no longer returns, in one UPDATE.

    The version ends as a DELETE_ROWS soft delete ends it (DELETE_FLAG = 'Y', stamped), so a key that
    comes back later is revived the same way; versions already flagged keep their stamps (B46).
    """
    # No alias on the target: Trino's UPDATE takes none, and the table's own name qualifies its columns.
    target = run.target_sql
    flag = f"{target}.{run.ident(cols.DELETE_FLAG)}"
    assignments = [(run.ident(cols.DELETE_FLAG), "'Y'")]
    assignments += [(run.ident(n), run.stamp(n)) for n in (cols.UPDATE_DATE, cols.UPDATED_BY)]
    assignments += run.identity_assignments()
    sets = ", ".join(f"{name} = {value}" for name, value in assignments)
    sql = (
        f"UPDATE {target} SET {sets}"
        f" WHERE {target}.{run.ident(cols.ACTIVE_FLAG)} = 'Y' AND ({flag} IS NULL OR {flag} <> 'Y')"
        f" AND NOT EXISTS (SELECT 1 FROM {stage.sql} s WHERE {run.key_match(target, 's')})"
    )
    with run.step("flag keys missing from the SELECT"):
        return run.session.dml(sql)


def delete_rows(run: ActionRun) -> None:
    """Flag (DELETE_FLAG = 'Y') or, with HARD_DELETE, remove the rows whose keys the SELECT returns."""
    target = run.existing_target()
    present = {c.key for c in target}
    for key in run.spec.merge_key:
        if key.lower() not in present:
            raise run.refuse(
                f"MERGE_KEY column {key}, which {run.spec.target_name} does not have",
                "key columns that exist in the target",
                "correct MERGE_KEY",
            )
    if not run.spec.hard_delete:
        if cols.DELETE_FLAG.lower() not in present:
            raise run.refuse(
                f"{run.spec.target_name} has no DELETE_FLAG column",
                "a DELETE_FLAG column for a soft delete",
                "set HARD_DELETE to true to remove the rows, or give the target a DELETE_FLAG column",
            )
        run.require_engine_columns(target, cols.IDENTITY_COLUMNS)
    stage = run.build_stage()
    run.count_source(stage, keyed=True)
    with run.step("index the stage"):
        run.dialect.analyze_stage(run.session, stage.name, run.keys_sql(), unique=False)
    if run.spec.hard_delete:
        sql = (
            f"DELETE FROM {run.target_sql} WHERE EXISTS"
            f" (SELECT 1 FROM {stage.sql} s WHERE {run.key_match(run.target_sql, 's')})"
        )
        with run.step("delete rows"):
            deleted = run.session.dml(sql)
    else:
        flag = f"t.{run.ident(cols.DELETE_FLAG)}"
        condition = f"({flag} IS NULL OR {flag} <> 'Y')"  # B46: already-flagged rows stay as they are
        if cols.ACTIVE_FLAG.lower() in present:
            condition += f" AND t.{run.ident(cols.ACTIVE_FLAG)} = 'Y'"
        assignments = [(run.ident(cols.DELETE_FLAG), "'Y'")]
        for stamp in (cols.UPDATE_DATE, cols.UPDATED_BY):
            if stamp.lower() in present:
                assignments.append((run.ident(stamp), run.stamp(stamp)))
        assignments += run.identity_assignments()
        keys = ", ".join(run.keys_sql())
        source = f"(SELECT DISTINCT {keys} FROM {stage.sql})"
        sql = run.dialect.update_from_stage(run.target_sql, source, run.keys_sql(), assignments, condition)
        with run.step("flag deleted rows"):
            deleted = run.session.dml(sql)
    run.counts.update(deleted=deleted, inserted=0, updated=0)
    run.drop_stage(stage)
    run.count_target()
