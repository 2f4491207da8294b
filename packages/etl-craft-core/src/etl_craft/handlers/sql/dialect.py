"""What every warehouse dialect provides, and how core finds the installed ones.

A dialect declares its capabilities as class attributes (replace strategy, update strategy, case
folding, identity columns, temporary tables, session pinning) so action code asks what a warehouse
can do instead of testing its name. Dialects live in the etl-craft-warehouses distribution and are
found through the `etl_craft.warehouses` entry point group; core never imports that package.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import metadata
from typing import Any, ClassVar

from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.config.urls import url_kind
from etl_craft.core.errors import ConfigurationError, SqlGuardError
from etl_craft.engine import locks
from etl_craft.engine.database import EngineDb

ENTRY_POINT_GROUP = "etl_craft.warehouses"
# The JDBC subprotocol of a Warehouse jdbc_url -> the entry point name of its dialect.
_KIND_TO_DIALECT = {"postgresql": "postgres", "duckdb": "duckdb"}

log = logging.getLogger("etl_craft.warehouse")


@dataclass(frozen=True)
class Column:
    """A column as the warehouse stores it: its name (as returned) and its full type text."""

    name: str
    type: str

    @property
    def key(self) -> str:
        return self.name.lower()


class WarehouseError(Exception):
    """A statement the warehouse refused; `kind` is the driver's error class name."""

    def __init__(self, kind: str, message: str, sql: str, sqlstate: str | None = None) -> None:
        self.kind = kind
        self.message = message
        self.sql = sql
        self.sqlstate = sqlstate
        super().__init__(f"{kind}: {message}")


