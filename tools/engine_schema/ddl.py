"""Render TABLE_SPECS into each dialect's schema.sql: tables, constraints, indexes and guard triggers.

The rendered files are committed under etl_craft/engine/sql/<dialect>/ (tools/generate_engine_schema.py);
a test checks they match this renderer, so the packaged SQL and the Python description never drift.
"""

from __future__ import annotations

from collections.abc import Iterator

from etl_craft.core.enums import ENDED_ATTEMPT
from etl_craft.engine.schema.tables import (
    GUARD_APPEND_ONLY,
    GUARD_ATTEMPTS,
    METADATA_TABLES,
    PROJECT_SQL,
    STAMP_COLUMNS,
    TABLE_SPECS,
    Col,
    TableSpec,
)

_SQLITE_NOW = "(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')"
_HEADER = "-- etl-craft Engine DB schema ({dialect}). Rendered from etl_craft.engine.tables; do not edit.\n"


def sqlite_type(col: Col) -> str:
    base = col.type.split("(")[0]
    if base in ("BIGINT", "BIGSERIAL", "INT", "INTEGER", "BOOLEAN"):
        return "INTEGER"
    if base == "NUMERIC":
        return "NUMERIC"
    return "TEXT"


def _allowed_check(spec: TableSpec, col: Col, dialect: str) -> str | None:
    if not col.allowed:
        return None
    if col.type == "BOOLEAN":
        # PostgreSQL's boolean type is the check; SQLite stores 0 and 1.
        return None if dialect == "postgresql" else f"{col.name} IN (0, 1)"
    values = ", ".join(col.allowed) if col.type.startswith("INT") else ", ".join(f"'{v}'" for v in col.allowed)
    return f"{col.name} IN ({values})"


def _column_sql(spec: TableSpec, col: Col, dialect: str) -> str:
    if dialect == "postgresql":
        text = f"{col.name} {col.type}"
        if col.identity:
            text += " GENERATED ALWAYS AS IDENTITY"
        if not col.nullable:
            text += " NOT NULL"
        if col.default:
            text += f" DEFAULT {col.default.postgres}"
        return text
    text = f"{col.name} {sqlite_type(col)}"
    if not col.nullable:
        text += " NOT NULL"
    if col.identity or col.type == "BIGSERIAL":
        text += " PRIMARY KEY AUTOINCREMENT"
    if col.default:
        text += f" DEFAULT {col.default.sqlite}"
    return text


def _table_sql(spec: TableSpec, dialect: str) -> str:
    lines = [_column_sql(spec, col, dialect) for col in spec.columns]
    name = spec.name.lower()
    sqlite_rowid_pk = dialect == "sqlite" and any(
        (c.identity or c.type == "BIGSERIAL") for c in spec.columns if c.name in spec.primary_key
    )
    if spec.primary_key and not sqlite_rowid_pk:
        lines.append(f"CONSTRAINT pk_{name} PRIMARY KEY ({', '.join(spec.primary_key)})")
    for col in spec.columns:
        check = _allowed_check(spec, col, dialect)
        if check:
            lines.append(f"CONSTRAINT ck_{name}_{col.name.lower()} CHECK ({check})")
    for chk in spec.checks:
        lines.append(f"CONSTRAINT {chk.name} CHECK ({chk.postgres if dialect == 'postgresql' else chk.sqlite})")
    for col in spec.columns:
        if col.references:
            target, _, target_col = col.references.partition(".")
            lines.append(
                f"CONSTRAINT fk_{name}_{col.name.lower()} FOREIGN KEY ({col.name}) REFERENCES {target} ({target_col})"
            )
    body = ",\n    ".join(lines)
    return f"CREATE TABLE {spec.name} (\n    {body}\n);\n"


