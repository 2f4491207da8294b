"""`etl-craft upgrade-targets`: add the missing identity columns to configured targets.

PIPELINE_ID, PIPELINE_RUN_ID and TASK_RUN_ID are added as nullable BIGINT columns with ALTER TABLE;
historical rows are not rewritten, so their new columns stay NULL. Each target is changed under its
lock, in its own warehouse transaction.
"""

from __future__ import annotations

from dataclasses import dataclass

from etl_craft.core.errors import UsageError
from etl_craft.core.text import did_you_mean
from etl_craft.engine import locks
from etl_craft.engine.records.actions import record_request
from etl_craft.handlers.sql import target_lock
from etl_craft.handlers.sql.catalog import active_tasks, key_of
from etl_craft.handlers.sql.columns import IDENTITY_COLUMNS
from etl_craft.handlers.sql.spec import ACTIONS, parse_target
from etl_craft.services.context import OperationContext
from etl_craft.warehouse.dialect import load_dialect

UPGRADABLE_ACTIONS = tuple(a for a in ACTIONS if a != "DROP_TABLE")


@dataclass(frozen=True)
class TargetUpgrade:
    target: str
    tasks: tuple[str, ...]
    added: tuple[str, ...]  # the columns added (with --dry-run: that would be added)
    status: str  # "upgraded", "up to date" or "missing" (no such table yet)


@dataclass(frozen=True)
class UpgradeTargetsView:
    dry_run: bool
    action: str | None
    target: str | None
    targets: tuple[TargetUpgrade, ...]
    message: str


def configured_targets(ctx: OperationContext, action: str | None, database: str | None) -> dict[str, list[str]]:
    """Configured SQL targets (and, without --action, ingestion scripts' TARGET_OBJECT) -> their tasks."""
    handlers = ("SQL",) if action else ("SQL", "PYTHON")
    found: dict[str, list[str]] = {}
    with ctx.db.read() as conn:
        for row in active_tasks(conn, handlers):
            if row.handler == "SQL" and (row.action not in UPGRADABLE_ACTIONS or (action and row.action != action)):
                continue
            key = key_of(row.target, database)
            if key:
                found.setdefault(key, []).append(row.label)
    return found


def upgrade_targets(
    ctx: OperationContext, *, action: str | None = None, target: str | None = None, dry_run: bool = False
) -> UpgradeTargetsView:
    if action is not None and action not in UPGRADABLE_ACTIONS:
        raise UsageError(
            "--action",
            found=repr(action),
            expected="one of " + ", ".join(UPGRADABLE_ACTIONS),
            remedy="name the SQL action whose targets to upgrade",
        )
    dialect = load_dialect(ctx.config)
    database = dialect.database_name()
    targets = configured_targets(ctx, action, database)
    if target is not None:
        key = key_of(".".join(parse_target(target, "upgrade-targets", "--target")), database)
        if key not in targets:
            raise UsageError(
                f"--target {target}",
                found="no configured SQL or ingestion target of that name" + (f" for {action}" if action else ""),
                expected="the TARGET_OBJECT of an active task",
                remedy="name a configured target" + did_you_mean(target, targets),
            )
        targets = {key: targets[key]}
    if not dry_run:
        record_request(ctx.db, ctx.actor, "upgrade-targets", {"action": action, "target": target, "dry_run": dry_run})
    results = []
    with dialect.session(ctx.db) as session:
        for key in sorted(targets):
            parts = tuple(key.split("."))
            with locks.hold(ctx.db, target_lock(key)):
                present = {c.key for c in dialect.columns(session, parts)}
                if not present:
                    results.append(TargetUpgrade(key, tuple(targets[key]), (), "missing"))
                    continue
                missing = tuple(c for c in IDENTITY_COLUMNS if c.lower() not in present)
                if missing and not dry_run:
                    with session.transaction():
                        for column in missing:
                            session.execute(
                                f"ALTER TABLE {dialect.table_sql(parts)} ADD COLUMN {dialect.ident(column)} BIGINT"
                            )
                status = "up to date" if not missing else "upgraded"
                results.append(TargetUpgrade(key, tuple(targets[key]), missing, status))
    changed = sum(1 for r in results if r.added)
    verb = "would add" if dry_run else "added"
    message = f"{verb} identity columns to {changed} of {len(results)} target(s)"
    return UpgradeTargetsView(dry_run, action, target, tuple(results), message)
