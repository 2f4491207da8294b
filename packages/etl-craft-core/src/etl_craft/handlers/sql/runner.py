"""One action on one target: its stage, its guards, the checks of the target and the statements it shares.

Every guard runs after the stage is built and before the first statement that touches the target,
so a refused task leaves the target exactly as it was. Warehouse errors become
`<ACTION> <target>: <step> failed: <DbError>: <db message>`, with the failing statement in the log.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from etl_craft.core.errors import HandlerError, SqlGuardError
from etl_craft.core.faults import fault_point
from etl_craft.handlers.context import TaskContext
from etl_craft.handlers.sql import columns as cols
from etl_craft.handlers.sql.hashing import hash_sql, row_digest_sql
from etl_craft.handlers.sql.spec import SqlTaskSpec
from etl_craft.handlers.sql.text import embed
from etl_craft.warehouse.dialect import WarehouseDialect
from etl_craft.warehouse.session import Column, ReadOnlyViolation, Session, WarehouseError


@dataclass(frozen=True)
class Stage:
    name: str
    sql: str  # the scratch table as SQL
    columns: tuple[Column, ...]  # the SELECT's columns, in order

    def column(self, name: str) -> Column | None:
        return next((c for c in self.columns if c.key == name.lower()), None)


def read_only_refusal(where: str, exc: ReadOnlyViolation) -> SqlGuardError:
    """An author's SELECT (or rule) that tried to write while the warehouse ran it read-only."""
    return SqlGuardError(
        where,
        found=f"a SELECT that changes the warehouse ({exc.kind}: {exc.message})",
        expected="a SELECT that only reads: etl-craft runs it read-only and writes the target itself",
        remedy="remove the call that changes data (setval, nextval, or a function that writes a table)",
    )


def _normal_type(text: str) -> str:
    return " ".join(text.lower().split())


