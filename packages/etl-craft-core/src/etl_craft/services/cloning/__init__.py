"""Cloning (S6.E): the Engine DB's CFG_ and AUD_ tables mirrored into the Warehouse schema.

`clone_now` is the one operation: `etl-craft clone` runs it once, and the server runs it every
Cloning.Every_minutes on a thread of its own, never inside a run. At most one clone runs: the clone
lock is held throughout, and a clone that cannot have it within Cloning.Lock_wait_seconds skips
its cycle and says so (the running one copies what the skipped one would have).
"""

from __future__ import annotations

import logging
from contextlib import ExitStack
from dataclasses import dataclass, field

from etl_craft.core.clock import iso, utc_now
from etl_craft.core.errors import CloningError, ConfigurationError, LockTimeoutError
from etl_craft.core.faults import fault_point
from etl_craft.engine import locks
from etl_craft.engine.schema.tables import TableSpec
from etl_craft.services.cloning import copy
from etl_craft.services.cloning.mirror import CLONE_ROW, Mirror, Watermark
from etl_craft.services.context import OperationContext
from etl_craft.warehouse.dialect import load_dialect
from etl_craft.warehouse.session import WarehouseError

CLONE_LOCK = "clone"
log = logging.getLogger("etl_craft.cloning")


@dataclass(frozen=True)
class TableCopy:
    table: str
    mirror: str
    rows: int  # rows copied (new or changed) this clone
    deleted: int  # mirror rows removed because the Engine DB no longer has them
    change: str | None  # "created", "added cols ..." or None


@dataclass(frozen=True)
class CloneView:
    """The `etl-craft/clone/1` document."""

    skipped: bool
    tables: list[TableCopy] = field(default_factory=list)
    message: str = ""

    def lines(self) -> list[str]:
        out = []
        for c in self.tables:
            extra = f"\t{c.change}" if c.change else ""
            out.append(f"{c.table}\t{c.mirror}\t{c.rows}{extra}")
        return [*out, self.message]


def _refuse_when_off(ctx: OperationContext) -> None:
    settings = ctx.config.cloning
    if not settings.enabled:
        raise ConfigurationError(
            "craft-connector.yml: Cloning.Enabled",
            found="false (or no Cloning section)",
            expected="Cloning.Enabled: true with a Scope and a Warehouse section",
            remedy="turn cloning on (docs/guides/cloning.md)",
        )


def _copy_table(ctx: OperationContext, mirror: Mirror, spec: TableSpec) -> TableCopy:
    change = mirror.prepare(spec)
    names = ctx.config.redaction
    now = utc_now()
    if not copy.incremental(spec):
        rows = copy.all_rows(ctx.db, spec, names)
        with mirror.session.transaction():
            mirror.replace_all(spec, rows)
            mirror.write_state(spec.name, mark=None, at=now, rows=len(rows), error=None)
        return TableCopy(spec.name, mirror.table(spec.name), len(rows), 0, change)
    copied = 0
    for batch in copy.changed_batches(ctx.db, spec, mirror.watermark(spec.name), now - copy.SETTLE):
        key_at = 1 + [c.name for c in spec.columns].index(spec.primary_key[0])
        rows = copy.masked(spec, [tuple(r)[1:] for r in batch], names)
        with mirror.session.transaction():
            mirror.delete_keys(spec, [r[key_at] for r in batch])
            mirror.insert(spec, rows)
            mark = Watermark(batch[-1][0], batch[-1][key_at])
            mirror.write_state(spec.name, mark=mark, at=now, rows=copied + len(rows), error=None)
        copied += len(rows)
        fault_point("clone_batch")  # crash tests: a clone dying here resumes from this batch's watermark
    deleted = copy.mirror_deletions(ctx.db, spec, mirror)
    return TableCopy(spec.name, mirror.table(spec.name), copied, deleted, change)


def _clone_all(ctx: OperationContext) -> list[TableCopy]:
    dialect = load_dialect(ctx.config)
    schema = ctx.config.warehouse.schema if ctx.config.warehouse else None
    with dialect.session(ctx.db, lock_timeout=float(ctx.config.cloning.lock_wait_seconds)) as session:
        mirror = Mirror(dialect, session, schema or dialect.default_schema)
        mirror.prepare_state()
        try:
            copies = [_copy_table(ctx, mirror, spec) for spec in copy.scope_tables(ctx.config.cloning.scope)]
        except WarehouseError as exc:
            session.rollback()
            with session.transaction():
                mirror.write_state(CLONE_ROW, mark=None, at=utc_now(), rows=0, error=str(exc))
            raise CloningError(
                f"clone into {dialect.display_name} schema {schema}",
                found=str(exc),
                expected="the warehouse to accept the mirror's statements",
                remedy="fix the warehouse (schema exists, login may create tables) and run etl-craft clone",
            ) from exc
        with session.transaction():
            total = sum(c.rows for c in copies)
            mirror.write_state(CLONE_ROW, mark=None, at=utc_now(), rows=total, error=None)
    return copies


def clone_now(ctx: OperationContext) -> CloneView:
    """Copy what changed since the last clone; skip (not fail) while another clone holds the lock."""
    _refuse_when_off(ctx)
    wait = float(ctx.config.cloning.lock_wait_seconds)
    with ExitStack() as held:
        try:
            held.enter_context(locks.hold(ctx.db, CLONE_LOCK, timeout=wait))
        except LockTimeoutError:
            message = f"clone skipped: another clone held the clone lock for {wait:g}s (Cloning.Lock_wait_seconds)"
            log.warning("%s", message)
            return CloneView(skipped=True, message=message)
        started = utc_now()
        copies = _clone_all(ctx)  # a DuckDB writer lock that times out is LockTimeoutError (exit 14)
    rows, deleted = sum(c.rows for c in copies), sum(c.deleted for c in copies)
    message = f"cloned {len(copies)} table(s) at {iso(started)}: {rows} row(s) copied, {deleted} deleted"
    return CloneView(skipped=False, tables=copies, message=message)