def _indexes_sql(spec: TableSpec, dialect: str) -> Iterator[str]:
    for uq in spec.unique:
        where = f" WHERE {uq.where}" if uq.where else ""
        yield f"CREATE UNIQUE INDEX {uq.name} ON {spec.name} ({', '.join(uq.columns)}){where};\n"
    expr = spec.extra.get("unique_expression")
    if expr:
        name, columns = expr
        yield f"CREATE UNIQUE INDEX {name} ON {spec.name} ({columns});\n"
    for ix in spec.indexes:
        where = f" WHERE {ix.where}" if ix.where else ""
        yield f"CREATE INDEX {ix.name} ON {spec.name} ({', '.join(ix.columns)}){where};\n"


# --- PostgreSQL triggers -------------------------------------------------------------------------

_PG_FUNCTIONS = """\
CREATE FUNCTION etl_craft_guard() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    -- Only connections that carry an etl-craft actor may write; see docs/engine-db.md.
    IF coalesce(current_setting('etl_craft.actor', true), '') = '' THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('%%s is written only by etl-craft; %%s', upper(TG_TABLE_NAME), TG_ARGV[0]);
    END IF;
    -- A project migration's own statements (depth 1) write metadata only; the rows the metadata
    -- triggers record on their behalf (depth 2) are etl-craft's.
    IF current_setting('etl_craft.purpose', true) = '%(project_sql)s' AND pg_trigger_depth() = 1
            AND upper(TG_TABLE_NAME) NOT IN (%(metadata)s) THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('%%s is written only by etl-craft: a project migration writes only the metadata'
                             ' tables (CFG_PIPELINES, CFG_TASKS, ...)', upper(TG_TABLE_NAME));
    END IF;
    RETURN NULL;
END
$fn$;

CREATE FUNCTION etl_craft_ddl_guard() RETURNS event_trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF current_setting('etl_craft.purpose', true) = '%(project_sql)s' THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('%%s refused: a project migration writes rows of the metadata tables only',
                             tg_tag);
    END IF;
END
$fn$;

CREATE FUNCTION etl_craft_append_only() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF current_setting('etl_craft.purpose', true) IS DISTINCT FROM 'retention' THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('%%s is append-only: its rows are never changed or removed (%%s refused)',
                             upper(TG_TABLE_NAME), TG_OP);
    END IF;
    IF TG_LEVEL = 'STATEMENT' THEN
        RETURN NULL;
    ELSIF TG_OP = 'DELETE' THEN
        RETURN OLD;
    END IF;
    RETURN NEW;
END
$fn$;

CREATE FUNCTION etl_craft_final_attempt() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF OLD.status IN (%(terminal)s) THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('AUD_TASK_ATTEMPTS row %%s is %%s, which is final: an ended attempt never changes',
                             OLD.attempt_id, OLD.status);
    END IF;
    RETURN NEW;
END
$fn$;

CREATE FUNCTION etl_craft_stamp() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF TG_OP = 'INSERT' THEN
        NEW.created_by := current_setting('etl_craft.actor', true);
        NEW.create_date := now();
        NEW.updated_by := NULL;
        NEW.updated_date := NULL;
    ELSE
        NEW.created_by := OLD.created_by;
        NEW.create_date := OLD.create_date;
        IF (to_jsonb(NEW) - %(stamps)s) IS DISTINCT FROM (to_jsonb(OLD) - %(stamps)s) THEN
            NEW.updated_by := current_setting('etl_craft.actor', true);
            NEW.updated_date := now();
        ELSE
            NEW.updated_by := OLD.updated_by;
            NEW.updated_date := OLD.updated_date;
        END IF;
    END IF;
    RETURN NEW;
END
$fn$;

CREATE FUNCTION etl_craft_upper_keys(doc jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $fn$
    SELECT coalesce(jsonb_object_agg(upper(key), value), '{}'::jsonb) FROM jsonb_each(doc)
$fn$;

CREATE FUNCTION etl_craft_record_change() RETURNS trigger LANGUAGE plpgsql AS $fn$
DECLARE
    before_doc jsonb;
    after_doc jsonb;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        before_doc := etl_craft_upper_keys(to_jsonb(OLD));
    END IF;
    IF TG_OP <> 'DELETE' THEN
        after_doc := etl_craft_upper_keys(to_jsonb(NEW));
    END IF;
    IF TG_OP = 'UPDATE' AND (before_doc - %(upper_stamps)s) = (after_doc - %(upper_stamps)s) THEN
        RETURN NULL;
    END IF;
    EXECUTE format('INSERT INTO %%I.aud_metadata_changes (actor, actor_kind, table_name, row_key, operation,'
                   ' before_json, after_json, migration) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)', TG_TABLE_SCHEMA)
    USING current_setting('etl_craft.actor', true),
          coalesce(nullif(current_setting('etl_craft.actor_kind', true), ''), 'SYSTEM'),
          upper(TG_TABLE_NAME),
          coalesce(after_doc, before_doc) ->> TG_ARGV[0],
          TG_OP,
          before_doc,
          after_doc,
          nullif(current_setting('etl_craft.migration', true), '');
    RETURN NULL;
END
$fn$;
"""


