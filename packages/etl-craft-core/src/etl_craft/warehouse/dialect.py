"""What every warehouse dialect provides, and how core finds the installed ones.

One class per warehouse, in etl-craft-warehouses (or any distribution), registered in the
`etl_craft.warehouses` entry point group under its `name`. Everything that differs between
warehouses is here as a capability (a class attribute) or a hook (a method), so code outside the
dialects asks what a warehouse can do instead of testing its name:

- configuration (classmethods, used through `config.warehouses.WarehouseKind`): the JDBC
  subprotocols and URL form, parsing the URL, the table formats, the section keys and login;
- connections: connect, the session settings, the writer lock of a single-writer warehouse, the
  file a file warehouse lives in, the server address doctor compares, an engine for scripts;
- SQL: names and case folding, the catalog, stages, read-only reads, ROW_ID, canonical hash text.

A dialect module imports its driver only inside the hooks that connect: the configuration loads
every installed dialect class for every command.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

from etl_craft.config.connections import LOGIN_KEYS, login_text, with_login
from etl_craft.config.model import ConnectionProfile, ConnectorConfig
from etl_craft.config.warehouses import ENTRY_POINT_GROUP, warehouse_kind
from etl_craft.core.errors import ConfigurationError, SqlGuardError
from etl_craft.warehouse.session import Column, Session

if TYPE_CHECKING:
    import sqlalchemy as sa

    from etl_craft.config.urls import JdbcTarget, Refuse, Resolve
    from etl_craft.config.values import Reader
    from etl_craft.engine.database import EngineDb


class WarehouseDialect:
    """The base of every warehouse dialect; one instance per connected warehouse profile."""

    # -- what the configuration reads (WarehouseKind) -------------------------------------------
    name: ClassVar[str]  # the entry point name, and the one spelling of the warehouse: postgres, duckdb, ...
    display_name: ClassVar[str]  # PostgreSQL, DuckDB, ...
    jdbc_subprotocols: ClassVar[tuple[str, ...]]  # postgresql, duckdb, ...: the URLs this dialect takes
    url_form: ClassVar[str]  # e.g. jdbc:duckdb:<file>
    # The Table_format values it stores; the first is the default, and a task's TABLE_FORMAT must be one.
    table_formats: ClassVar[tuple[str, ...]] = ("native",)
    # The schema when the section names none; None: the section must name an existing one.
    default_schema: ClassVar[str | None] = None
    # Section keys read beyond Name, Table_format, jdbc_url and schema (the login keys by default).
    profile_keys: ClassVar[tuple[str, ...]] = LOGIN_KEYS

    # -- capabilities ---------------------------------------------------------------------------
    sqlglot_dialect: ClassVar[str]
    # How unquoted names fold: "lower", "upper" or None (kept as written, matched case-insensitively).
    identifier_case: ClassVar[str | None] = None
    # Whether new tables get a native ROW_ID generator (identity/sequence) instead of MAX + ROW_NUMBER.
    identity_columns: ClassVar[bool] = False
    # A warehouse file that admits one writer: every session holds an Engine DB lock while open.
    single_writer: ClassVar[bool] = False
    # Statements that pin every session to UTC (and any other canonical setting).
    session_settings: ClassVar[tuple[str, ...]] = ()
    # The bind parameter marker of the driver.
    placeholder: ClassVar[str] = "?"
    # Storage parameters this warehouse reads; any other storage parameter on a task is refused.
    storage_parameters: ClassVar[tuple[str, ...]] = ()
    # How CREATE_TABLE replaces a table: "transaction" (drop, create and fill in the action's one
    # transaction, where DDL is transactional) or "create_or_replace" (one CREATE OR REPLACE TABLE ...
    # AS SELECT, atomic on warehouses whose DDL commits the open transaction).
    replace_strategy: ClassVar[str] = "transaction"
    # Whether several writing statements can share one transaction. Where they cannot (Trino's
    # Iceberg connector commits each statement), OVERWRITE_TABLE publishes with one CREATE OR
    # REPLACE TABLE ... AS SELECT too, so a failure leaves the old rows or the new, never none.
    transactional: ClassVar[bool] = True
    # Whether updates from a stage are a MERGE (Trino, Databricks: no UPDATE ... FROM there).
    update_with_merge: ClassVar[bool] = False
    # Functions that change state, refused in an author's SELECT before it runs: for warehouses that
    # can't run a statement read-only (see `read_only`), the only guard against their side effects.
    state_changing_functions: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, config: ConnectorConfig, profile: ConnectionProfile) -> None:
        self.config = config
        self.profile = profile

    # -- configuration hooks --------------------------------------------------------------------
    @classmethod
    def parse_url(cls, url: str, resolve: Resolve, refuse: Refuse) -> JdbcTarget:
        """The URL checked (refuse(...) builds the error) with any file it names resolved by `resolve`."""
        raise NotImplementedError

    @classmethod
    def read_profile(cls, reader: Reader, profile: ConnectionProfile) -> ConnectionProfile:
        """The profile with the keys this warehouse reads; the login rules by default."""
        return with_login(reader, profile)

    @classmethod
    def describe_login(cls, profile: ConnectionProfile) -> str:
        return login_text(profile)

    # -- connections ----------------------------------------------------------------------------
    def connect(self) -> Session:
        raise NotImplementedError

    def writer_lock_name(self) -> str:
        """The Engine DB lock a single-writer warehouse's sessions (and ingestion scripts) hold."""
        return f"warehouse-writer:{self.profile.jdbc_url}"

    def storage_file(self) -> Path | None:
        """The file a file warehouse lives in (connecting creates it when missing); None for a server."""
        return None

    def server_address(self) -> tuple[str, int, str] | None:
        """(host, port, database) of a server an Engine DB could share, for doctor's cloning check."""
        return None

    def script_engine(self) -> sa.Engine:
        """A SQLAlchemy engine for ingestion scripts (task.warehouse()); secrets never in its URL."""
        raise NotImplementedError

    @contextmanager
    def session(self, engine_db: EngineDb, *, lock_timeout: float | None = 3600.0) -> Iterator[Session]:
        """A connected session; on a single-writer warehouse the writer lock is held while it is open."""
        if not self.single_writer:
            with self.open_session() as session:
                yield session
            return
        from etl_craft.engine import locks

        with locks.hold(engine_db, self.writer_lock_name(), timeout=lock_timeout), self.open_session() as session:
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

    def row_id_generated(self, session: Session, parts: tuple[str, ...], column: str) -> bool:
        """Whether the table's ROW_ID has a native generator (identity or sequence default)."""
        return False

    def table_format(self, session: Session, parts: tuple[str, ...]) -> str:
        return "native"

    def describe_schemas(self, session: Session, schemas: Sequence[str]) -> list[tuple[Any, ...]]:
        """Every column of every table in `schemas` (names as written), in one statement, for the
        catalog's `generate-docs --with-warehouse`: rows of (schema, table, column, type, column
        comment, table comment), comments None where there is none."""
        raise ConfigurationError(
            f"generate-docs --with-warehouse: Warehouse ({self.display_name})",
            found=f"a {self.display_name} warehouse",
            expected="a warehouse whose dialect reads column types and comments (PostgreSQL, DuckDB)",
            remedy="run generate-docs without --with-warehouse on this warehouse",
        )

    # -- reading an author's SELECT -------------------------------------------------------------
    @contextmanager
    def read_only(self, session: Session) -> Iterator[None]:
        """Run the block's statements read-only where the warehouse can, raising ReadOnlyViolation
        for one that writes. The base has no such mode: `state_changing_functions` guard instead."""
        yield

    def stage_select(self, session: Session, name: str, select: str) -> None:
        """Create the scratch table `name` holding the SELECT's rows, the SELECT run read-only."""
        session.execute(f"CREATE TEMPORARY TABLE {self.scratch_sql(name)} AS {select}")

    # -- SQL fragments --------------------------------------------------------------------------
    def table_sql(self, parts: tuple[str, ...]) -> str:
        return ".".join(self.ident(p) for p in parts)

    def scratch_sql(self, name: str) -> str:
        return self.quote(name)

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

    def text_type(self, length: int | None = None) -> str:
        """Text, of at most `length` characters where a length is given (HASH_KEY, the flags)."""
        return "VARCHAR" if length is None else f"VARCHAR({length})"

    def update_from_stage(
        self,
        target: str,
        stage: str,
        keys: Sequence[str],
        assignments: Sequence[tuple[str, str]],
        condition: str | None,
    ) -> str:
        """An UPDATE of `target` (alias t) from `stage` (alias s) joined on `keys`, set-based.

        Where the warehouse has no UPDATE ... FROM (`update_with_merge`), one MERGE ... WHEN MATCHED
        THEN UPDATE instead; the stage is deduplicated on the keys first, so each target row matches
        at most one stage row, as MERGE requires.
        """
        sets = ",\n    ".join(f"{column} = {value}" for column, value in assignments)
        if self.update_with_merge:
            on = " AND ".join(f"t.{k} = s.{k}" for k in keys)
            when = f" AND ({condition})" if condition else ""
            return (
                f"MERGE INTO {target} AS t\nUSING {stage} AS s\nON {on}\nWHEN MATCHED{when} THEN UPDATE SET\n    {sets}"
            )
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