class Session:
    """One warehouse connection with one open transaction at a time.

    Subclasses run statements through their driver and turn its errors into WarehouseError.
    `token` is random per session: scratch table names carry it, so no two attempts collide.
    """

    def __init__(self, dialect: WarehouseDialect) -> None:
        self.dialect = dialect
        self.token = secrets.token_hex(3)

    # -- driver hooks ---------------------------------------------------------------------------
    def _run(self, sql: str, params: Sequence[Any] | None, fetch: bool) -> tuple[list[tuple[Any, ...]], int]:
        raise NotImplementedError

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def begin(self) -> None:
        raise NotImplementedError

    def commit(self) -> None:
        raise NotImplementedError

    def rollback(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError

    # -- statements -----------------------------------------------------------------------------
    def execute(self, sql: str, params: Sequence[Any] | None = None) -> None:
        self._run(sql, params, fetch=False)

    def rows(self, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        return self._run(sql, params, fetch=True)[0]

    def scalar(self, sql: str, params: Sequence[Any] | None = None) -> Any:
        found = self.rows(sql, params)
        return found[0][0] if found else None

    def dml(self, sql: str, params: Sequence[Any] | None = None) -> int:
        """Run an INSERT, UPDATE or DELETE and return how many rows it changed."""
        return self._run(sql, params, fetch=False)[1]

    @contextmanager
    def transaction(self) -> Iterator[Session]:
        self.begin()
        try:
            yield self
        except BaseException:
            self.rollback()
            raise
        self.commit()


class WarehouseDialect:
    """The base of every warehouse dialect; one instance per connected warehouse profile."""

    name: ClassVar[str]  # the entry point name: postgres, duckdb, ...
    display_name: ClassVar[str]  # PostgreSQL, DuckDB, ...
    sqlglot_dialect: ClassVar[str]
    # How a table is replaced: "transactional" (DDL inside the action's transaction),
    # "create_or_replace" (one atomic statement) or "copy_and_restore" (compensation).
    replace_strategy: ClassVar[str] = "transactional"
    # How rows are updated from a stage: "update_from" (UPDATE ... FROM) or "merge" (MERGE ... WHEN MATCHED).
    update_strategy: ClassVar[str] = "update_from"
    # How unquoted names fold: "lower", "upper" or None (kept as written, matched case-insensitively).
    identifier_case: ClassVar[str | None] = None
    # Whether new tables get a native ROW_ID generator (identity/sequence) instead of MAX + ROW_NUMBER.
    identity_columns: ClassVar[bool] = False
    temporary_tables: ClassVar[bool] = True
    table_formats: ClassVar[tuple[str, ...]] = ("native",)
    # A warehouse file that admits one writer: every session holds an Engine DB lock while open.
    single_writer: ClassVar[bool] = False
    # Index and analyze stage tables on the merge key before joining them to the target.
    index_stages: ClassVar[bool] = False
    # Statements that pin every session to UTC (and any other canonical setting).
    session_settings: ClassVar[tuple[str, ...]] = ()
    # The bind parameter marker of the driver.
    placeholder: ClassVar[str] = "?"
    # The most bind parameters one statement may carry.
    max_parameters: ClassVar[int] = 32767
    # Storage parameters this warehouse reads; any other storage parameter on a task is refused.
    storage_parameters: ClassVar[tuple[str, ...]] = ()

    def __init__(self, config: ConnectorConfig, profile: ConnectionProfile) -> None:
        self.config = config
        self.profile = profile

    # -- connections ----------------------------------------------------------------------------
    def connect(self) -> Session:
        raise NotImplementedError

    def writer_lock_name(self) -> str:
        return f"warehouse-writer:{self.profile.jdbc_url}"

    @contextmanager
    def session(self, engine_db: EngineDb, *, lock_timeout: float | None = 3600.0) -> Iterator[Session]:
        """A connected session; on a single-writer warehouse the writer lock is held while it is open."""
        if self.single_writer:
            with locks.hold(engine_db, self.writer_lock_name(), timeout=lock_timeout), self.open_session() as session:
                yield session
        else:
            with self.open_session() as session:
                yield session

    @contextmanager
    def open_session(self) -> Iterator[Session]:
        """A connected session pinned to UTC, without the writer lock (the caller holds it)."""
        session = self.connect()
        try:
            for statement in self.session_settings:
                session.execute(statement)
            session.commit()
            yield session
        finally:
            session.close()

    # -- names ----------------------------------------------------------------------------------
    def fold(self, name: str) -> str:
        if self.identifier_case == "lower":
            return name.lower()
        if self.identifier_case == "upper":
            return name.upper()
        return name

    def quote(self, name: str) -> str:
        return '"' + name.replace('"', '""') + '"'

    def ident(self, name: str) -> str:
        """A name as written unquoted, quoted in the warehouse's folded case."""
        return self.quote(self.fold(name))

    def database_name(self) -> str | None:
        """The active database (catalog) name that table names may repeat and lineage strips."""
        return None

    # -- catalog --------------------------------------------------------------------------------
    def columns(self, session: Session, parts: tuple[str, ...]) -> list[Column]:
        """The columns of a table in order; empty when it does not exist. `parts` as written."""
        raise NotImplementedError

    def scratch_columns(self, session: Session, name: str) -> list[Column]:
        """The columns of a scratch (temporary) table this session created."""
        raise NotImplementedError

    def full_column_type(self, session: Session, parts: tuple[str, ...], column: str) -> str | None:
        """One column's full type (length, precision and scale included), or None if absent."""
        wanted = column.lower()
        return next((c.type for c in self.columns(session, parts) if c.key == wanted), None)

    def row_id_generated(self, session: Session, parts: tuple[str, ...], column: str) -> bool:
        """Whether the table's ROW_ID has a native generator (identity or sequence default)."""
        return False

    def table_format(self, session: Session, parts: tuple[str, ...]) -> str:
        return "native"

    # -- SQL fragments --------------------------------------------------------------------------
    def table_sql(self, parts: tuple[str, ...]) -> str:
        return ".".join(self.ident(p) for p in parts)

    def scratch_sql(self, name: str) -> str:
        return self.quote(name)

    def create_scratch_sql(self, name: str, select: str) -> str:
        return f"CREATE TEMPORARY TABLE {self.scratch_sql(name)} AS {select}"

    def create_scratch_table_sql(self, name: str, definition: str) -> str:
        return f"CREATE TEMPORARY TABLE {self.scratch_sql(name)} ({definition})"

    def row_id_column_sql(self, column: str) -> str:
        """The ROW_ID column definition of a new table."""
        return f"{self.ident(column)} BIGINT"

    def login_sql(self) -> str:
        """The expression stamped into CREATED_BY and UPDATED_BY: the warehouse login."""
        return "CURRENT_USER"

    def timestamp_type(self) -> str:
        return "TIMESTAMP WITH TIME ZONE"

    def text_type(self) -> str:
        return "VARCHAR"

    def update_from_stage(
        self,
        target: str,
        stage: str,
        keys: Sequence[str],
        assignments: Sequence[tuple[str, str]],
        condition: str | None,
    ) -> str:
        """An UPDATE of `target` (alias t) from `stage` (alias s) joined on `keys`, set-based."""
        sets = ",\n    ".join(f"{column} = {value}" for column, value in assignments)
        where = " AND ".join(f"t.{k} = s.{k}" for k in keys)
        if condition:
            where += f"\n  AND ({condition})"
        return f"UPDATE {target} AS t SET\n    {sets}\nFROM {stage} AS s\nWHERE {where}"

    def analyze_stage(self, session: Session, stage: str, keys: Sequence[str], unique: bool) -> bool:
        """Prepare a stage for joins on `keys`; return False if `unique` was asked and keys repeat."""
        if not unique:
            return True
        found = session.scalar(
            f"SELECT 1 FROM {self.scratch_sql(stage)} GROUP BY {', '.join(keys)} HAVING COUNT(*) > 1 LIMIT 1"
        )
        return found is None

    def canonical_text(self, expr: str, type_text: str) -> str | None:
        """The version-2 canonical text of a value of this type, or None when it has none (floats...)."""
        raise NotImplementedError

    def is_float(self, type_text: str) -> bool:
        return False

    def md5_sql(self, expr: str) -> str:
        return f"md5({expr})"


def installed_dialects() -> dict[str, metadata.EntryPoint]:
    return {entry.name: entry for entry in metadata.entry_points(group=ENTRY_POINT_GROUP)}


def load_dialect(config: ConnectorConfig) -> WarehouseDialect:
    """The dialect of the configured warehouse; refuses a missing Warehouse or an unknown warehouse."""
    profile = config.warehouse
    if profile is None:
        raise ConfigurationError(
            "craft-connector.yml: Warehouse",
            found="no Warehouse section",
            expected="a Warehouse section for SQL and BUSINESS_RULES tasks",
            remedy="add a Warehouse section naming the warehouse's jdbc_url",
        )
    available = installed_dialects()
    kind = url_kind(profile.jdbc_url)
    name = _KIND_TO_DIALECT.get(kind, kind)
    if profile.table_format != "native":
        name = f"{name}_{profile.table_format}"
    entry = available.get(name)
    if entry is None:
        supported = ", ".join(sorted(available)) or "none (install etl-craft-warehouses)"
        raise ConfigurationError(
            f"craft-connector.yml: {profile.where}.jdbc_url",
            found=f"warehouse {name!r}, which no installed dialect supports",
            expected=f"one of the supported warehouses: {supported}",
            remedy="point the Warehouse section at a supported warehouse, or install the distribution that adds it",
        )
    dialect_class = entry.load()
    if not (isinstance(dialect_class, type) and issubclass(dialect_class, WarehouseDialect)):
        raise ConfigurationError(
            f"entry point {entry.name} of {ENTRY_POINT_GROUP}",
            found=repr(dialect_class),
            expected="a WarehouseDialect subclass",
            remedy="reinstall etl-craft-warehouses",
        )
    return dialect_class(config, profile)


def refuse_table_format(dialect: WarehouseDialect, requested: str, where: str) -> None:
    if requested not in dialect.table_formats:
        raise SqlGuardError(
            where,
            found=f"TABLE_FORMAT {requested}",
            expected=f"a table format {dialect.display_name} stores: {', '.join(dialect.table_formats)}",
            remedy="use TABLE_FORMAT native (or leave it out) on this warehouse",
        )
