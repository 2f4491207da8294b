"""The BUSINESS_RULES handler: flag the rows of a table that break a rule, and clear flags that no longer apply.

Each rule is a correlated SELECT over the checked row `t`. Rules run in SEQUENCE_NUMBER waves (rules
of one wave in parallel, up to Max_parallel_tasks); each commits its own flags, fenced by the
attempt. A normal run judges only this run's rows (PIPELINE_RUN_ID) and the standing flags of keys
that have left the table; a forced run judges the whole table and clears every flag it does not
find again (S2.D.10, S6.D). Keys travel in batches of 1,000, within every database's parameter limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import dataclass
from itertools import groupby

import sqlalchemy as sa

from etl_craft.core.clock import utc_now
from etl_craft.core.errors import HandlerError, MetadataError, SqlGuardError
from etl_craft.engine import locks
from etl_craft.engine.schema.tables import aud_business_rules_results, aud_business_rules_run_log, cfg_business_rules
from etl_craft.handlers.context import Counts, HandlerResult, TaskContext
from etl_craft.handlers.sql import lock_timeout
from etl_craft.handlers.sql.binds import refuse_bind_parameters
from etl_craft.handlers.sql.columns import ACTIVE_FLAG, PIPELINE_RUN_ID, PLAIN_NAME
from etl_craft.handlers.sql.runner import read_only_refusal
from etl_craft.handlers.sql.spec import parse_target
from etl_craft.handlers.sql.text import check_read_only, nested, strip_trailing
from etl_craft.warehouse.dialect import WarehouseDialect, load_dialect
from etl_craft.warehouse.session import ReadOnlyViolation, Session, WarehouseError

BATCH = 1000  # keys per statement: within SQLite's, PostgreSQL's and every warehouse's parameter limit


@dataclass(frozen=True)
class Rule:
    rule_id: int
    name: str
    sql: str
    kind: str  # INCOMPLETE | REJECT | REPORT
    key_column: str
    table: str
    sequence: int

    @property
    def label(self) -> str:
        return f"{self.name} on {self.table}"


@dataclass(frozen=True)
class Outcome:
    rule: Rule
    flagged: int = 0
    cleared: int = 0
    error: str | None = None


def batches(items: Sequence[str], size: int = BATCH) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def load_rules(ctx: TaskContext) -> list[Rule]:
    with ctx.engine_db.read() as conn:
        rows = conn.execute(
            sa.select(cfg_business_rules)
            .where(cfg_business_rules.c.task_id == ctx.task_id, cfg_business_rules.c.active_flag == "Y")
            .order_by(cfg_business_rules.c.sequence_number, cfg_business_rules.c.business_rule_id)
        ).all()
    if not rows:
        raise MetadataError(
            f"task {ctx.task_code}",
            found="no active row in CFG_BUSINESS_RULES",
            expected="at least one active rule for a BUSINESS_RULES task",
            remedy="add rules with a project migration or etl-craft config apply, or retire the task",
        )
    return [
        Rule(
            r.business_rule_id,
            r.business_rule_name,
            r.business_rule_sql,
            r.business_rule_type,
            r.business_rule_key_column,
            r.target_table,
            r.sequence_number,
        )
        for r in rows
    ]


def precheck(rule: Rule, sqlglot_dialect: str, task_code: str, state_changing: frozenset[str] = frozenset()) -> None:
    where = f"task {task_code}: business rule {rule.name}"
    if not PLAIN_NAME.match(rule.key_column or ""):
        raise SqlGuardError(
            f"{where}: BUSINESS_RULE_KEY_COLUMN",
            found=repr(rule.key_column),
            expected="a plain column name (letters, digits and _)",
            remedy="name the column that identifies a row, e.g. customer_id",
        )
    parse_target(rule.table, task_code, f"business rule {rule.name}: TARGET_TABLE")
    refuse_bind_parameters(
        rule.sql,
        sqlglot_dialect,
        f"{where}: BUSINESS_RULE_SQL",
        "refer to the checked row as t (e.g. t.order_id) and write any other value into the rule as a literal",
    )
    check_read_only(strip_trailing(rule.sql), sqlglot_dialect, f"{where}: BUSINESS_RULE_SQL", state_changing)


def succeeded_rules(ctx: TaskContext) -> set[int]:
    with ctx.engine_db.read() as conn:
        return set(
            conn.execute(
                sa.select(aud_business_rules_run_log.c.business_rule_id).where(
                    aud_business_rules_run_log.c.task_run_id == ctx.task_run_id,
                    aud_business_rules_run_log.c.status == "SUCCESS",
                )
            ).scalars()
        )


def start_rule(ctx: TaskContext, rule: Rule) -> int:
    """The rule's AUD_BUSINESS_RULES_RUN_LOG row for this task run, (re)set to IN-PROGRESS."""
    log = aud_business_rules_run_log
    with ctx.fenced_write() as conn:
        found = conn.execute(
            sa.select(log.c.business_rule_run_id).where(
                log.c.business_rule_id == rule.rule_id, log.c.task_run_id == ctx.task_run_id
            )
        ).scalar_one_or_none()
        if found is not None:
            conn.execute(
                log.update()
                .where(log.c.business_rule_run_id == found)
                .values(status="IN-PROGRESS", start_date=utc_now(), end_date=None)
            )
            return int(found)
        return int(
            conn.execute(
                log.insert()
                .values(
                    business_rule_id=rule.rule_id,
                    task_run_id=ctx.task_run_id,
                    status="IN-PROGRESS",
                    start_date=utc_now(),
                )
                .returning(log.c.business_rule_run_id)
            ).scalar_one()
        )


