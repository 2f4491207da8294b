"""The catalog `init-db` creates matches the published Engine DB schema on both dialects.

The expected schema is tests/core/engine/engine_db_schema.json, a machine-readable copy of
docs/reference/engine-db-schema.md; primary keys, foreign keys and the extra indexes etl-craft adds
are listed here. Nothing is taken from etl_craft.engine.tables.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tools.engine_schema.ddl import render_schema

from etl_craft.engine.schema import migrations
from tests.fixtures.catalog import Table, postgres_functions, read_catalog

SPEC = json.loads((Path(__file__).parent / "engine_db_schema.json").read_text())
# Columns the plan adds to documented tables, after the documented ones, in this order.
# AUD_TASK_ATTEMPTS: the queue and its pools (S5.C; ENGINE migration 0006).
EXTRA_COLUMNS = {
    "AUD_TASK_ATTEMPTS": [
        {"name": "POOL", "type": "VARCHAR", "nullable": True, "default": None, "allowed": None},
        {"name": "SLOT_KIND", "type": "VARCHAR", "nullable": True, "default": None, "allowed": None},
        {"name": "PRIORITY", "type": "INT", "nullable": False, "default": "0", "allowed": None},
    ],
    # CFG_PIPELINES: the queue's order and each run's parallelism (S5.E; ENGINE migration 0010).
    "CFG_PIPELINES": [
        {"name": "PRIORITY", "type": "INT", "nullable": False, "default": "0", "allowed": None},
        {"name": "MAX_PARALLEL_TASKS", "type": "INT", "nullable": True, "default": None, "allowed": None},
    ],
}
# Every AUD_ table: UPDATED_AT last, the clone's watermark (S6.E; ENGINE migration 0009).
UPDATED_AT = {"name": "UPDATED_AT", "type": "TIMESTAMPTZ", "nullable": True, "default": None, "allowed": None}
# Columns added after UPDATED_AT: the cancel request and its acknowledgement (S5.D; ENGINE migration 0011).
AFTER_UPDATED_AT = {
    "AUD_TASK_ATTEMPTS": [
        {"name": "CANCEL_REQUESTED_AT", "type": "TIMESTAMPTZ", "nullable": True, "default": None, "allowed": None},
        {"name": "CANCEL_ACKNOWLEDGED_AT", "type": "TIMESTAMPTZ", "nullable": True, "default": None, "allowed": None},
    ],
}
for _table in SPEC:
    _table["columns"] = _table["columns"] + EXTRA_COLUMNS.get(_table["name"], [])
    if _table["name"].startswith("AUD_"):
        _table["columns"].append(UPDATED_AT)
    _table["columns"] += AFTER_UPDATED_AT.get(_table["name"], [])

PG_TYPES = {
    "BIGINT": "bigint",
    "BIGSERIAL": "bigint",
    "VARCHAR": "character varying",
    "NUMERIC": "numeric",
    "JSONB": "jsonb",
    "TIMESTAMPTZ": "timestamp with time zone",
    "TIMESTAMP": "timestamp without time zone",
    "INT": "integer",
    "INTEGER": "integer",
    "DATE": "date",
    "BOOLEAN": "boolean",
}
# SQLite's types for the documented ones (docs/reference/engine-db-schema.md, "On SQLite").
SQLITE_TYPES = {
    "BIGINT": "INTEGER",
    "BIGSERIAL": "INTEGER",
    "INT": "INTEGER",
    "INTEGER": "INTEGER",
    "BOOLEAN": "INTEGER",
    "NUMERIC": "NUMERIC",
}
SQLITE_DEFAULTS = {
    "now()": "(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')",
    "current_setting('etl_craft.actor', true)": "(etl_craft_actor())",
    "current_setting('etl_craft.actor_kind', true)": "(etl_craft_actor_kind())",
    "TRUE": "1",
}

# Tables etl-craft adds beyond the reference, created after the documented ones, in this order.
# AUD_ALERT_DELIVERIES: one row per alert channel delivery (S7.D); CFG_USERS: people of the API (S7.B);
# AUD_WORKERS: the workers of the PostgreSQL queue (S5.C); AUD_UI_SESSIONS: the web UI's sign-in sessions (S7.B);
# CFG_POOLS: the named pools and their slots (S5.E).
EXTRA_TABLES = ("AUD_ALERT_DELIVERIES", "CFG_USERS", "AUD_WORKERS", "AUD_UI_SESSIONS", "CFG_POOLS")

PRIMARY_KEYS = {
    "CFG_PIPELINES": ("PIPELINE_ID",),
    "CFG_PIPELINE_DEPENDENCY": ("PIPELINE_DEPENDENCY_ID",),
    "CFG_TASKS": ("TASK_ID",),
    "CFG_TASK_DEPENDENCY": ("TASK_DEPENDENCY_ID",),
    "CFG_TASK_PARAMETERS": ("TASK_PARAMETER_ID",),
    "CFG_BUSINESS_RULES": ("BUSINESS_RULE_ID",),
    "AUD_PIPELINES_RUN_LOG": ("PIPELINE_RUN_ID",),
    "AUD_TASK_RUN_LOG": ("TASK_RUN_ID",),
    "AUD_RUN_INTERVENTIONS": ("INTERVENTION_ID",),
    "AUD_PIPELINE_PAUSES": ("PIPELINE_PAUSE_ID",),
    "AUD_BUSINESS_RULES_RUN_LOG": ("BUSINESS_RULE_RUN_ID",),
    "AUD_BUSINESS_RULES_RESULTS": ("BUSINESS_RULE_RESULT_ID",),
    "AUD_TASK_OFFSET_TRACKER": ("TASK_ID",),
    "AUD_COLUMN_LINEAGE": ("COLUMN_LINEAGE_ID",),
    "AUD_DOCS_PUBLICATION": ("DOCS_PUBLICATION_ID",),
    "AUD_TASK_DOCUMENTATION": ("TASK_DOCUMENTATION_ID",),
    "AUD_DEPENDENCY_CONSUMPTION": ("CONSUMPTION_ID",),
    "SCHEMA_MIGRATIONS": ("SOURCE", "VERSION"),
    "AUD_TASK_ATTEMPTS": ("ATTEMPT_ID",),
    "AUD_GATE_DECISIONS": ("DECISION_ID",),
    "AUD_ACTIONS": ("ACTION_ID",),
    "AUD_METADATA_CHANGES": ("CHANGE_ID",),
    "AUD_TARGET_HASH_VERSION": ("TARGET_OBJECT",),
    "AUD_OVERSEERS": ("OVERSEER_ID",),
    "AUD_GATE_WAITS": (),
    "CFG_API_TOKENS": ("TOKEN_ID",),
    "AUD_ALERT_DELIVERIES": ("ALERT_DELIVERY_ID",),
    "CFG_USERS": ("USER_ID",),
    "AUD_WORKERS": ("WORKER_ID",),
    "AUD_UI_SESSIONS": ("SESSION_ID",),
    "CFG_POOLS": ("POOL_ID",),
}
# Keys that are not generated: the tracker is keyed by its task, migrations by file.
NATURAL_KEYS = {"AUD_TASK_OFFSET_TRACKER", "SCHEMA_MIGRATIONS", "AUD_TARGET_HASH_VERSION", "AUD_GATE_WAITS"}

_P, _T, _R, _TR = "CFG_PIPELINES", "CFG_TASKS", "AUD_PIPELINES_RUN_LOG", "AUD_TASK_RUN_LOG"
FOREIGN_KEYS = {
    "CFG_PIPELINE_DEPENDENCY": {
        ("PIPELINE_ID", _P, "PIPELINE_ID"),
        ("DEPENDS_ON_PIPELINE_ID", _P, "PIPELINE_ID"),
    },
    "CFG_TASKS": {("PIPELINE_ID", _P, "PIPELINE_ID")},
    "CFG_TASK_DEPENDENCY": {
        ("PIPELINE_ID", _P, "PIPELINE_ID"),
        ("TASK_ID", _T, "TASK_ID"),
        ("DEPENDS_ON_PIPELINE_ID", _P, "PIPELINE_ID"),
        ("DEPENDS_ON_TASK_ID", _T, "TASK_ID"),
    },
    "CFG_TASK_PARAMETERS": {("TASK_ID", _T, "TASK_ID")},
    "CFG_BUSINESS_RULES": {("PIPELINE_ID", _P, "PIPELINE_ID"), ("TASK_ID", _T, "TASK_ID")},
    "AUD_PIPELINES_RUN_LOG": {("PIPELINE_ID", _P, "PIPELINE_ID")},
    "AUD_TASK_RUN_LOG": {("TASK_ID", _T, "TASK_ID"), ("PIPELINE_RUN_ID", _R, "PIPELINE_RUN_ID")},
    "AUD_RUN_INTERVENTIONS": {
        ("PIPELINE_ID", _P, "PIPELINE_ID"),
        ("PIPELINE_RUN_ID", _R, "PIPELINE_RUN_ID"),
        ("TASK_ID", _T, "TASK_ID"),
    },
    "AUD_PIPELINE_PAUSES": {("PIPELINE_ID", _P, "PIPELINE_ID")},
    "AUD_BUSINESS_RULES_RUN_LOG": {
        ("BUSINESS_RULE_ID", "CFG_BUSINESS_RULES", "BUSINESS_RULE_ID"),
        ("TASK_RUN_ID", _TR, "TASK_RUN_ID"),
    },
    "AUD_BUSINESS_RULES_RESULTS": {
        ("BUSINESS_RULE_RUN_ID", "AUD_BUSINESS_RULES_RUN_LOG", "BUSINESS_RULE_RUN_ID"),
        ("BUSINESS_RULE_ID", "CFG_BUSINESS_RULES", "BUSINESS_RULE_ID"),
    },
    "AUD_TASK_OFFSET_TRACKER": {("TASK_ID", _T, "TASK_ID")},
    "AUD_COLUMN_LINEAGE": {("TASK_ID", _T, "TASK_ID")},
    "AUD_TASK_DOCUMENTATION": {("TASK_ID", _T, "TASK_ID")},
    "AUD_DEPENDENCY_CONSUMPTION": {
        ("PIPELINE_DEPENDENCY_ID", "CFG_PIPELINE_DEPENDENCY", "PIPELINE_DEPENDENCY_ID"),
        ("TASK_DEPENDENCY_ID", "CFG_TASK_DEPENDENCY", "TASK_DEPENDENCY_ID"),
        ("PIPELINE_ID", _P, "PIPELINE_ID"),
        ("PIPELINE_RUN_ID", _R, "PIPELINE_RUN_ID"),
        ("TASK_ID", _T, "TASK_ID"),
        ("DEPENDS_ON_PIPELINE_ID", _P, "PIPELINE_ID"),
        ("CONSUMED_PIPELINE_RUN_ID", _R, "PIPELINE_RUN_ID"),
        ("CONSUMED_TASK_RUN_ID", _TR, "TASK_RUN_ID"),
    },
    "AUD_TASK_ATTEMPTS": {("TASK_RUN_ID", _TR, "TASK_RUN_ID")},
    "AUD_GATE_DECISIONS": {
        ("PIPELINE_RUN_ID", _R, "PIPELINE_RUN_ID"),
        ("ATTEMPT_ID", "AUD_TASK_ATTEMPTS", "ATTEMPT_ID"),
        ("PIPELINE_DEPENDENCY_ID", "CFG_PIPELINE_DEPENDENCY", "PIPELINE_DEPENDENCY_ID"),
        ("TASK_DEPENDENCY_ID", "CFG_TASK_DEPENDENCY", "TASK_DEPENDENCY_ID"),
        ("SELECTED_PIPELINE_RUN_ID", _R, "PIPELINE_RUN_ID"),
        ("SELECTED_TASK_RUN_ID", _TR, "TASK_RUN_ID"),
    },
    "AUD_ACTIONS": {
        ("PIPELINE_ID", _P, "PIPELINE_ID"),
        ("PIPELINE_RUN_ID", _R, "PIPELINE_RUN_ID"),
        ("TASK_ID", _T, "TASK_ID"),
    },
    "AUD_GATE_WAITS": {("PIPELINE_RUN_ID", _R, "PIPELINE_RUN_ID"), ("TASK_ID", _T, "TASK_ID")},
    "AUD_ALERT_DELIVERIES": {
        ("PIPELINE_RUN_ID", _R, "PIPELINE_RUN_ID"),
        ("ATTEMPT_ID", "AUD_TASK_ATTEMPTS", "ATTEMPT_ID"),
    },
    "AUD_UI_SESSIONS": {("USER_ID", "CFG_USERS", "USER_ID")},
}

# Unique rules etl-craft adds beyond the reference, each with the reason it exists.
EXTRA_UNIQUE = {
    ("AUD_BUSINESS_RULES_RESULTS", ("BUSINESS_RULE_ID", "BUSINESS_RULE_KEY")),  # one standing flag per key
    ("AUD_TASK_DOCUMENTATION", ("TASK_ID", "VERSION")),  # versions are numbered per task
    ("AUD_DOCS_PUBLICATION", ("PUBLISHED_URL",)),  # one row per URL
    ("AUD_GATE_WAITS", ("PIPELINE_RUN_ID", "COALESCE")),  # one wait per run and task (NULL task = the run)
    ("CFG_API_TOKENS", ("TOKEN_SHA256",)),  # a token identifies one credential
    ("AUD_UI_SESSIONS", ("SESSION_SHA256",)),  # a cookie identifies one session
}


@pytest.fixture
def catalog(engine_db) -> dict[str, Table]:
    with engine_db.read() as conn:
        return {t.name: t for t in read_catalog(conn, engine_db.dialect.name)}


def _norm_default(text: str | None) -> str | None:
    if text is None:
        return None
    text = re.sub(r"::[a-z ]+(\(\d+\))?(\[\])?", "", text)
    return re.sub(r"[()\s]", "", text).lower()


def test_every_documented_table_exists_in_the_documented_order(catalog: dict[str, Table]) -> None:
    assert list(catalog) == [t["name"] for t in SPEC] + list(EXTRA_TABLES)


def test_columns_match_the_reference_in_order_type_nullability_and_default(
    catalog: dict[str, Table], dialect: str
) -> None:
    problems = []
    for spec in SPEC:
        table = catalog[spec["name"]]
        assert [c.name for c in table.columns] == [c["name"] for c in spec["columns"]], spec["name"]
        for expected, actual in zip(spec["columns"], table.columns, strict=True):
            where = f"{spec['name']}.{expected['name']}"
            base, _, size = expected["type"].partition("(")
            if dialect == "postgresql":
                want_type = PG_TYPES[base] + (f"({size}" if size else "")
            else:
                want_type = SQLITE_TYPES.get(base, "TEXT")
            if actual.type != want_type:
                problems.append(f"{where}: type {actual.type}, expected {want_type}")
            if actual.nullable != expected["nullable"]:
                problems.append(f"{where}: nullable {actual.nullable}, expected {expected['nullable']}")
            want_default = expected["default"]
            if dialect == "sqlite" and want_default is not None:
                want_default = SQLITE_DEFAULTS.get(want_default, want_default)
            got = actual.default
            if expected["type"] == "BIGSERIAL" and dialect == "postgresql":
                ok = got is not None and got.startswith("nextval(")
            elif want_default and "gen_random_uuid" in want_default and dialect == "sqlite":
                ok = got is not None and got.lstrip("(").startswith("'manual:' ||") and "randomblob" in got
            else:
                ok = _norm_default(got) == _norm_default(want_default)
            if not ok:
                problems.append(f"{where}: default {got!r}, expected {want_default!r}")
    assert problems == []


def test_every_allowed_value_list_is_a_check_constraint(catalog: dict[str, Table], dialect: str) -> None:
    missing = []
    for spec in SPEC:
        table = catalog[spec["name"]]
        for column in spec["columns"]:
            allowed = column["allowed"]
            if not allowed:
                continue
            if column["type"] == "BOOLEAN":
                if dialect == "postgresql":
                    assert table.columns[[c.name for c in table.columns].index(column["name"])].type == "boolean"
                    continue
                allowed = ["0", "1"]
            name = column["name"]
            found = False
            for definition in table.checks.values():
                if not re.search(rf"\b{name}\b", definition, re.I):
                    continue
                literals = set(re.findall(r"'([^']*)'", definition))
                if column["type"].startswith("INT") or column["type"] == "BOOLEAN":
                    literals = set(re.findall(r"(?<![\w.])(\d+)(?![\w.])", definition))
                if literals == set(allowed):
                    found = True
            if not found:
                missing.append(f"{spec['name']}.{name} IN {allowed}")
    assert missing == []


def _predicate_shape(text: str | None, columns: set[str]) -> tuple[frozenset[str], frozenset[str], bool] | None:
    if text is None:
        return None
    words = {w.upper() for w in re.findall(r"[A-Za-z_]+", text) if w.upper() in columns}
    literals = set(re.findall(r"'([^']*)'", text))
    return frozenset(words), frozenset(literals), "IS NULL" in text.upper()


def test_unique_rules_are_unique_indexes_with_their_predicates(catalog: dict[str, Table]) -> None:
    for spec in SPEC:
        table = catalog[spec["name"]]
        names = {c.name for c in table.columns}
        actual = {(cols, _predicate_shape(where, names)) for cols, where in table.unique_indexes.values()}
        for rule in spec["unique"]:
            wanted = (tuple(rule["columns"]), _predicate_shape(rule["where"], names))
            assert wanted in actual, f"{spec['name']}: no unique index {wanted}; found {actual}"
        documented = {tuple(rule["columns"]) for rule in spec["unique"]}
        extras = {
            (spec["name"], tuple(c.split("(")[0] for c in cols))
            for cols, _w in table.unique_indexes.values()
            if cols not in documented
        }
        assert extras <= EXTRA_UNIQUE, f"undeclared unique index on {spec['name']}: {extras - EXTRA_UNIQUE}"


def test_primary_keys_and_generated_ids(catalog: dict[str, Table]) -> None:
    for name, key in PRIMARY_KEYS.items():
        table = catalog[name]
        assert table.primary_key == key, name
        if key and name not in NATURAL_KEYS:
            column = next(c for c in table.columns if c.name == key[0])
            generated = column.identity or (column.default or "").startswith("nextval(")
            assert generated, f"{name}.{key[0]} is not generated by the database"


def test_foreign_keys(catalog: dict[str, Table]) -> None:
    for name in [t["name"] for t in SPEC] + list(EXTRA_TABLES):
        assert set(catalog[name].foreign_keys.values()) == FOREIGN_KEYS.get(name, set()), name


def test_every_table_has_write_guard_triggers(catalog: dict[str, Table]) -> None:
    for table in catalog.values():
        assert any("_guard" in name for name in table.triggers), f"{table.name} has no write guard"
    tracked = [t for t in catalog if t.startswith("CFG_") and t not in ("CFG_API_TOKENS", "CFG_USERS")]
    for name in tracked:
        assert any("stamp" in t for t in catalog[name].triggers), f"{name} is not stamped with the actor"


def test_the_packaged_schema_files_are_the_rendered_description(dialect: str) -> None:
    assert migrations.schema_sql(dialect) == render_schema(dialect)


def test_migrating_from_the_first_migration_gives_the_catalog_of_schema_sql(empty_project, dialect: str) -> None:
    fresh = empty_project.open_db(create=True)
    migrations.init_db(fresh)
    with fresh.read() as conn:
        expected = read_catalog(conn, dialect)
        expected_functions = postgres_functions(conn) if dialect == "postgresql" else {}
    fresh.dispose()

    from tests.fixtures import postgres as pg
    from tests.fixtures.project import Project

    target = None
    if dialect == "postgresql":
        target = pg.create_database()
    try:
        other = Project(empty_project.root / "stepwise", dialect, target)
        other.root.mkdir()
        other.write_config()
        db = other.open_db(create=True)
        with db.write() as conn:
            for migration in migrations.packaged_migrations(dialect):
                db.dialect.execute_script(conn, migration.sql)
        with db.read() as conn:
            stepwise = read_catalog(conn, dialect)
            stepwise_functions = postgres_functions(conn) if dialect == "postgresql" else {}
        other.close()
    finally:
        if target:
            pg.drop_database(target)
    # A migration that rebuilds a SQLite table (to change a CHECK constraint) moves it to the end of
    # sqlite_master; the order of tables is no part of the catalog.
    assert sorted(stepwise, key=lambda table: table.name) == sorted(expected, key=lambda table: table.name)
    assert stepwise_functions == expected_functions


def test_the_schema_reference_page_is_current() -> None:
    from tools.engine_schema.reference import render_reference

    page = Path(__file__).parents[3] / "docs/reference/engine-db-schema.md"
    assert page.read_text(encoding="utf-8") == render_reference(), "run python -m tools.generate_engine_schema"
