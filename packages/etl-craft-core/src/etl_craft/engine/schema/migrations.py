"""Creating and migrating the Engine DB: packaged ENGINE migrations, then the project's own.

Every applied file is recorded in SCHEMA_MIGRATIONS with its SHA-256; an applied file must never
change. The checksum is taken over the text with LF line endings, so a checkout's line endings (git's
autocrlf on Windows) are not a change; a record a CRLF checkout made before that rule still matches.
Each migration runs in its own transaction under the cross-process migrate lock.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import sqlalchemy as sa

from etl_craft.core.enums import MigrationSource
from etl_craft.core.errors import EngineDbError, MigrationError
from etl_craft.core.text import not_utf8
from etl_craft.engine import locks
from etl_craft.engine.database import EngineDb, recording_migration
from etl_craft.engine.schema.scripts import ScriptRefused, StatementFailed
from etl_craft.engine.schema.tables import schema_migrations

PROJECT_FILE = re.compile(r"^\d{4}_[A-Za-z0-9][A-Za-z0-9_.-]*\.sql$")
LOCK_TIMEOUT_SECONDS = 300.0


@dataclass(frozen=True)
class MigrationFile:
    source: MigrationSource
    version: str  # the file name
    checksum: str  # SHA-256 of the text with LF line endings: what is recorded
    sql: str = field(repr=False)
    crlf_checksum: str = field(default="", repr=False)  # the same text with CRLF line endings

    def matches(self, recorded: str) -> bool:
        """Whether a recorded checksum is this file's: its LF form (every record made since line endings
        are normalised, and every LF checkout's before), or its CRLF form (a record a Windows checkout
        made before)."""
        return recorded in (self.checksum, self.crlf_checksum)


def _migration_file(source: MigrationSource, version: str, data: bytes, sql: str) -> MigrationFile:
    lf = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return MigrationFile(
        source,
        version,
        hashlib.sha256(lf).hexdigest(),
        sql,
        hashlib.sha256(lf.replace(b"\n", b"\r\n")).hexdigest(),
    )


def _sql_dir(dialect: str) -> resources.abc.Traversable:
    return resources.files("etl_craft.engine.schema").joinpath("sql", dialect)


def schema_sql(dialect: str) -> str:
    return _sql_dir(dialect).joinpath("schema.sql").read_text(encoding="utf-8")


def guard_trigger_names(dialect: str) -> set[str]:
    """Every trigger the packaged schema creates: the guards that make etl-craft the only writer."""
    return {name.lower() for name in re.findall(r"^CREATE TRIGGER (\w+)", schema_sql(dialect), re.M)}


def packaged_migrations(dialect: str) -> list[MigrationFile]:
    folder = _sql_dir(dialect).joinpath("migrations")
    files = sorted((f for f in folder.iterdir() if f.name.endswith(".sql")), key=lambda f: f.name)
    return [
        _migration_file(MigrationSource.ENGINE, f.name, f.read_bytes(), f.read_text(encoding="utf-8")) for f in files
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
        found.append(_migration_file(MigrationSource.PROJECT, path.name, data, text))
    return found


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
        if "SCHEMA_MIGRATIONS" not in db.dialect.table_names(conn):
            return SchemaState(False, (), tuple(m.version for m in packaged_migrations(db.dialect.name)), (), ())
        applied = {v: c for (s, v), c in _applied(conn).items() if s == MigrationSource.ENGINE.value}
    packaged = {m.version: m for m in packaged_migrations(db.dialect.name)}
    return SchemaState(
        True,
        tuple(sorted(v for v in applied if v in packaged)),
        tuple(sorted(v for v in packaged if v not in applied)),
        tuple(sorted(v for v in applied if v not in packaged)),
        tuple(sorted(v for v in applied if v in packaged and not packaged[v].matches(applied[v]))),
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
    packaged = packaged_migrations(db.dialect.name)
    with locks.hold(db, locks.MIGRATE_LOCK, timeout=LOCK_TIMEOUT_SECONDS), db.write() as conn:
        tables = db.dialect.table_names(conn)
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
        db.dialect.execute_script(conn, schema_sql(db.dialect.name))
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
        if not migration.matches(checksum):
            raise MigrationError(
                f"applied project migration {version!r} has changed since it was applied",
                found=f"SHA-256 {migration.checksum[:12]}… in {directory / version}",
                expected=f"{checksum[:12]}… as recorded (line endings aside)",
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
        pending_project = [m for m in files if (MigrationSource.PROJECT.value, m.version) not in applied]
        if project_directory:
            _check_project_history(applied, files, project_directory)
            _check_project_statements(db, pending_project, project_directory)
        pending_engine = [m for m in packaged_migrations(db.dialect.name) if m.version in state.pending_engine]
        for migration in pending_engine:
            announce(migration)
            _apply(db, migration)
            engine_done.append(migration.version)
        for migration in pending_project:
            announce(migration)
            _apply(db, migration)
            project_done.append(migration.version)
    return MigrateResult(tuple(engine_done), tuple(project_done), str(project_directory) if project_directory else None)


def _check_project_statements(db: EngineDb, pending: list[MigrationFile], directory: Path) -> None:
    """Every statement of every pending file is read before the first one runs (project_sql.py)."""
    from etl_craft.engine.schema.project_sql import check_project_migration  # sqlglot: only when migrating

    for migration in pending:
        check_project_migration(migration.sql, db.dialect.sqlglot_dialect, str(directory / migration.version))


def _apply(db: EngineDb, migration: MigrationFile) -> None:
    """Run one migration and record it, in one transaction. A project migration's statements run as
    project SQL, which the database lets write metadata tables only (what _check_project_statements
    also checked, before anything ran)."""
    project = migration.source is MigrationSource.PROJECT
    marker = migration.version if project else f"engine:{migration.version}"
    try:
        with recording_migration(marker), db.dialect.project_transaction(db) if project else db.write() as conn:
            if project:
                db.dialect.execute_project_script(conn, migration.sql)
                db.dialect.record_project_migration(conn, migration.version, migration.checksum)
            else:
                db.dialect.execute_script(conn, migration.sql)
                _record(conn, migration)
    except (sa.exc.DBAPIError, StatementFailed, ScriptRefused) as exc:
        if isinstance(exc, StatementFailed):
            where, detail = f", {exc.statement.describe()},", exc.detail
        else:
            where, detail = "", str(exc.orig) if isinstance(exc, sa.exc.DBAPIError) else str(exc)
        raise MigrationError(
            f"{migration.source.value.lower()} migration {migration.version!r}{where} failed and was rolled back",
            found="; ".join(line.strip() for line in detail.splitlines() if line.strip()),
            expected="every statement of the file to succeed",
            remedy="fix the file (it was not recorded as applied) and run etl-craft migrate again",
        ) from exc
