"""Creating and migrating the Engine DB: packaged ENGINE migrations, then the project's own.

Every applied file is recorded in SCHEMA_MIGRATIONS with its SHA-256; an applied file must never
change. Each migration runs in its own transaction under the cross-process migrate lock.
"""

from __future__ import annotations

import hashlib
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import sqlalchemy as sa

from etl_craft.core.enums import MigrationSource
from etl_craft.core.errors import EngineDbError, MigrationError
from etl_craft.core.text import not_utf8, one_line
from etl_craft.engine import locks
from etl_craft.engine.database import EngineDb, recording_migration
from etl_craft.engine.tables import schema_migrations

PROJECT_FILE = re.compile(r"^\d{4}_[A-Za-z0-9][A-Za-z0-9_.-]*\.sql$")
LOCK_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True)
class MigrationFile:
    source: MigrationSource
    version: str  # the file name
    checksum: str
    sql: str = field(repr=False)


def _checksum(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _sql_dir(dialect: str) -> resources.abc.Traversable:
    return resources.files("etl_craft.engine").joinpath("sql", dialect)


def schema_sql(dialect: str) -> str:
    return _sql_dir(dialect).joinpath("schema.sql").read_text(encoding="utf-8")


def packaged_migrations(dialect: str) -> list[MigrationFile]:
    folder = _sql_dir(dialect).joinpath("migrations")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [
        MigrationFile(MigrationSource.ENGINE, f.name, _checksum(f.read_bytes()), f.read_text(encoding="utf-8"))
        for f in files
    ]


def project_migrations(directory: Path) -> list[MigrationFile]:
    """The project's NNNN_description.sql files in order; any other .sql file name is refused."""
    found = []
    for path in sorted(directory.iterdir()):
        if path.suffix != ".sql":
            continue
        if not PROJECT_FILE.match(path.name):
            raise MigrationError(
                f"project migration {path}",
                found=f"the file name {path.name!r}",
                expected="NNNN_description.sql (four digits, an underscore, a description)",
                remedy="rename it, for example 0001_create_sales_pipeline.sql",
            )
        data = path.read_bytes()
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise MigrationError(
                f"project migration {path}",
                found=not_utf8(data, exc),
                expected="SQL text in UTF-8",
                remedy="save the file as UTF-8 (nothing of it was applied)",
            ) from None
        found.append(MigrationFile(MigrationSource.PROJECT, path.name, _checksum(data), text))
    return found


@dataclass(frozen=True)
class Statement:
    """One statement of a script: its number in the file, the line it starts on, its text."""

    number: int
    line: int
    sql: str

    def describe(self) -> str:
        return f"statement {self.number} (line {self.line}: {one_line(self.sql, 60)})"


class StatementFailed(Exception):
    """A statement of a script failed: which one, and what the database said about it."""

    def __init__(self, statement: Statement, detail: str) -> None:
        super().__init__(f"{statement.describe()}: {detail}")
        self.statement = statement
        self.detail = detail


_LEADING = re.compile(r"(?:\s+|--[^\n]*|/\*.*?\*/)*", re.S)  # blanks and comments before a statement


def split_sqlite_script(sql: str) -> Iterator[Statement]:
    """Statements of a SQLite script, numbered, with the line each starts on (after the blanks and
    comments before it); triggers and quoted semicolons are kept whole."""
    buffer, start, number = "", 0, 0
    pieces = sql.split(";")
    for index, piece in enumerate(pieces):
        last = index == len(pieces) - 1
        buffer += piece if last else piece + ";"
        if not (last or sqlite3.complete_statement(buffer)):
            continue
        lead = _LEADING.match(buffer)
        offset = lead.end() if lead else 0
        if buffer[offset:].strip(";").strip():
            number += 1
            yield Statement(number, sql.count("\n", 0, start + offset) + 1, buffer[offset:].strip())
        start += len(buffer)
        buffer = ""


def execute_script(conn: sa.Connection, dialect: str, sql: str) -> None:
    """Run a whole SQL script inside the connection's open transaction.

    On SQLite, statement by statement: a failure raises StatementFailed naming the statement, its
    line and, for a CHECK or foreign key, the constraint and the values of the rows that break it.
    """
    if dialect == "sqlite":
        from etl_craft.engine import sqlite_constraints

        for statement in split_sqlite_script(sql):
            try:
                conn.exec_driver_sql(statement.sql)
            except sa.exc.DBAPIError as exc:
                explained = sqlite_constraints.explain(conn, statement.sql, exc.orig) if exc.orig else None
                raise StatementFailed(statement, explained or str(exc.orig or exc).strip()) from exc
    else:
        import psycopg

        # psycopg runs several statements in one call when no parameters are passed; its errors
        # are wrapped like SQLAlchemy's own so callers handle one exception family.
        try:
            conn.connection.driver_connection.cursor().execute(sql)  # type: ignore[union-attr]
        except psycopg.Error as exc:
            raise sa.exc.DBAPIError.instance(sql, None, exc, psycopg.Error) from exc


def existing_tables(conn: sa.Connection, dialect: str) -> list[str]:
    if dialect == "sqlite":
        query = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name"
    else:
        query = (
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() ORDER BY table_name"
        )
    return [row[0].upper() for row in conn.exec_driver_sql(query)]


def _applied(conn: sa.Connection) -> dict[tuple[str, str], str]:
    rows = conn.execute(
        sa.select(schema_migrations.c.source, schema_migrations.c.version, schema_migrations.c.checksum)
    )
    return {(r.source, r.version): r.checksum for r in rows}


def _record(conn: sa.Connection, migration: MigrationFile) -> None:
    conn.execute(
        schema_migrations.insert().values(
            source=migration.source.value, version=migration.version, checksum=migration.checksum
        )
    )


@dataclass(frozen=True)
class SchemaState:
    """Where the Engine DB stands against the packaged ENGINE migrations."""

    initialised: bool
    applied_engine: tuple[str, ...]
    pending_engine: tuple[str, ...]
    unknown_engine: tuple[str, ...]  # applied here, unknown to this etl-craft (a newer release)
    changed_engine: tuple[str, ...]

    @property
    def current(self) -> bool:
        return self.initialised and not (self.pending_engine or self.unknown_engine or self.changed_engine)


def schema_state(db: EngineDb) -> SchemaState:
    with db.read() as conn:
        if "SCHEMA_MIGRATIONS" not in existing_tables(conn, db.dialect):
            return SchemaState(False, (), tuple(m.version for m in packaged_migrations(db.dialect)), (), ())
        applied = {v: c for (s, v), c in _applied(conn).items() if s == MigrationSource.ENGINE.value}
    packaged = {m.version: m.checksum for m in packaged_migrations(db.dialect)}
    return SchemaState(
        True,
        tuple(sorted(v for v in applied if v in packaged)),
        tuple(sorted(v for v in packaged if v not in applied)),
        tuple(sorted(v for v in applied if v not in packaged)),
        tuple(sorted(v for v in applied if v in packaged and applied[v] != packaged[v])),
    )


def require_initialised(db: EngineDb, state: SchemaState | None = None) -> SchemaState:
    state = state or schema_state(db)
    if not state.initialised:
        raise EngineDbError(
            f"the Engine DB at {db.display_url}",
            found="no etl-craft tables",
            expected="an initialised Engine DB",
            remedy="create it with etl-craft init-db (or etl-craft setup)",
        )
    return state


def require_current(db: EngineDb) -> None:
    """Refuse to work on an Engine DB that is missing, behind, ahead of or different from this etl-craft."""
    state = require_initialised(db)
    if state.pending_engine:
        raise MigrationError(
            f"the Engine DB at {db.display_url}",
            found=f"{len(state.pending_engine)} ENGINE migration(s) not applied: {', '.join(state.pending_engine)}",
            expected="every migration this etl-craft ships",
            remedy="apply them with etl-craft migrate",
        )
    if state.unknown_engine:
        raise MigrationError(
            f"the Engine DB at {db.display_url}",
            found=f"ENGINE migration(s) this etl-craft does not know: {', '.join(state.unknown_engine)}",
            expected="an Engine DB no newer than this etl-craft",
            remedy="upgrade etl-craft to the release that created them",
        )
    if state.changed_engine:
        raise MigrationError(
            f"the Engine DB at {db.display_url}",
            found=f"ENGINE migration(s) applied with another checksum: {', '.join(state.changed_engine)}",
            expected="the packaged files unchanged since they were applied",
            remedy="reinstall this etl-craft release; packaged migrations must never be edited",
        )


@dataclass(frozen=True)
class InitResult:
    created: bool
    engine_migrations: tuple[str, ...]
    message: str


def init_db(db: EngineDb, *, force: bool = False) -> InitResult:
    """Create every table and record the packaged migrations, in one transaction under the migrate lock."""
    packaged = packaged_migrations(db.dialect)
    with locks.hold(db, locks.MIGRATE_LOCK, timeout=LOCK_TIMEOUT_SECONDS), db.write() as conn:
        tables = existing_tables(conn, db.dialect)
        if "SCHEMA_MIGRATIONS" in tables:
            applied = [v for (s, v) in _applied(conn) if s == MigrationSource.ENGINE.value]
            return InitResult(
                False,
                tuple(sorted(applied)),
                f"the Engine DB at {db.display_url} is already initialised; nothing changed",
            )
        if tables and not force:
            raise EngineDbError(
                f"the Engine DB at {db.display_url}",
                found=f"{len(tables)} table(s) that are not an etl-craft Engine DB: {', '.join(tables[:8])}",
                expected="an empty database or schema",
                remedy="point Engine at an empty schema, or pass --force to create the tables beside them",
            )
        execute_script(conn, db.dialect, schema_sql(db.dialect))
        for migration in packaged:
            _record(conn, migration)
    return InitResult(
        True,
        tuple(m.version for m in packaged),
        f"created the Engine DB at {db.display_url} ({len(packaged)} ENGINE migration(s) recorded)",
    )


@dataclass(frozen=True)
class MigrateResult:
    engine_applied: tuple[str, ...]
    project_applied: tuple[str, ...]
    project_directory: str | None


def _check_project_history(applied: dict[tuple[str, str], str], files: list[MigrationFile], directory: Path) -> None:
    on_disk = {m.version: m for m in files}
    for (source, version), checksum in sorted(applied.items()):
        if source != MigrationSource.PROJECT.value:
            continue
        migration = on_disk.get(version)
        if migration is None:
            raise MigrationError(
                f"applied project migration {version!r}",
                found=f"no such file in {directory}",
                expected="every applied migration kept in the migrations folder",
                remedy="restore the file; applied migrations are never removed (retire rows in a new migration)",
            )
        if migration.checksum != checksum:
            raise MigrationError(
                f"applied project migration {version!r} has changed since it was applied",
                found=f"SHA-256 {migration.checksum[:12]}… in {directory / version}",
                expected=f"{checksum[:12]}… as recorded",
                remedy="undo the edit and put the change in a new numbered migration",
            )


def migrate(
    db: EngineDb,
    project_directory: Path | None,
    announce: Callable[[MigrationFile], None] = lambda _m: None,
) -> MigrateResult:
    """Apply pending ENGINE migrations, then the project's pending files, each in its own transaction."""
    files = project_migrations(project_directory) if project_directory else []
    engine_done: list[str] = []
    project_done: list[str] = []
    with locks.hold(db, locks.MIGRATE_LOCK, timeout=LOCK_TIMEOUT_SECONDS):
        state = require_initialised(db)
        if state.unknown_engine or state.changed_engine:
            require_current(db)
        with db.read() as conn:
            applied = _applied(conn)
        if project_directory:
            _check_project_history(applied, files, project_directory)
        pending_engine = [m for m in packaged_migrations(db.dialect) if m.version in state.pending_engine]
        for migration in pending_engine:
            announce(migration)
            _apply(db, migration)
            engine_done.append(migration.version)
        for migration in files:
            if (MigrationSource.PROJECT.value, migration.version) in applied:
                continue
            announce(migration)
            _apply(db, migration)
            project_done.append(migration.version)
    return MigrateResult(tuple(engine_done), tuple(project_done), str(project_directory) if project_directory else None)


def _apply(db: EngineDb, migration: MigrationFile) -> None:
    marker = migration.version if migration.source is MigrationSource.PROJECT else f"engine:{migration.version}"
    try:
        with recording_migration(marker), db.write() as conn:
            execute_script(conn, db.dialect, migration.sql)
            _record(conn, migration)
    except (sa.exc.DBAPIError, StatementFailed) as exc:
        where, detail = (
            (f", {exc.statement.describe()},", exc.detail) if isinstance(exc, StatementFailed) else ("", str(exc.orig))
        )
        raise MigrationError(
            f"{migration.source.value.lower()} migration {migration.version!r}{where} failed and was rolled back",
            found="; ".join(line.strip() for line in detail.splitlines() if line.strip()),
            expected="every statement of the file to succeed",
            remedy="fix the file (it was not recorded as applied) and run etl-craft migrate again",
        ) from exc
