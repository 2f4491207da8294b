"""Actions that create, replace or drop a whole table: CREATE_TABLE, SETUP_TABLE, OVERWRITE_TABLE, DROP_TABLE.

Every statement runs inside the action's one warehouse transaction, so where DDL is transactional a
failure at any point rolls back to the old table and its rows (S3.G.3). Where DDL commits (the
dialect's `replace_strategy` is create_or_replace), CREATE_TABLE is one atomic CREATE OR REPLACE
TABLE ... AS SELECT instead, and OVERWRITE_TABLE changes rows with DML only.
"""

from __future__ import annotations

from collections.abc import Sequence

from etl_craft.core.errors import SqlGuardError
from etl_craft.handlers.sql import catalog
from etl_craft.handlers.sql import columns as cols
from etl_craft.handlers.sql.runner import ActionRun, Stage
from etl_craft.warehouse.session import Column


def table_definition(run: ActionRun, business: Sequence[Column], engine_columns: Sequence[str]) -> str:
    dialect = run.dialect
    lines = [f"{dialect.quote(c.name)} {c.type}" for c in business]
    for name in engine_columns:
        if name == cols.ROW_ID and dialect.identity_columns:
            lines.append(dialect.row_id_column_sql(name))
        else:
            lines.append(
                f"{run.ident(name)} {cols.engine_column_type(name, dialect.timestamp_type(), dialect.text_type)}"
            )
    return "(\n    " + ",\n    ".join(lines) + "\n)"


def create_table(run: ActionRun) -> None:
    """Replace the target with the SELECT's rows; the old table survives any failure."""
    stage = run.build_stage()
    run.count_source(stage, keyed=False)
    if run.target_columns():
        run.check_format()
    engine_columns = cols.ACTION_COLUMNS["CREATE_TABLE"]
    if run.dialect.replace_strategy == "create_or_replace":
        _create_or_replace(run, stage, engine_columns)
        return
    with run.step("drop the old table"):
        run.session.execute(f"DROP TABLE IF EXISTS {run.target_sql}")
    with run.step("create the table"):
        run.session.execute(f"CREATE TABLE {run.target_sql} {table_definition(run, stage.columns, engine_columns)}")
    run._row_id_generated = run.dialect.identity_columns
    run.counts.update(inserted=run.insert_from_stage(stage, engine_columns), updated=0, deleted=0)
    run.drop_stage(stage)
    run.count_target()
    run.hash_change = "clear"


def _create_or_replace(run: ActionRun, stage: Stage, engine_columns: Sequence[str]) -> None:
    """One CREATE OR REPLACE TABLE ... AS SELECT: the old table stays whole until the new one is complete.

    The columns are cast to the stage's types, so the new table has the SELECT's full types; ROW_IDs
    are numbered 1..n, as the transaction strategy's new generator would number them.
    """
    dialect = run.dialect
    values = [f"CAST(s.{dialect.quote(c.name)} AS {c.type}) AS {dialect.quote(c.name)}" for c in stage.columns]
    for name in engine_columns:
        type_ = cols.engine_column_type(name, dialect.timestamp_type(), dialect.text_type)
        value = "ROW_NUMBER() OVER ()" if name == cols.ROW_ID else run.stamp(name)
        values.append(f"CAST({value} AS {type_}) AS {run.ident(name)}")
    select = f"SELECT {', '.join(values)} FROM {stage.sql} s"
    with run.step("replace the table"):
        run.session.execute(f"CREATE OR REPLACE TABLE {run.target_sql} AS {select}")
    run._row_id_generated = False
    run.drop_stage(stage)
    run.counts.update(inserted=run.count_target(), updated=0, deleted=0)
    run.hash_change = "clear"


def _setup_for(run: ActionRun) -> str:
    if run.spec.setup_for:
        return run.spec.setup_for
    with run.ctx.engine_db.read() as conn:
        found = catalog.sibling_writers(
            conn, run.ctx.pipeline_id, run.ctx.task_id, run.key, run.dialect.database_name()
        )
    if len(found) == 1:
        return found.pop()
    raise SqlGuardError(
        f"{run.label}: SETUP_FOR",
        found=(
            "no other SQL task of this pipeline writing the target"
            if not found
            else f"tasks writing it with different actions: {', '.join(sorted(found))}"
        ),
        expected="one action whose audit columns the new table gets",
        remedy="set SETUP_FOR to the action that writes the target, e.g. SCD1_MERGE",
    )