# An event trigger refuses DDL from a project migration. Creating one takes a superuser, so it is
# created only when the migrating login is one; doctor says when it is missing (and how to add it).
PG_DDL_GUARD = """
DO $do$
BEGIN
    IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
        EXECUTE format('CREATE EVENT TRIGGER %I ON ddl_command_start EXECUTE FUNCTION %I.etl_craft_ddl_guard()',
                       'etl_craft_ddl_guard_' || current_schema(), current_schema());
    END IF;
END
$do$;
"""


# The history a project login can't write itself (ENGINE migration 0012, docs/guides/security.md):
# the metadata triggers record changes with their owner's rights, and a project file is recorded
# through a function (the login gets EXECUTE on it, no INSERT on either table). The search_path is
# fixed to pg_catalog, the Engine DB's schema (current_schema(), whatever it is called), pg_temp last.
PG_DEFINERS = """
CREATE FUNCTION etl_craft_record_project_migration(migration_version text, migration_checksum text)
RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $fn$
BEGIN
    -- One file per transaction: a row the file's own SQL recorded makes the runner's call fail.
    IF EXISTS (SELECT 1 FROM schema_migrations WHERE source = 'PROJECT' AND applied_at = now()) THEN
        RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
            MESSAGE = format('SCHEMA_MIGRATIONS already records a project migration in this transaction;'
                             ' %s is not recorded (a project migration records only its own file)',
                             migration_version);
    END IF;
    INSERT INTO schema_migrations (source, version, checksum, applied_at)
    VALUES ('PROJECT', migration_version, migration_checksum, now());
END
$fn$;
REVOKE ALL ON FUNCTION etl_craft_record_project_migration(text, text) FROM PUBLIC;

DO $do$
BEGIN
    EXECUTE format('ALTER FUNCTION %I.etl_craft_record_change() SECURITY DEFINER'
                   ' SET search_path = pg_catalog, %I, pg_temp', current_schema(), current_schema());
    EXECUTE format('ALTER FUNCTION %I.etl_craft_record_project_migration(text, text)'
                   ' SET search_path = pg_catalog, %I, pg_temp', current_schema(), current_schema());
END
$do$;
"""


def _pg_array(values: tuple[str, ...]) -> str:
    return "ARRAY[" + ", ".join(f"'{v}'" for v in values) + "]"