def standing_flags(ctx: TaskContext, rule: Rule) -> set[str]:
    results = aud_business_rules_results
    with ctx.engine_db.read() as conn:
        return set(
            conn.execute(
                sa.select(results.c.business_rule_key).where(
                    results.c.business_rule_id == rule.rule_id, results.c.active_flag == "Y"
                )
            ).scalars()
        )


def clear_rule_keys(conn: sa.Connection, rule_id: int, keys: Sequence[str]) -> int:
    """Close the rule's active flags of `keys`: one UPDATE per 1,000 keys, on the caller's transaction."""
    results = aud_business_rules_results
    cleared = 0
    ended = utc_now()
    for chunk in batches(sorted(keys)):
        cleared += conn.execute(
            results.update()
            .where(
                results.c.business_rule_id == rule_id,
                results.c.active_flag == sa.literal_column("'Y'"),
                # Rendered as literals: PostgreSQL then hashes the list (a list of bind parameters is
                # searched row by row), and no statement comes near a parameter limit.
                results.c.business_rule_key.in_(
                    sa.bindparam("keys", list(chunk), expanding=True, literal_execute=True)
                ),
            )
            .values(active_flag=sa.literal_column("'N'"), end_date=ended)
        ).rowcount
    return cleared


def record_outcome(ctx: TaskContext, rule: Rule, run_id: int, flag: Sequence[str], clear: Sequence[str]) -> int:
    """New flags, cleared flags and the rule's SUCCESS, committed together."""
    started = utc_now()
    with ctx.fenced_write() as conn:
        for chunk in batches(sorted(flag)):
            conn.execute(
                aud_business_rules_results.insert(),
                [
                    {
                        "business_rule_run_id": run_id,
                        "business_rule_id": rule.rule_id,
                        "business_rule_key": key,
                        "target_table": rule.table,
                        "status": rule.kind,
                        "start_date": started,
                    }
                    for key in chunk
                ],
            )
        cleared = clear_rule_keys(conn, rule.rule_id, clear)
        finish_rule(conn, run_id, "SUCCESS")
    return cleared