class ActionRun:
    """The state one action needs: context, spec, dialect, session and what it counted."""

    def __init__(
        self, ctx: TaskContext, spec: SqlTaskSpec, dialect: WarehouseDialect, session: Session, key: str
    ) -> None:
        self.ctx = ctx
        self.spec = spec
        self.dialect = dialect
        self.session = session
        self.key = key
        self.target_sql = dialect.table_sql(spec.target)
        self.label = f"{spec.action} {spec.target_name}"
        self.counts: dict[str, int] = {}
        self.warnings: list[str] = []
        self.variables: list[tuple[str, str]] = []
        # What the Engine DB records once the warehouse commit is done: "publish" version 2, "clear", or None.
        self.hash_change: str | None = None
        self._row_id_generated: bool | None = None
        self._now: str | None = None

    # -- errors ---------------------------------------------------------------------------------
    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        try:
            yield
        except ReadOnlyViolation as exc:
            self.ctx.log.error("%s: %s failed; the statement was:\n%s", self.label, name, exc.sql)
            raise read_only_refusal(self.label, exc) from None
        except WarehouseError as exc:
            self.ctx.log.error("%s: %s failed; the statement was:\n%s", self.label, name, exc.sql)
            raise HandlerError(
                f"{self.label}: {name} failed: {exc.kind}: {exc.message}",
                remedy="the failing statement is in the attempt log; correct the SELECT or the target "
                "and run the task again",
            ) from None

    def refuse(self, found: str, expected: str, remedy: str) -> SqlGuardError:
        return SqlGuardError(self.label, found=found, expected=expected, remedy=remedy)

    def fault(self, point: str) -> None:
        fault_point(f"sql.{point}")

    # -- names ----------------------------------------------------------------------------------
    def ident(self, name: str) -> str:
        return self.dialect.ident(name)

    def keys_sql(self, alias: str | None = None) -> list[str]:
        prefix = f"{alias}." if alias else ""
        return [prefix + self.ident(k) for k in self.spec.merge_key]

    def key_match(self, left: str = "t", right: str = "s") -> str:
        return " AND ".join(f"{left}.{self.ident(k)} = {right}.{self.ident(k)}" for k in self.spec.merge_key)

    # -- the target -----------------------------------------------------------------------------
    def target_columns(self) -> list[Column]:
        with self.step("read the target's columns"):
            return self.dialect.columns(self.session, self.spec.target)

    def existing_target(self) -> list[Column]:
        found = self.target_columns()
        if not found:
            raise self.refuse(
                f"no table {self.spec.target_name}",
                f"an existing target for {self.spec.action}",
                "create it first with a CREATE_TABLE or SETUP_TABLE task",
            )
        self.check_format()
        return found

    def check_format(self) -> None:
        """S3.G.6: the task's table format must be the one the existing target is stored in."""
        wanted = self.spec.table_format or self.dialect.profile.table_format
        with self.step("read the target's table format"):
            actual = self.dialect.table_format(self.session, self.spec.target)
        if wanted != actual:
            raise self.refuse(
                f"TABLE_FORMAT {wanted}, but {self.spec.target_name} is stored as {actual}",
                "one table format for every writer of a target",
                f"set TABLE_FORMAT {actual} on this task (or leave it out)",
            )

    def require_engine_columns(self, target: Sequence[Column], needed: Sequence[str]) -> None:
        present = {c.key for c in target}
        missing = [n for n in needed if n.lower() not in present]
        identity = [n for n in missing if n in cols.IDENTITY_COLUMNS]
        if identity:
            raise self.refuse(
                f"{self.spec.target_name} has no {', '.join(identity)} column",
                f"{', '.join(cols.IDENTITY_COLUMNS)} on every SQL target",
                f"run etl-craft upgrade-targets --action {self.spec.action} --target {self.spec.target_name}",
            )
        if missing:
            raise self.refuse(
                f"{self.spec.target_name} has no {', '.join(missing)} column",
                f"the columns {self.spec.action} maintains: {', '.join(needed)}",
                "create the target with a SETUP_TABLE task for this action, or add the columns with ALTER TABLE",
            )

    def row_id_generated(self) -> bool:
        if self._row_id_generated is None:
            with self.step("read the ROW_ID generator"):
                self._row_id_generated = self.dialect.row_id_generated(self.session, self.spec.target, cols.ROW_ID)
        return self._row_id_generated

    # -- the stage ------------------------------------------------------------------------------
    def build_stage(self, *, empty: bool = False, rank: bool = False) -> Stage:
        """Run the SELECT once into a scratch table named for this task run and session (B34)."""
        assert self.spec.select is not None
        name = f"etl_stage_{self.ctx.task_run_id}_{self.session.token}"
        extra = ""
        if rank:
            keys = ", ".join(self.keys_sql("etl_src"))
            window = f"OVER (PARTITION BY {keys} ORDER BY {self.spec.dedupe_order})"
            extra = f", ROW_NUMBER() {window} AS {cols.STAGE_ROW_NUMBER}, RANK() {window} AS {cols.STAGE_RANK}"
        select = f"SELECT etl_src.*{extra}\nFROM {embed(self.spec.select)}" + ("\nWHERE 1 = 0" if empty else "")
        with self.step("stage the SELECT"):
            self.dialect.stage_select(self.session, name, select)
            found = self.dialect.scratch_columns(self.session, name)
        stage = Stage(name, self.dialect.scratch_sql(name), tuple(c for c in found if c.key not in cols.STAGE_INTERNAL))
        names = [c.name for c in stage.columns]
        where = f"{self.label} ({self.spec.source_label})"
        cols.refuse_engine_columns(names, where)
        cols.refuse_repeated_names(names, where)
        cols.refuse_unquotable(names, self.dialect.identifier_case, where)
        return stage

    def drop_stage(self, stage: Stage) -> None:
        with self.step("drop the stage"):
            self.session.execute(f"DROP TABLE IF EXISTS {stage.sql}")

    def count_source(self, stage: Stage, *, keyed: bool) -> int:
        """SOURCE_COUNT, and (B5) a refusal when a merge key is NULL, in one scan of the stage."""
        if keyed:
            for key in self.spec.merge_key:
                if stage.column(key) is None:
                    raise self.refuse(
                        f"MERGE_KEY column {key}, which the SELECT does not return",
                        "every MERGE_KEY column among the SELECT's columns",
                        "return the key columns, or correct MERGE_KEY",
                    )
        nulls = " OR ".join(f"{k} IS NULL" for k in self.keys_sql()) if keyed else "1 = 0"
        with self.step("count the stage"):
            total, null_keys = self.session.rows(
                f"SELECT COUNT(*), SUM(CASE WHEN {nulls} THEN 1 ELSE 0 END) FROM {stage.sql}"
            )[0]
        if null_keys:
            keys = ", ".join(self.spec.merge_key)
            raise self.refuse(
                f"the SELECT returns {int(null_keys)} row(s) with a NULL in MERGE_KEY ({keys})",
                "every key column set",
                "filter those rows out or COALESCE the key",
            )
        self.counts["source"] = int(total)
        return int(total)

    def _examples(self, sql: str) -> tuple[int, str]:
        with self.step("look for repeated keys"):
            count = int(self.session.scalar(f"SELECT COUNT(*) FROM ({sql}) etl_found"))
            rows = self.session.rows(f"{sql} LIMIT 5") if count else []
        shown = "; ".join(
            ", ".join(f"{k}={v!r}" for k, v in zip(self.spec.merge_key, row, strict=False)) for row in rows
        )
        return count, shown

    def dedupe(self, stage: Stage) -> None:
        """Keep one row per key: refuse ties between differing rows (B41) or repeats without an order."""
        keys = ", ".join(self.keys_sql())
        if self.spec.dedupe_order:
            digest = row_digest_sql(self.dialect, "s", stage.columns)
            first = f"s.{cols.STAGE_RANK} = 1"
            tied = (
                f"SELECT {', '.join(self.keys_sql('s'))} FROM {stage.sql} s"
                f" JOIN (SELECT {keys} FROM {stage.sql} s WHERE {first} GROUP BY {keys} HAVING COUNT(*) > 1) d"
                f" ON {self.key_match('d', 's')}"
                f" WHERE {first} GROUP BY {', '.join(self.keys_sql('s'))} HAVING COUNT(DISTINCT {digest}) > 1"
            )
            count, shown = self._examples(tied)
            if count:
                raise self.refuse(
                    f"MERGE_DEDUPE_ORDER ({self.spec.dedupe_order}) leaves ties for {count} key(s),"
                    f" for example {shown}",
                    "one first row per key, or tied rows that are identical",
                    "add a column that breaks the tie",
                )
            with self.step("keep the first row per key"):
                self.session.execute(f"DELETE FROM {stage.sql} WHERE {cols.STAGE_ROW_NUMBER} > 1")
        with self.step("index the stage"):
            unique = self.dialect.analyze_stage(self.session, stage.name, self.keys_sql(), unique=True)
        if not unique:
            repeated = f"SELECT {keys} FROM {stage.sql} GROUP BY {keys} HAVING COUNT(*) > 1"
            count, shown = self._examples(repeated)
            raise self.refuse(
                f"the SELECT returns {count} key(s) more than once, for example {shown}",
                "one row per MERGE_KEY value",
                "set MERGE_DEDUPE_ORDER (e.g. updated_at DESC) to keep one row per key, or remove the duplicates",
            )

    # -- shapes and schema evolution ------------------------------------------------------------
    def compare_shapes(self, stage: Stage, target: Sequence[Column], *, may_evolve: bool) -> list[Column]:
        """The SELECT's columns against the target's; returns the new columns evolution will add."""
        business = [c for c in target if not cols.is_engine_column(c.name)]
        by_key = {c.key: c for c in business}
        gone = [c.name for c in business if stage.column(c.name) is None]
        if gone:
            raise self.refuse(
                f"{self.spec.target_name} has column(s) {', '.join(gone)} that the SELECT no longer returns",
                "every target column among the SELECT's columns (columns are never dropped)",
                f"return NULL AS {gone[0]} (cast to its type) for a column you no longer fill",
            )
        new = [c for c in stage.columns if c.key not in by_key]
        evolving = may_evolve and self.spec.schema_evolution
        if new and not evolving:
            remedy = (
                "set SCHEMA_EVOLUTION to true to add them, or leave them out of the SELECT"
                if may_evolve
                else "add them to the target with ALTER TABLE, or leave them out of the SELECT"
            )
            raise self.refuse(
                f"the SELECT returns new column(s) {', '.join(c.name for c in new)}",
                f"only the columns of {self.spec.target_name}",
                remedy,
            )
        if evolving:
            for column in stage.columns:
                existing = by_key.get(column.key)
                if existing and _normal_type(existing.type) != _normal_type(column.type):
                    raise self.refuse(
                        f"column {existing.name} is {existing.type} in {self.spec.target_name}"
                        f" but {column.type} in the SELECT",
                        "the same type (schema evolution adds columns, it never changes types)",
                        f"cast it in the SELECT to {existing.type}",
                    )
        return new

    def evolve(self, new: Sequence[Column]) -> None:
        """S3.G.4: add each new column, nullable, with its full type; the table is never rebuilt."""
        for column in new:
            with self.step(f"add column {column.name}"):
                self.session.execute(
                    f"ALTER TABLE {self.target_sql} ADD COLUMN {self.dialect.quote(column.name)} {column.type}"
                )
        if new:
            self.warnings.append(f"added column(s) {', '.join(c.name for c in new)} to {self.spec.target_name}")

    # -- writing --------------------------------------------------------------------------------
    def stamp(self, name: str) -> str:
        values = {
            cols.PIPELINE_ID: str(self.ctx.pipeline_id),
            cols.PIPELINE_RUN_ID: str(self.ctx.pipeline_run_id),
            cols.TASK_RUN_ID: str(self.ctx.task_run_id),
            cols.CREATE_DATE: self.now_sql(),
            cols.UPDATE_DATE: self.now_sql(),
            cols.CREATED_BY: self.dialect.login_sql(),
            cols.UPDATED_BY: self.dialect.login_sql(),
            cols.DELETE_FLAG: "'N'",
            cols.ACTIVE_FLAG: "'Y'",
        }
        return values[name]

    def now_sql(self) -> str:
        """The action's one timestamp, read once: every row it stamps gets the same moment.

        Some warehouses give each statement of a transaction its own CURRENT_TIMESTAMP; a version an
        SCD2 merge closes must end exactly when its successor starts (docs/guides/sql-tasks.md).
        """
        if self._now is None:
            with self.step("read the time"):
                moment = self.session.scalar("SELECT CURRENT_TIMESTAMP")
            self._now = f"CAST('{moment.isoformat()}' AS {self.dialect.timestamp_type()})"
        return self._now

    def identity_assignments(self) -> list[tuple[str, str]]:
        return [(self.ident(n), self.stamp(n)) for n in cols.IDENTITY_COLUMNS]

    def compare_values(
        self, stage: Stage, target: Sequence[Column], *, preserve: bool = False
    ) -> list[tuple[str, str, str]]:
        """(expression, name, type) of each compare column, cast to the target's type (S3.G.1)."""
        types = {c.key: c.type for c in target}
        values = []
        for name in self.spec.compare_columns:
            column = stage.column(name)
            if column is None:
                raise self.refuse(
                    f"MERGE_COMPARE_COLUMNS column {name}, which the SELECT does not return",
                    "every compare column among the SELECT's columns",
                    "return it, or correct MERGE_COMPARE_COLUMNS",
                )
            type_ = types.get(column.key, column.type)
            expr = f"s.{self.dialect.quote(column.name)}"
            if _normal_type(type_) != _normal_type(column.type):
                expr = f"CAST({expr} AS {type_})"
            if preserve:
                expr = f"COALESCE({expr}, t.{self.ident(column.name)})"
            values.append((expr, column.name, type_))
        return values

    def hash_of(self, values: Sequence[tuple[str, str, str]]) -> str:
        return hash_sql(self.dialect, values, f"{self.label} (MERGE_COMPARE_COLUMNS)")

    def insert_from_stage(
        self,
        stage: Stage,
        engine_columns: Sequence[str],
        *,
        where: str | None = None,
        hash_expr: str | None = None,
        step: str = "insert rows",
    ) -> int:
        names = [self.dialect.quote(c.name) for c in stage.columns]
        values = [f"s.{self.dialect.quote(c.name)}" for c in stage.columns]
        for name in engine_columns:
            if name == cols.ROW_ID:
                if self.row_id_generated():
                    continue
                with self.step("read MAX(ROW_ID)"):
                    base = self.session.scalar(
                        f"SELECT COALESCE(MAX({self.ident(cols.ROW_ID)}), 0) FROM {self.target_sql}"
                    )
                value = f"{int(base)} + ROW_NUMBER() OVER ()"
            elif name == cols.HASH_KEY:
                assert hash_expr is not None
                value = hash_expr
            else:
                value = self.stamp(name)
            names.append(self.ident(name))
            values.append(value)
        sql = (
            f"INSERT INTO {self.target_sql} ({', '.join(names)})\nSELECT {', '.join(values)}\nFROM {stage.sql} AS s"
            + (f"\nWHERE {where}" if where else "")
        )
        with self.step(step):
            return self.session.dml(sql)

    def count_target(self) -> int:
        with self.step("count the target"):
            total = int(self.session.scalar(f"SELECT COUNT(*) FROM {self.target_sql}"))
        self.counts["target"] = total
        return total