def _pg_triggers(spec: TableSpec) -> Iterator[str]:
    name, table = spec.name.lower(), spec.name
    # Statement level: it fires even when no row matches, and once per statement, not per row.
    yield (
        f"CREATE TRIGGER tr_{name}_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON {table}"
        f" FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_guard('{spec.remedy}');\n"
    )
    if spec.guard in (GUARD_APPEND_ONLY, GUARD_ATTEMPTS):
        events = "UPDATE OR DELETE" if spec.guard == GUARD_APPEND_ONLY else "DELETE"
        yield (
            f"CREATE TRIGGER tr_{name}_immutable BEFORE {events} ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION etl_craft_append_only();\n"
        )
        yield (
            f"CREATE TRIGGER tr_{name}_immutable_truncate BEFORE TRUNCATE ON {table}"
            " FOR EACH STATEMENT EXECUTE FUNCTION etl_craft_append_only();\n"
        )
    if spec.guard == GUARD_ATTEMPTS:
        yield (
            f"CREATE TRIGGER tr_{name}_immutable_final BEFORE UPDATE ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION etl_craft_final_attempt();\n"
        )
    if spec.tracks_metadata:
        yield (
            f"CREATE TRIGGER tr_{name}_stamp BEFORE INSERT OR UPDATE ON {table}"
            " FOR EACH ROW EXECUTE FUNCTION etl_craft_stamp();\n"
        )
        yield (
            f"CREATE TRIGGER tr_{name}_record_change AFTER INSERT OR UPDATE OR DELETE ON {table}"
            f" FOR EACH ROW EXECUTE FUNCTION etl_craft_record_change('{spec.primary_key[0]}');\n"
        )


# --- SQLite triggers -----------------------------------------------------------------------------


def _sqlite_json(alias: str, spec: TableSpec) -> str:
    parts = []
    for col in spec.columns:
        ref = f"{alias}.{col.name}"
        if col.type == "JSONB":
            ref = f"CASE WHEN json_valid({ref}) THEN json({ref}) ELSE {ref} END"
        parts.append(f"'{col.name}', {ref}")
    return "json_object(" + ", ".join(parts) + ")"


def _sqlite_triggers(spec: TableSpec) -> Iterator[str]:
    name, table = spec.name.lower(), spec.name
    refusal = f"{table} is written only by etl-craft; {spec.remedy}"
    project_refusal = f"{table} is written only by etl-craft: a project migration writes only the metadata tables"
    # A project migration's statements write metadata only. Its metadata changes are recorded by
    # triggers, which SQLite can't tell from a direct write: the authorizer etl-craft sets while
    # project SQL runs refuses those (dialects/sqlite.py).
    project = (
        f"    SELECT RAISE(ABORT, '{project_refusal}') WHERE etl_craft_purpose() IS '{PROJECT_SQL}';\n"
        if table not in (*METADATA_TABLES, "AUD_METADATA_CHANGES")
        else ""
    )
    for event in ("INSERT", "UPDATE", "DELETE"):
        # A connection that is not etl-craft's has no etl_craft_actor() function, so the trigger
        # cannot even run: SQLite refuses with "no such function: etl_craft_actor".
        yield (
            f"CREATE TRIGGER tr_{name}_guard_{event.lower()} BEFORE {event} ON {table}\n"
            f"BEGIN\n    SELECT RAISE(ABORT, '{refusal}') WHERE etl_craft_actor() IS NULL;\n{project}END;\n"
        )
    append_only = f"{table} is append-only: its rows are never changed or removed"
    events = {GUARD_APPEND_ONLY: ("UPDATE", "DELETE"), GUARD_ATTEMPTS: ("DELETE",)}.get(spec.guard, ())
    for event in events:
        yield (
            f"CREATE TRIGGER tr_{name}_immutable_{event.lower()} BEFORE {event} ON {table}\n"
            f"BEGIN\n    SELECT RAISE(ABORT, '{append_only} ({event} refused)')"
            " WHERE etl_craft_actor() IS NOT NULL AND etl_craft_purpose() IS NOT 'retention';\nEND;\n"
        )
    if spec.guard == GUARD_ATTEMPTS:
        terminal = ", ".join(f"'{s}'" for s in ENDED_ATTEMPT)
        yield (
            f"CREATE TRIGGER tr_{name}_immutable_final BEFORE UPDATE ON {table}\n"
            f"WHEN OLD.STATUS IN ({terminal})\n"
            "BEGIN\n    SELECT RAISE(ABORT, 'AUD_TASK_ATTEMPTS row is final once its attempt has ended:"
            " an ended attempt never changes');\nEND;\n"
        )
    if spec.tracks_metadata:
        yield from _sqlite_metadata_triggers(spec)