def finish_rule(conn: sa.Connection, run_id: int, status: str) -> None:
    log = aud_business_rules_run_log
    conn.execute(log.update().where(log.c.business_rule_run_id == run_id).values(status=status, end_date=utc_now()))


class RuleCheck:
    """One rule against its table in one warehouse session."""

    def __init__(self, ctx: TaskContext, dialect: WarehouseDialect, session: Session, rule: Rule) -> None:
        self.ctx = ctx
        self.dialect = dialect
        self.session = session
        self.rule = rule
        self.parts = tuple(rule.table.split("."))
        self.table = dialect.table_sql(self.parts)
        self.key = f"CAST(t.{dialect.ident(rule.key_column)} AS {dialect.text_type()})"

    def step(self, name: str, sql: str) -> list[tuple[object, ...]]:
        try:
            with self.dialect.read_only(self.session):
                return self.session.rows(sql)
        except ReadOnlyViolation as exc:
            self.ctx.log.error("%s: %s failed; the statement was:\n%s", self.rule.label, name, exc.sql)
            raise read_only_refusal(f"{self.rule.label}: BUSINESS_RULE_SQL", exc) from None
        except WarehouseError as exc:
            self.ctx.log.error("%s: %s failed; the statement was:\n%s", self.rule.label, name, exc.sql)
            raise HandlerError(f"{self.rule.label}: {name} failed: {exc.kind}: {exc.message}") from None

    def scope(self, columns: set[str]) -> str:
        conditions = ["1 = 1"]
        if ACTIVE_FLAG.lower() in columns:
            conditions.append(f"t.{self.dialect.ident(ACTIVE_FLAG)} = 'Y'")  # closed SCD2 versions aren't judged
        if not self.ctx.force:
            if PIPELINE_RUN_ID.lower() not in columns:
                raise HandlerError(
                    self.rule.label,
                    found=f"{self.rule.table} without a PIPELINE_RUN_ID column",
                    expected="PIPELINE_RUN_ID to find this run's rows",
                    remedy=f"run etl-craft upgrade-targets --target {self.rule.table}, or run the task with --force",
                )
            conditions.append(f"t.{self.dialect.ident(PIPELINE_RUN_ID)} = {self.ctx.pipeline_run_id}")
        return " AND ".join(conditions)

    def keys(self, name: str, condition: str, scope: str) -> set[str]:
        sql = f"SELECT DISTINCT {self.key} FROM {self.table} t WHERE {scope} AND {condition} {nested(self.rule.sql)}"
        return {str(row[0]) for row in self.step(name, sql) if row[0] is not None}

    def missing(self, keys: set[str], columns: set[str]) -> set[str]:
        """The keys with no (active) row left in the table, sent in batches through a scratch table."""
        if not keys:
            return set()
        name = f"etl_rule_keys_{self.ctx.task_run_id}_{self.rule.rule_id}_{self.session.token}"
        scratch = self.dialect.scratch_sql(name)
        active = f" AND t.{self.dialect.ident(ACTIVE_FLAG)} = 'Y'" if ACTIVE_FLAG.lower() in columns else ""
        placeholder = self.dialect.placeholder
        try:
            with self.session.transaction():
                self.session.execute(self.dialect.create_scratch_table_sql(name, f"k {self.dialect.text_type()}"))
                for chunk in batches(sorted(keys)):
                    values = ", ".join(f"({placeholder})" for _ in chunk)
                    self.session.execute(f"INSERT INTO {scratch} (k) VALUES {values}", list(chunk))
                found = self.session.rows(
                    f"SELECT s.k FROM {scratch} s WHERE NOT EXISTS"
                    f" (SELECT 1 FROM {self.table} t WHERE {self.key} = s.k{active})"
                )
                self.session.execute(f"DROP TABLE {scratch}")
        except WarehouseError as exc:
            raise HandlerError(f"{self.rule.label}: look up flagged keys failed: {exc.kind}: {exc.message}") from None
        return {str(row[0]) for row in found}

    def run(self) -> Outcome:
        columns = {c.key for c in self.dialect.columns(self.session, self.parts)}
        if not columns:
            raise HandlerError(
                self.rule.label,
                found=f"no table {self.rule.table}",
                expected="the table the rule checks",
                remedy="correct TARGET_TABLE, or run the task that creates the table first",
            )
        if self.rule.key_column.lower() not in columns:
            raise HandlerError(
                self.rule.label,
                found=f"no column {self.rule.key_column} in {self.rule.table}",
                expected="BUSINESS_RULE_KEY_COLUMN among the table's columns",
                remedy="correct BUSINESS_RULE_KEY_COLUMN",
            )
        run_id = start_rule(self.ctx, self.rule)
        try:
            scope = self.scope(columns)
            failing = self.keys("find failing rows", "EXISTS", scope)
            standing = standing_flags(self.ctx, self.rule)
            if self.ctx.force:
                clear = standing - failing  # the whole table was judged
            else:
                passing = self.keys("find passing rows", "NOT EXISTS", scope) - failing
                clear = standing & passing
                clear |= self.missing(standing - failing - clear, columns)
            flag = failing - standing
            cleared = record_outcome(self.ctx, self.rule, run_id, sorted(flag), sorted(clear))
            self.session.rollback()
        except BaseException:
            with self.ctx.fenced_write() as conn:
                finish_rule(conn, run_id, "FAILED")
            raise
        return Outcome(self.rule, flagged=len(flag), cleared=cleared)