def dialect_class(name: str) -> type[WarehouseDialect]:
    """The installed dialect class called `name` (the configuration has already loaded it)."""
    found: Any = warehouse_kind(name)
    if not issubclass(found, WarehouseDialect):
        raise ConfigurationError(
            f"entry point {name} of {ENTRY_POINT_GROUP}",
            found=repr(found),
            expected="a subclass of etl_craft.warehouse.dialect.WarehouseDialect",
            remedy="reinstall the distribution that provides it",
        )
    return cast(type[WarehouseDialect], found)


def load_dialect(config: ConnectorConfig) -> WarehouseDialect:
    """The dialect of the configured warehouse; refuses a configuration without a Warehouse section."""
    profile = config.warehouse
    if profile is None or profile.dialect is None:
        raise ConfigurationError(
            "craft-connector.yml: Warehouse",
            found="no Warehouse section",
            expected="a Warehouse section for SQL and BUSINESS_RULES tasks",
            remedy="add a Warehouse section naming the warehouse's jdbc_url",
        )
    return dialect_class(profile.dialect)(config, profile)


def refuse_table_format(dialect: WarehouseDialect, requested: str, where: str) -> None:
    if requested not in dialect.table_formats:
        raise SqlGuardError(
            where,
            found=f"TABLE_FORMAT {requested}",
            expected=f"a table format {dialect.display_name} stores: {', '.join(dialect.table_formats)}",
            remedy=f"use TABLE_FORMAT {dialect.table_formats[0]} (or leave it out) on this warehouse",
        )