def _sqlite_change(spec: TableSpec, key: str, op: str, before: str, after: str) -> str:
    return (
        "INSERT INTO AUD_METADATA_CHANGES (ACTOR, ACTOR_KIND, TABLE_NAME, ROW_KEY, OPERATION, BEFORE_JSON,"
        " AFTER_JSON, MIGRATION)\n"
        f"    SELECT etl_craft_actor(), etl_craft_actor_kind(), '{spec.name}', CAST({key} AS TEXT), '{op}',"
        f" {before}, {after}, etl_craft_migration()"
    )


def _sqlite_metadata_triggers(spec: TableSpec) -> Iterator[str]:
    name, table, pk = spec.name.lower(), spec.name, spec.primary_key[0]
    after_row = _sqlite_json("r", spec)
    yield (
        f"CREATE TRIGGER tr_{name}_stamp_insert AFTER INSERT ON {table}\n"
        "BEGIN\n"
        f"    UPDATE {table} SET CREATED_BY = etl_craft_actor(), CREATE_DATE = {_SQLITE_NOW},"
        f" UPDATED_BY = NULL, UPDATED_DATE = NULL WHERE {pk} = NEW.{pk};\n    "
        + _sqlite_change(spec, f"NEW.{pk}", "INSERT", "NULL", after_row)
        + f" FROM {table} r WHERE r.{pk} = NEW.{pk};\nEND;\n"
    )
    changed = " OR ".join(f"OLD.{c.name} IS NOT NEW.{c.name}" for c in spec.columns if c.name not in STAMP_COLUMNS)
    yield (
        f"CREATE TRIGGER tr_{name}_stamp_update AFTER UPDATE ON {table}\n"
        f"WHEN {changed}\n"
        "BEGIN\n"
        f"    UPDATE {table} SET CREATED_BY = OLD.CREATED_BY, CREATE_DATE = OLD.CREATE_DATE,"
        f" UPDATED_BY = etl_craft_actor(), UPDATED_DATE = {_SQLITE_NOW} WHERE {pk} = NEW.{pk};\n    "
        + _sqlite_change(spec, f"NEW.{pk}", "UPDATE", _sqlite_json("OLD", spec), after_row)
        + f" FROM {table} r WHERE r.{pk} = NEW.{pk};\nEND;\n"
    )
    yield (
        f"CREATE TRIGGER tr_{name}_record_delete AFTER DELETE ON {table}\n"
        "BEGIN\n    " + _sqlite_change(spec, f"OLD.{pk}", "DELETE", _sqlite_json("OLD", spec), "NULL") + ";\nEND;\n"
    )


def render_schema(dialect: str) -> str:
    """The complete schema.sql of `dialect` ("postgresql" or "sqlite")."""
    parts = [_HEADER.format(dialect="PostgreSQL" if dialect == "postgresql" else "SQLite")]
    for spec in TABLE_SPECS:
        parts.append("\n" + _table_sql(spec, dialect))
        parts.extend(_indexes_sql(spec, dialect))
    parts.append("\n")
    if dialect == "postgresql":
        terminal = ", ".join(f"'{s}'" for s in ENDED_ATTEMPT)
        parts.append(
            _PG_FUNCTIONS
            % {
                "terminal": terminal,
                "stamps": _pg_array(tuple(c.lower() for c in STAMP_COLUMNS)),
                "upper_stamps": _pg_array(STAMP_COLUMNS),
                "project_sql": PROJECT_SQL,
                "metadata": ", ".join(f"'{name}'" for name in METADATA_TABLES),
            }
        )
        parts.append(PG_DDL_GUARD)
        parts.append(PG_DEFINERS)
        for spec in TABLE_SPECS:
            parts.append("\n")
            parts.extend(_pg_triggers(spec))
    else:
        for spec in TABLE_SPECS:
            parts.append("\n")
            parts.extend(_sqlite_triggers(spec))
    return "".join(parts)