def _check(ctx: TaskContext, dialect: WarehouseDialect, rule: Rule) -> Outcome:
    try:
        with dialect.open_session() as session:
            return RuleCheck(ctx, dialect, session, rule).run()
    except HandlerError as exc:
        return Outcome(rule, error=str(exc))
    except WarehouseError as exc:
        return Outcome(rule, error=f"{rule.label}: connect failed: {exc.kind}: {exc.message}")


def run(ctx: TaskContext) -> HandlerResult:
    dialect = load_dialect(ctx.config)
    rules = load_rules(ctx)
    for rule in rules:
        precheck(rule, dialect.sqlglot_dialect, ctx.task_code, dialect.state_changing_functions)
    done = set() if (ctx.rerun or ctx.force) else succeeded_rules(ctx)
    flagged = cleared = 0
    notes: list[tuple[str, str]] = []
    workers = max(1, ctx.config.orchestration.max_parallel_tasks)
    timeout = lock_timeout(ctx)
    # Rules only read the warehouse, but a single-writer file admits no reader beside a writer.
    writer_lock = (
        locks.hold(ctx.engine_db, dialect.writer_lock_name(), timeout=timeout)
        if dialect.single_writer
        else nullcontext()
    )
    with writer_lock:
        for sequence, group in groupby(rules, key=lambda r: r.sequence):
            wave = [r for r in group if r.rule_id not in done]
            if not wave:
                continue
            with ThreadPoolExecutor(max_workers=min(workers, len(wave))) as pool:
                outcomes = list(pool.map(lambda r: _check(ctx, dialect, r), wave))
            failed = [o for o in outcomes if o.error]
            for outcome in outcomes:
                flagged += outcome.flagged
                cleared += outcome.cleared
                if not outcome.error:
                    notes.append((f"RULE {outcome.rule.name}", f"{outcome.flagged} flagged, {outcome.cleared} cleared"))
            if failed:
                raise HandlerError(
                    f"{len(failed)} of {len(wave)} business rule(s) failed in wave SEQUENCE_NUMBER={sequence}: "
                    + "; ".join(str(o.error) for o in failed),
                    remedy="fix the failing rules and run the task again; rules that succeeded are not re-run",
                )
    return HandlerResult(counts=Counts(inserted=flagged, updated=cleared), variables=tuple(notes))