def setup_table(run: ActionRun) -> None:
    """Create the target, empty, with the audit columns of the action that writes it; never touch an existing one."""
    if run.target_columns():
        run.check_format()
        run.warnings.append(f"{run.spec.target_name} already exists; SETUP_TABLE left it untouched")
        return
    for_action = _setup_for(run)
    stage = run.build_stage(empty=True)
    definition = table_definition(run, stage.columns, cols.ACTION_COLUMNS[for_action])
    with run.step("create the table"):
        run.session.execute(f"CREATE TABLE {run.target_sql} {definition}")
    run.drop_stage(stage)
    run.variables.append(("SETUP_FOR", for_action))
    # A fresh merge target hashes with version 2 from its first row (published after the commit).
    run.hash_change = "publish" if for_action in cols.MERGE_ACTIONS else "clear"


def overwrite_table(run: ActionRun) -> None:
    """Replace every row and keep the table's definition (columns may be added by SCHEMA_EVOLUTION)."""
    target = run.existing_target()
    engine_columns = cols.ACTION_COLUMNS["OVERWRITE_TABLE"]
    run.require_engine_columns(target, engine_columns)
    stage = run.build_stage()
    run.count_source(stage, keyed=False)
    new = run.compare_shapes(stage, target, may_evolve=True)
    run.evolve(new)
    if not run.dialect.transactional:
        _overwrite_in_one_statement(run, stage, [*target, *new], engine_columns)
        return
    with run.step("delete the old rows"):
        deleted = run.session.dml(f"DELETE FROM {run.target_sql}")
    run.counts.update(deleted=deleted, updated=0, inserted=run.insert_from_stage(stage, engine_columns))
    run.drop_stage(stage)
    run.count_target()


def drop_table(run: ActionRun) -> None:
    """Drop the target, only after this pipeline's CREATE_TABLE for it succeeded in this run."""
    with run.ctx.engine_db.read() as conn:
        creators, succeeded = catalog.create_table_succeeded(
            conn, run.ctx.pipeline_id, run.ctx.pipeline_run_id, run.key, run.dialect.database_name()
        )
    if not succeeded:
        raise run.refuse(
            "no successful CREATE_TABLE of this target in this run"
            + (f" (its CREATE_TABLE tasks: {', '.join(creators)})" if creators else " (the pipeline has none)"),
            "DROP_TABLE only for a table this pipeline created in this run",
            "make DROP_TABLE depend on the CREATE_TABLE task of the same target",
        )
    with run.step("drop the table"):
        run.session.execute(f"DROP TABLE IF EXISTS {run.target_sql}")
    run.hash_change = "clear"


def _overwrite_in_one_statement(
    run: ActionRun, stage: Stage, target: Sequence[Column], engine_columns: Sequence[str]
) -> None:
    """OVERWRITE_TABLE where statements cannot share a transaction: one CREATE OR REPLACE ... AS SELECT.

    The new table has the target's columns in the target's order and types (the definition is kept),
    filled from the stage; a target column the SELECT does not return stays NULL, and ROW_IDs are
    numbered 1..n, as DELETE then INSERT would number them.
    """
    dialect = run.dialect
    given = {c.key for c in stage.columns}
    wanted = {name.lower() for name in engine_columns}
    values = []
    for column in target:
        if column.key in wanted:
            value = "ROW_NUMBER() OVER ()" if column.key == cols.ROW_ID.lower() else run.stamp(column.name.upper())
        else:
            value = f"s.{dialect.quote(column.name)}" if column.key in given else "NULL"
        values.append(f"CAST({value} AS {column.type}) AS {dialect.quote(column.name)}")
    previous = int(run.session.scalar(f"SELECT COUNT(*) FROM {run.target_sql}"))
    with run.step("replace the rows"):
        run.session.execute(
            f"CREATE OR REPLACE TABLE {run.target_sql} AS SELECT {', '.join(values)} FROM {stage.sql} s"
        )
    run.drop_stage(stage)
    run.counts.update(deleted=previous, updated=0, inserted=run.count_target())
