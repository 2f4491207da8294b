"""The Engine DB tables, described once.

`TABLE_SPECS` is the single description of every table (docs/reference/engine-db-schema.md):
`engine/ddl.py` renders it into each dialect's schema.sql, and `METADATA` turns it into SQLAlchemy
Core tables for queries. Python names are lower case because PostgreSQL folds unquoted names.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
from sqlalchemy.ext.compiler import compiles

from etl_craft.core.enums import AlertEvent, ApiRole

ACTOR_KINDS = ("HUMAN", "SCHEDULE", "ORCHESTRATOR", "WORKER", "SYSTEM")
YES_NO = ("Y", "N")
DEPENDENCY_TYPES = ("SUCCESS", "FAILURE", "ALWAYS", "HAS_DATA")


@dataclass(frozen=True)
class Default:
    """A column default written for each dialect."""

    postgres: str
    sqlite: str


NOW = Default("now()", "(strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')")
ACTOR = Default("current_setting('etl_craft.actor', true)", "(etl_craft_actor())")
ACTOR_KIND = Default("current_setting('etl_craft.actor_kind', true)", "(etl_craft_actor_kind())")
MANUAL_RUN_KEY = Default(
    "('manual:' || gen_random_uuid()::text)",
    "('manual:' || lower(hex(randomblob(4))) || '-' || lower(hex(randomblob(2))) || '-4'"
    " || substr(lower(hex(randomblob(2))), 2) || '-' || substr('89ab', 1 + (abs(random()) % 4), 1)"
    " || substr(lower(hex(randomblob(2))), 2) || '-' || lower(hex(randomblob(6))))",
)
TRUE = Default("true", "1")


def literal(value: str | int) -> Default:
    text = f"'{value}'" if isinstance(value, str) else str(value)
    return Default(text, text)


@dataclass(frozen=True)
class Col:
    name: str
    type: str  # the PostgreSQL type as documented
    nullable: bool = True
    default: Default | None = None
    allowed: tuple[str, ...] | None = None
    references: str | None = None  # "TABLE.COLUMN"
    identity: bool = False


@dataclass(frozen=True)
class Unique:
    name: str
    columns: tuple[str, ...]
    where: str | None = None  # the same predicate text on both dialects


@dataclass(frozen=True)
class Check:
    name: str
    postgres: str
    sqlite: str


@dataclass(frozen=True)
class Index:
    name: str
    columns: tuple[str, ...]
    where: str | None = None


# How the write guard treats a table: every table refuses writes from connections without the
# etl-craft actor; "append_only" tables also refuse UPDATE and DELETE from the engine itself.
GUARD_PLAIN = "plain"
GUARD_APPEND_ONLY = "append_only"
GUARD_ATTEMPTS = "attempts"  # append-only once an attempt is terminal


@dataclass(frozen=True)
class TableSpec:
    name: str
    columns: tuple[Col, ...]
    primary_key: tuple[str, ...]
    unique: tuple[Unique, ...] = ()
    checks: tuple[Check, ...] = ()
    indexes: tuple[Index, ...] = ()
    guard: str = GUARD_PLAIN
    remedy: str = "change runs with etl-craft run, mark, cancel or reopen"
    tracks_metadata: bool = False  # CFG_ rows stamped with the actor and recorded in AUD_METADATA_CHANGES
    extra: dict[str, Any] = field(default_factory=dict)

    def column(self, name: str) -> Col:
        return next(c for c in self.columns if c.name == name)


def _id(name: str) -> Col:
    return Col(name, "BIGINT", nullable=False, identity=True)


def _ref(name: str, target: str, nullable: bool = False, column: str | None = None) -> Col:
    return Col(name, "BIGINT", nullable=nullable, references=f"{target}.{column or name}")


def _flag(name: str = "ACTIVE_FLAG", default: str = "Y", type_: str = "VARCHAR") -> Col:
    return Col(name, type_, nullable=False, default=literal(default), allowed=YES_NO)


_STAMPS = (
    Col("CREATED_BY", "VARCHAR"),
    Col("CREATE_DATE", "TIMESTAMPTZ"),
    Col("UPDATED_BY", "VARCHAR"),
    Col("UPDATED_DATE", "TIMESTAMPTZ"),
)
STAMP_COLUMNS = tuple(c.name for c in _STAMPS)


def _code_check(table: str, column: str) -> Check:
    # One rule for pipeline and task codes (core.text.CODE_RULE), enforced by the database so no
    # code can collide with generated step names or carry shell syntax.
    return Check(
        f"ck_{table.lower()}_{column.lower()}",
        f"{column} ~ '^[A-Za-z][A-Za-z0-9_]{{0,127}}$'",
        f"{column} GLOB '[A-Za-z]*' AND {column} NOT GLOB '*[^A-Za-z0-9_]*'"
        f" AND length({column}) <= 128 AND length(CAST({column} AS BLOB)) = length({column})",
    )


# A count only with N, and N only with a count of at least 1 (COALESCE keeps NULL from passing).
_RUN_CONDITION_COUNT_RULE = (
    "(COALESCE(RUN_CONDITION, '') = 'N' AND COALESCE(RUN_CONDITION_COUNT, 0) >= 1)"
    " OR (COALESCE(RUN_CONDITION, '') <> 'N' AND RUN_CONDITION_COUNT IS NULL)"
)

_CFG_REMEDY = "change metadata with a project migration (etl-craft migrate) or etl-craft config apply"

TABLE_SPECS: tuple[TableSpec, ...] = (
    TableSpec(
        "CFG_PIPELINES",
        (
            _id("PIPELINE_ID"),
            Col("PIPELINE_CODE", "VARCHAR", nullable=False),
            Col("PIPELINE_NAME", "VARCHAR", nullable=False),
            Col("DESCRIPTION", "VARCHAR"),
            Col("RUN_SCHEDULE", "VARCHAR"),
            Col("SLA_IN_HOURS", "NUMERIC"),
            Col("REFRESH_TYPE", "VARCHAR", nullable=False, allowed=("FULL", "INCREMENTAL")),
            _flag(),
            Col("PIPELINE_PARAMETERS", "JSONB"),
            *_STAMPS,
            Col("SCHEDULE_TIMEZONE", "VARCHAR"),
            _flag("CATCHUP", "N", "VARCHAR(1)"),
            Col("MAX_CATCHUP_RUNS", "INT", nullable=False, default=literal(1)),
            Col(
                "OVERLAP_POLICY",
                "VARCHAR",
                nullable=False,
                default=literal("SKIP"),
                allowed=("SKIP", "QUEUE"),
            ),
            Col("SCHEDULE_START_DATE", "DATE"),
            # Slots, limits and priorities (S5.E, migration 0010): the queue's order (higher first,
            # ties to the oldest) and the most attempts of one run CLAIMED or RUNNING at once (NULL:
            # Orchestration.Max_parallel_tasks). Checked by validate, not by a CHECK, which SQLite
            # cannot add to an existing table.
            Col("PRIORITY", "INT", nullable=False, default=literal(0)),
            Col("MAX_PARALLEL_TASKS", "INT"),
        ),
        ("PIPELINE_ID",),
        unique=(Unique("ux_pipelines_code_active", ("PIPELINE_CODE",), "ACTIVE_FLAG = 'Y'"),),
        checks=(
            _code_check("CFG_PIPELINES", "PIPELINE_CODE"),
            Check("ck_pipelines_max_catchup_runs", "MAX_CATCHUP_RUNS >= 1", "MAX_CATCHUP_RUNS >= 1"),
        ),
        remedy=_CFG_REMEDY,
        tracks_metadata=True,
    ),
    TableSpec(
        "CFG_PIPELINE_DEPENDENCY",
        (
            _id("PIPELINE_DEPENDENCY_ID"),
            _ref("PIPELINE_ID", "CFG_PIPELINES"),
            _ref("DEPENDS_ON_PIPELINE_ID", "CFG_PIPELINES", column="PIPELINE_ID"),
            Col("DEPENDENCY_TYPE", "VARCHAR", nullable=False, allowed=DEPENDENCY_TYPES),
            _flag(),
            *_STAMPS,
            _flag("CONSUME_REPAIRS", "Y", "VARCHAR(1)"),
        ),
        ("PIPELINE_DEPENDENCY_ID",),
        unique=(
            Unique(
                "ux_pipeline_dependency_active",
                ("PIPELINE_ID", "DEPENDS_ON_PIPELINE_ID", "DEPENDENCY_TYPE"),
                "ACTIVE_FLAG = 'Y'",
            ),
        ),
        remedy=_CFG_REMEDY,
        tracks_metadata=True,
    ),
    TableSpec(
        "CFG_TASKS",
        (
            _id("TASK_ID"),
            Col("TASK_CODE", "VARCHAR", nullable=False),
            Col("TASK_TYPE", "VARCHAR", nullable=False, allowed=("INGESTION", "ETL")),
            _ref("PIPELINE_ID", "CFG_PIPELINES"),
            Col(
                "HANDLER",
                "VARCHAR",
                nullable=False,
                allowed=("PYTHON", "SQL", "BUSINESS_RULES", "EMAIL_ALERT"),
            ),
            Col("RUN_CONDITION", "VARCHAR", allowed=("ALL", "ANY", "N")),
            Col("RUN_CONDITION_COUNT", "INT"),
            _flag(),
            *_STAMPS,
        ),
        ("TASK_ID",),
        unique=(Unique("ux_tasks_code_active", ("PIPELINE_ID", "TASK_CODE"), "ACTIVE_FLAG = 'Y'"),),
        checks=(
            _code_check("CFG_TASKS", "TASK_CODE"),
            Check(
                "ck_tasks_run_condition_count",
                _RUN_CONDITION_COUNT_RULE,
                _RUN_CONDITION_COUNT_RULE,
            ),
        ),
        remedy=_CFG_REMEDY,
        tracks_metadata=True,
    ),
    TableSpec(
        "CFG_TASK_DEPENDENCY",
        (
            _id("TASK_DEPENDENCY_ID"),
            _ref("PIPELINE_ID", "CFG_PIPELINES"),
            _ref("TASK_ID", "CFG_TASKS"),
            _ref("DEPENDS_ON_PIPELINE_ID", "CFG_PIPELINES", nullable=True, column="PIPELINE_ID"),
            _ref("DEPENDS_ON_TASK_ID", "CFG_TASKS", column="TASK_ID"),
            Col("DEPENDENCY_TYPE", "VARCHAR", nullable=False, allowed=DEPENDENCY_TYPES),
            _flag(),
            *_STAMPS,
            _flag("CONSUME_REPAIRS", "Y", "VARCHAR(1)"),
        ),
        ("TASK_DEPENDENCY_ID",),
        unique=(
            Unique(
                "ux_task_dependency_active",
                ("TASK_ID", "DEPENDS_ON_PIPELINE_ID", "DEPENDS_ON_TASK_ID", "DEPENDENCY_TYPE"),
                "ACTIVE_FLAG = 'Y'",
            ),
        ),
        remedy=_CFG_REMEDY,
        tracks_metadata=True,
    ),
    TableSpec(
        "CFG_TASK_PARAMETERS",
        (
            _id("TASK_PARAMETER_ID"),
            _ref("TASK_ID", "CFG_TASKS"),
            Col("PARAMETER_NAME", "VARCHAR", nullable=False),
            Col("PARAMETER_VALUE", "VARCHAR"),
            _flag(),
            *_STAMPS,
        ),
        ("TASK_PARAMETER_ID",),
        unique=(Unique("ux_task_parameters_active", ("TASK_ID", "PARAMETER_NAME"), "ACTIVE_FLAG = 'Y'"),),
        remedy=_CFG_REMEDY,
        tracks_metadata=True,
    ),
    TableSpec(
        "CFG_BUSINESS_RULES",
        (
            _id("BUSINESS_RULE_ID"),
            Col("BUSINESS_RULE_NAME", "VARCHAR", nullable=False),
            _ref("PIPELINE_ID", "CFG_PIPELINES"),
            _ref("TASK_ID", "CFG_TASKS"),
            Col("BUSINESS_RULE_SQL", "VARCHAR", nullable=False),
            Col("BUSINESS_RULE_TYPE", "VARCHAR", nullable=False, allowed=("INCOMPLETE", "REJECT", "REPORT")),
            Col("BUSINESS_RULE_KEY_COLUMN", "VARCHAR", nullable=False),
            Col("TARGET_TABLE", "VARCHAR", nullable=False),
            Col("SEQUENCE_NUMBER", "BIGINT", nullable=False),
            _flag(),
            *_STAMPS,
        ),
        ("BUSINESS_RULE_ID",),
        unique=(Unique("ux_business_rules_active", ("TASK_ID", "BUSINESS_RULE_NAME"), "ACTIVE_FLAG = 'Y'"),),
        remedy=_CFG_REMEDY,
        tracks_metadata=True,
    ),
    TableSpec(
        "AUD_PIPELINES_RUN_LOG",
        (
            _id("PIPELINE_RUN_ID"),
            _ref("PIPELINE_ID", "CFG_PIPELINES"),
            Col("START_DATE", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("END_DATE", "TIMESTAMPTZ"),
            Col(
                "STATUS",
                "VARCHAR",
                nullable=False,
                allowed=("QUEUED", "IN-PROGRESS", "SUCCESS", "FAILED", "SKIPPED", "CANCELLED"),
            ),
            Col("SLA_STATUS", "VARCHAR(8)", allowed=("MET", "BREACHED")),
            Col("RUN_DATE", "DATE"),
            _flag("BACKFILL", "N", "VARCHAR(1)"),
            Col("RUN_KEY", "VARCHAR", nullable=False, default=MANUAL_RUN_KEY),
            Col(
                "TRIGGER_KIND",
                "VARCHAR",
                nullable=False,
                default=literal("MANUAL"),
                allowed=("SCHEDULE", "MANUAL", "BACKFILL", "ORCHESTRATOR", "STAND_IN"),
            ),
            Col("OWNER_ID", "VARCHAR"),
            Col("LEASE_EXPIRES_AT", "TIMESTAMPTZ"),
            Col("OUTPUT_REVISION", "INT", nullable=False, default=literal(1)),
            Col("CONFIG_SHA256", "VARCHAR(64)"),
            Col("STARTED_BY", "VARCHAR", default=ACTOR),
            Col("STARTED_BY_KIND", "VARCHAR", default=ACTOR_KIND, allowed=ACTOR_KINDS),
            Col("ENDED_BY", "VARCHAR"),
            Col("ENDED_BY_KIND", "VARCHAR", allowed=ACTOR_KINDS),
            _flag("REPAIR_PENDING", "N"),
        ),
        ("PIPELINE_RUN_ID",),
        unique=(
            Unique("ux_pipeline_run_in_progress", ("PIPELINE_ID",), "STATUS = 'IN-PROGRESS'"),
            Unique("ux_pipeline_run_key", ("PIPELINE_ID", "RUN_KEY")),
        ),
        checks=(
            Check(
                "ck_pipeline_run_backfill",
                "(BACKFILL = 'Y') = (TRIGGER_KIND = 'BACKFILL')",
                "(BACKFILL = 'Y') = (TRIGGER_KIND = 'BACKFILL')",
            ),
            Check("ck_pipeline_run_revision", "OUTPUT_REVISION >= 1", "OUTPUT_REVISION >= 1"),
        ),
        indexes=(
            Index("ix_pipeline_run_active", ("STATUS", "PIPELINE_ID"), "STATUS IN ('QUEUED', 'IN-PROGRESS')"),
            Index("ix_pipeline_run_pipeline", ("PIPELINE_ID", "PIPELINE_RUN_ID")),
            Index("ix_pipeline_run_started", ("PIPELINE_ID", "START_DATE")),
        ),
    ),
    TableSpec(
        "AUD_TASK_RUN_LOG",
        (
            _id("TASK_RUN_ID"),
            _ref("TASK_ID", "CFG_TASKS"),
            _ref("PIPELINE_RUN_ID", "AUD_PIPELINES_RUN_LOG"),
            Col("START_DATE", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("END_DATE", "TIMESTAMPTZ"),
            Col(
                "STATUS",
                "VARCHAR",
                nullable=False,
                allowed=("IN-PROGRESS", "SUCCESS", "FAILED", "SKIPPED", "CANCELLED"),
            ),
            Col("SOURCE_COUNT", "BIGINT"),
            Col("TARGET_COUNT", "BIGINT"),
            Col("INSERT_COUNT", "BIGINT"),
            Col("UPDATE_COUNT", "BIGINT"),
            Col("DELETE_COUNT", "BIGINT"),
            Col("ERROR_MESSAGE", "VARCHAR"),
            Col("TASK_LOG", "VARCHAR"),
            Col("ATTEMPT_COUNT", "INT", nullable=False, default=literal(1)),
            Col("ROWS_WRITTEN", "BIGINT"),
        ),
        ("TASK_RUN_ID",),
        unique=(Unique("ux_task_run_per_run", ("TASK_ID", "PIPELINE_RUN_ID")),),
        indexes=(Index("ix_task_run_run", ("PIPELINE_RUN_ID",)),),
    ),
    TableSpec(
        "AUD_RUN_INTERVENTIONS",
        (
            _id("INTERVENTION_ID"),
            _ref("PIPELINE_ID", "CFG_PIPELINES"),
            _ref("PIPELINE_RUN_ID", "AUD_PIPELINES_RUN_LOG"),
            _ref("TASK_ID", "CFG_TASKS", nullable=True),
            Col(
                "ACTION",
                "VARCHAR(24)",
                nullable=False,
                allowed=(
                    "MARK",
                    "NEW_RUN",
                    "CANCEL",
                    "REOPEN",
                    "RESET",
                    "GATE_BYPASS",
                    "IGNORE_DEPENDENCIES",
                    "RERUN",
                ),
            ),
            Col("FROM_STATUS", "VARCHAR(16)"),
            Col("TO_STATUS", "VARCHAR(16)"),
            Col("TARGET_COUNT", "BIGINT"),
            Col("PREVIOUS_MESSAGE", "VARCHAR"),
            Col("REASON", "VARCHAR", nullable=False),
            Col("REQUESTED_BY", "VARCHAR", nullable=False),
            Col("REQUESTED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("REQUESTED_BY_KIND", "VARCHAR", default=ACTOR_KIND, allowed=ACTOR_KINDS),
        ),
        ("INTERVENTION_ID",),
        indexes=(
            Index("ix_interventions_run", ("PIPELINE_RUN_ID",)),
            Index("ix_interventions_requested", ("REQUESTED_AT",)),
        ),
        guard=GUARD_APPEND_ONLY,
    ),
    TableSpec(
        "AUD_PIPELINE_PAUSES",
        (
            _id("PIPELINE_PAUSE_ID"),
            _ref("PIPELINE_ID", "CFG_PIPELINES"),
            Col("PAUSED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("PAUSED_BY", "VARCHAR", nullable=False),
            Col("REASON", "VARCHAR", nullable=False),
            Col("RESUMED_AT", "TIMESTAMPTZ"),
            Col("RESUMED_BY", "VARCHAR"),
            Col("RESUME_REASON", "VARCHAR"),
            Col("PAUSED_BY_KIND", "VARCHAR", default=ACTOR_KIND, allowed=ACTOR_KINDS),
            Col("RESUMED_BY_KIND", "VARCHAR", allowed=ACTOR_KINDS),
        ),
        ("PIPELINE_PAUSE_ID",),
        unique=(Unique("ux_pipeline_pause_open", ("PIPELINE_ID",), "RESUMED_AT IS NULL"),),
        remedy="pause and resume pipelines with etl-craft pause and etl-craft resume",
    ),
    TableSpec(
        "AUD_BUSINESS_RULES_RUN_LOG",
        (
            _id("BUSINESS_RULE_RUN_ID"),
            _ref("BUSINESS_RULE_ID", "CFG_BUSINESS_RULES"),
            _ref("TASK_RUN_ID", "AUD_TASK_RUN_LOG"),
            Col("START_DATE", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("END_DATE", "TIMESTAMPTZ"),
            Col("STATUS", "VARCHAR", nullable=False, allowed=("IN-PROGRESS", "SUCCESS", "FAILED", "SKIPPED")),
        ),
        ("BUSINESS_RULE_RUN_ID",),
        unique=(Unique("ux_business_rule_run", ("BUSINESS_RULE_ID", "TASK_RUN_ID")),),
        indexes=(Index("ix_business_rule_run_task_run", ("TASK_RUN_ID",)),),
    ),
    TableSpec(
        "AUD_BUSINESS_RULES_RESULTS",
        (
            _id("BUSINESS_RULE_RESULT_ID"),
            _ref("BUSINESS_RULE_RUN_ID", "AUD_BUSINESS_RULES_RUN_LOG"),
            _ref("BUSINESS_RULE_ID", "CFG_BUSINESS_RULES"),
            Col("BUSINESS_RULE_KEY", "VARCHAR", nullable=False),
            Col("TARGET_TABLE", "VARCHAR", nullable=False),
            Col("STATUS", "VARCHAR", nullable=False, allowed=("INCOMPLETE", "REJECT", "REPORT")),
            _flag(),
            Col("START_DATE", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("END_DATE", "TIMESTAMPTZ"),
        ),
        ("BUSINESS_RULE_RESULT_ID",),
        unique=(
            Unique("ux_business_rule_flag_active", ("BUSINESS_RULE_ID", "BUSINESS_RULE_KEY"), "ACTIVE_FLAG = 'Y'"),
        ),
        indexes=(Index("ix_business_rule_results_run", ("BUSINESS_RULE_RUN_ID",)),),
    ),
    TableSpec(
        "AUD_TASK_OFFSET_TRACKER",
        (
            _ref("TASK_ID", "CFG_TASKS"),
            Col("OFFSET_TYPE", "VARCHAR", nullable=False, allowed=("NUMBER", "TEXT", "TIMESTAMP")),
            Col("OFFSET_VALUE", "VARCHAR"),
            Col("LAST_UPDATED_TIMESTAMP", "TIMESTAMPTZ", nullable=False, default=NOW),
        ),
        ("TASK_ID",),
    ),
    TableSpec(
        "AUD_COLUMN_LINEAGE",
        (
            _id("COLUMN_LINEAGE_ID"),
            _ref("TASK_ID", "CFG_TASKS"),
            Col("SOURCE_SQL_HASH", "VARCHAR", nullable=False),
            Col("TARGET_OBJECT", "VARCHAR", nullable=False),
            Col("TARGET_COLUMN", "VARCHAR", nullable=False),
            Col("SOURCE_OBJECT", "VARCHAR"),
            Col("SOURCE_COLUMN", "VARCHAR"),
            Col("TRANSFORMATION", "VARCHAR"),
            Col("COMPUTED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
        ),
        ("COLUMN_LINEAGE_ID",),
        indexes=(Index("ix_column_lineage_task", ("TASK_ID",)),),
    ),
    TableSpec(
        "AUD_DOCS_PUBLICATION",
        (
            _id("DOCS_PUBLICATION_ID"),
            Col("PUBLISHED_URL", "VARCHAR", nullable=False),
            Col("FIRST_PUBLISHED", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("LAST_PUBLISHED", "TIMESTAMPTZ", nullable=False, default=NOW),
        ),
        ("DOCS_PUBLICATION_ID",),
        unique=(Unique("ux_docs_publication_url", ("PUBLISHED_URL",)),),
    ),
    TableSpec(
        "AUD_TASK_DOCUMENTATION",
        (
            _id("TASK_DOCUMENTATION_ID"),
            _ref("TASK_ID", "CFG_TASKS"),
            Col("VERSION", "INT", nullable=False),
            Col("DOCUMENTATION_HASH", "VARCHAR", nullable=False),
            Col("DOCUMENTATION", "VARCHAR", nullable=False),
            Col("RECORDED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
        ),
        ("TASK_DOCUMENTATION_ID",),
        unique=(Unique("ux_task_documentation_version", ("TASK_ID", "VERSION")),),
        guard=GUARD_APPEND_ONLY,
    ),
    TableSpec(
        "AUD_DEPENDENCY_CONSUMPTION",
        (
            _id("CONSUMPTION_ID"),
            _ref("PIPELINE_DEPENDENCY_ID", "CFG_PIPELINE_DEPENDENCY", nullable=True),
            _ref("TASK_DEPENDENCY_ID", "CFG_TASK_DEPENDENCY", nullable=True),
            _ref("PIPELINE_ID", "CFG_PIPELINES"),
            _ref("PIPELINE_RUN_ID", "AUD_PIPELINES_RUN_LOG", nullable=True),
            _ref("TASK_ID", "CFG_TASKS", nullable=True),
            _ref("DEPENDS_ON_PIPELINE_ID", "CFG_PIPELINES", column="PIPELINE_ID"),
            _ref("CONSUMED_PIPELINE_RUN_ID", "AUD_PIPELINES_RUN_LOG", column="PIPELINE_RUN_ID"),
            _ref("CONSUMED_TASK_RUN_ID", "AUD_TASK_RUN_LOG", nullable=True, column="TASK_RUN_ID"),
            Col("CONSUMED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("CONSUMED_REVISION", "INT", nullable=False, default=literal(1)),
        ),
        ("CONSUMPTION_ID",),
        checks=(
            Check(
                "ck_consumption_one_dependency",
                "(PIPELINE_DEPENDENCY_ID IS NULL) <> (TASK_DEPENDENCY_ID IS NULL)",
                "(PIPELINE_DEPENDENCY_ID IS NULL) <> (TASK_DEPENDENCY_ID IS NULL)",
            ),
        ),
        indexes=(
            Index("ix_consumption_pipeline_dependency", ("PIPELINE_DEPENDENCY_ID", "CONSUMPTION_ID")),
            Index("ix_consumption_task_dependency", ("TASK_DEPENDENCY_ID", "CONSUMPTION_ID")),
            Index("ix_consumption_task_run", ("CONSUMED_TASK_RUN_ID",)),
            Index("ix_consumption_run", ("PIPELINE_RUN_ID",)),
            Index("ix_consumption_consumed_run", ("CONSUMED_PIPELINE_RUN_ID",)),
            Index("ix_consumption_consumed_at", ("CONSUMED_AT",)),
        ),
        guard=GUARD_APPEND_ONLY,
    ),
    TableSpec(
        "SCHEMA_MIGRATIONS",
        (
            Col("SOURCE", "VARCHAR", nullable=False, allowed=("ENGINE", "PROJECT")),
            Col("VERSION", "VARCHAR", nullable=False),
            Col("CHECKSUM", "VARCHAR(64)", nullable=False),
            Col("APPLIED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
        ),
        ("SOURCE", "VERSION"),
        guard=GUARD_APPEND_ONLY,
        remedy="apply migrations with etl-craft migrate",
    ),
    TableSpec(
        "AUD_TASK_ATTEMPTS",
        (
            _id("ATTEMPT_ID"),
            _ref("TASK_RUN_ID", "AUD_TASK_RUN_LOG"),
            Col("ATTEMPT_NUMBER", "INT", nullable=False),
            Col(
                "STATUS",
                "VARCHAR",
                nullable=False,
                allowed=(
                    "QUEUED",
                    "CLAIMED",
                    "RUNNING",
                    "SUCCESS",
                    "FAILED",
                    "TIMED_OUT",
                    "CANCELLED",
                    "LOST",
                ),
            ),
            Col("OWNER_ID", "VARCHAR"),
            Col("LEASE_EXPIRES_AT", "TIMESTAMPTZ"),
            Col("HEARTBEAT_AT", "TIMESTAMPTZ"),
            Col("QUEUED_AT", "TIMESTAMPTZ"),
            Col("CLAIMED_AT", "TIMESTAMPTZ"),
            Col("STARTED_AT", "TIMESTAMPTZ"),
            Col("ENDED_AT", "TIMESTAMPTZ"),
            Col("HOST", "VARCHAR"),
            Col("PID", "INT"),
            Col("PROCESS_START", "VARCHAR"),
            Col("EXIT_CODE", "INT"),
            Col("SOURCE_COUNT", "BIGINT"),
            Col("TARGET_COUNT", "BIGINT"),
            Col("INSERT_COUNT", "BIGINT"),
            Col("UPDATE_COUNT", "BIGINT"),
            Col("DELETE_COUNT", "BIGINT"),
            Col("ROWS_WRITTEN", "BIGINT"),
            Col("ERROR_MESSAGE", "VARCHAR"),
            Col("TASK_LOG", "VARCHAR"),
            Col("LOG_PATH", "VARCHAR"),
            Col("REQUESTED_BY", "VARCHAR", default=ACTOR),
            Col("REQUESTED_BY_KIND", "VARCHAR", default=ACTOR_KIND, allowed=ACTOR_KINDS),
            Col("NOT_BEFORE", "TIMESTAMP"),
            Col("RETRYABLE", "BOOLEAN", nullable=False, default=TRUE, allowed=("TRUE", "FALSE")),
            # The queue (S5.C, migration 0006): the pool an attempt waits in and its slot kind
            # (ingestion, warehouse: checked by etl_craft.execution.pools.SlotKind, not by a CHECK,
            # which SQLite cannot add to an existing table), and the order workers claim in.
            Col("POOL", "VARCHAR"),
            Col("SLOT_KIND", "VARCHAR"),
            Col("PRIORITY", "INT", nullable=False, default=literal(0)),
            # UPDATED_AT (0009) before 0011's columns, the order the migrations leave; set by every
            # etl-craft write, clones copy by it
            Col("UPDATED_AT", "TIMESTAMPTZ"),
            # Cancellation across the cluster (S5.D, migration 0011): a cancel asks the worker that
            # holds the attempt to stop it; the worker records the end and acknowledges.
            Col("CANCEL_REQUESTED_AT", "TIMESTAMPTZ"),
            Col("CANCEL_ACKNOWLEDGED_AT", "TIMESTAMPTZ"),
        ),
        ("ATTEMPT_ID",),
        unique=(
            Unique("ux_attempt_number", ("TASK_RUN_ID", "ATTEMPT_NUMBER")),
            Unique("ux_attempt_live", ("TASK_RUN_ID",), "STATUS IN ('QUEUED','CLAIMED','RUNNING')"),
        ),
        checks=(Check("ck_attempt_number", "ATTEMPT_NUMBER >= 1", "ATTEMPT_NUMBER >= 1"),),
        indexes=(
            Index("ix_attempt_lease", ("STATUS", "LEASE_EXPIRES_AT"), "STATUS IN ('CLAIMED','RUNNING')"),
            Index("ix_attempt_queued", ("NOT_BEFORE", "ATTEMPT_ID"), "STATUS = 'QUEUED'"),
            # The workers' claim: queued attempts of a pool, by kind, in priority order.
            Index("ix_attempt_pool_queue", ("POOL", "SLOT_KIND", "PRIORITY", "QUEUED_AT"), "STATUS = 'QUEUED'"),
            Index("ix_attempt_owner", ("OWNER_ID",), "STATUS IN ('CLAIMED','RUNNING')"),
        ),
        guard=GUARD_ATTEMPTS,
    ),
    TableSpec(
        "AUD_GATE_DECISIONS",
        (
            _id("DECISION_ID"),
            _ref("PIPELINE_RUN_ID", "AUD_PIPELINES_RUN_LOG"),
            _ref("ATTEMPT_ID", "AUD_TASK_ATTEMPTS", nullable=True),
            _ref("PIPELINE_DEPENDENCY_ID", "CFG_PIPELINE_DEPENDENCY", nullable=True),
            _ref("TASK_DEPENDENCY_ID", "CFG_TASK_DEPENDENCY", nullable=True),
            _ref("SELECTED_PIPELINE_RUN_ID", "AUD_PIPELINES_RUN_LOG", nullable=True, column="PIPELINE_RUN_ID"),
            _ref("SELECTED_TASK_RUN_ID", "AUD_TASK_RUN_LOG", nullable=True, column="TASK_RUN_ID"),
            Col("SELECTED_REVISION", "INT"),
            Col("RESULT", "VARCHAR", nullable=False, allowed=("SATISFIED", "UNSATISFIED", "BYPASSED")),
            Col("REASON", "VARCHAR", nullable=False),
            Col("DECIDED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
        ),
        ("DECISION_ID",),
        checks=(
            Check(
                "ck_gate_decision_one_dependency",
                "(PIPELINE_DEPENDENCY_ID IS NULL) <> (TASK_DEPENDENCY_ID IS NULL)",
                "(PIPELINE_DEPENDENCY_ID IS NULL) <> (TASK_DEPENDENCY_ID IS NULL)",
            ),
        ),
        indexes=(
            Index("ix_gate_decisions_run", ("PIPELINE_RUN_ID",)),
            Index("ix_gate_decisions_attempt", ("ATTEMPT_ID",)),
            Index("ix_gate_decisions_selected_run", ("SELECTED_PIPELINE_RUN_ID",)),
            Index("ix_gate_decisions_selected_task_run", ("SELECTED_TASK_RUN_ID",)),
        ),
        guard=GUARD_APPEND_ONLY,
    ),
    TableSpec(
        "AUD_ACTIONS",
        (
            _id("ACTION_ID"),
            Col("STARTED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("ENDED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("ACTOR", "VARCHAR", nullable=False),
            Col("ACTOR_KIND", "VARCHAR", nullable=False, allowed=ACTOR_KINDS),
            Col("HOST", "VARCHAR", nullable=False),
            Col("COMMAND", "VARCHAR", nullable=False),
            Col("ARGUMENTS", "JSONB", nullable=False),
            _ref("PIPELINE_ID", "CFG_PIPELINES", nullable=True),
            _ref("PIPELINE_RUN_ID", "AUD_PIPELINES_RUN_LOG", nullable=True),
            _ref("TASK_ID", "CFG_TASKS", nullable=True),
            Col("OUTCOME", "VARCHAR", nullable=False),
            Col("EXIT_CODE", "INT"),
        ),
        ("ACTION_ID",),
        indexes=(Index("ix_actions_started", ("STARTED_AT",)), Index("ix_actions_run", ("PIPELINE_RUN_ID",))),
        guard=GUARD_APPEND_ONLY,
    ),
    TableSpec(
        "AUD_METADATA_CHANGES",
        (
            _id("CHANGE_ID"),
            Col("CHANGED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
            Col("ACTOR", "VARCHAR", nullable=False),
            Col("ACTOR_KIND", "VARCHAR", nullable=False, allowed=ACTOR_KINDS),
            Col("TABLE_NAME", "VARCHAR", nullable=False),
            Col("ROW_KEY", "VARCHAR", nullable=False),
            Col("OPERATION", "VARCHAR", nullable=False, allowed=("INSERT", "UPDATE", "DELETE")),
            Col("BEFORE_JSON", "JSONB"),
            Col("AFTER_JSON", "JSONB"),
            Col("MIGRATION", "VARCHAR"),
        ),
        ("CHANGE_ID",),
        indexes=(Index("ix_metadata_changes_at", ("CHANGED_AT",)),),
        guard=GUARD_APPEND_ONLY,
        remedy="metadata changes are recorded by etl-craft itself when CFG_ rows change",
    ),
    TableSpec(
        "AUD_TARGET_HASH_VERSION",
        (
            Col("TARGET_OBJECT", "VARCHAR", nullable=False),
            Col("HASH_VERSION", "INTEGER", nullable=False, allowed=("1", "2")),
            Col("RECOMPUTED_AT", "TIMESTAMPTZ", nullable=False),
        ),
        ("TARGET_OBJECT",),
        remedy="recompute hashes with etl-craft rehash",
    ),
    TableSpec(
        "AUD_OVERSEERS",
        (
            _id("OVERSEER_ID"),
            Col("HOST", "VARCHAR", nullable=False),
            Col("PID", "INTEGER", nullable=False),
            Col("VERSION", "VARCHAR", nullable=False),
            Col("STARTED_AT", "TIMESTAMPTZ", nullable=False),
            Col("HEARTBEAT_AT", "TIMESTAMPTZ", nullable=False),
            Col("STOPPED_AT", "TIMESTAMPTZ"),
            Col("STARTED_BY", "VARCHAR", nullable=False),
            Col("STARTED_BY_KIND", "VARCHAR", nullable=False),
            Col("STOPPED_BY", "VARCHAR"),
            Col("STOPPED_BY_KIND", "VARCHAR"),
        ),
        ("OVERSEER_ID",),
        remedy="start and stop the overseer with etl-craft server",
    ),
    TableSpec(
        "AUD_GATE_WAITS",
        (
            _ref("PIPELINE_RUN_ID", "AUD_PIPELINES_RUN_LOG"),
            _ref("TASK_ID", "CFG_TASKS", nullable=True),
            Col("FIRST_CHECK_AT", "TIMESTAMPTZ", nullable=False),
            Col("NEXT_CHECK_AT", "TIMESTAMPTZ"),
            Col("LOOKS", "INT", nullable=False),
            Col("WAIT_UNTIL", "TIMESTAMPTZ", nullable=False),
        ),
        (),
        extra={"unique_expression": ("ux_gate_wait", "PIPELINE_RUN_ID, COALESCE(TASK_ID, 0)")},
    ),
    TableSpec(
        "CFG_API_TOKENS",
        (
            Col("TOKEN_ID", "BIGSERIAL", nullable=False),
            Col("NAME", "VARCHAR(128)", nullable=False),
            Col("TOKEN_SHA256", "VARCHAR(64)", nullable=False),
            Col("ROLE", "VARCHAR(16)", nullable=False, allowed=tuple(r.value for r in ApiRole)),
            Col("PROJECT_ID", "BIGINT"),
            Col("CREATED_BY", "VARCHAR(128)", nullable=False),
            Col("CREATED_AT", "TIMESTAMP", nullable=False),
            Col("EXPIRES_AT", "TIMESTAMP"),
            Col("REVOKED_AT", "TIMESTAMP"),
            # When the HTTP API last accepted the token (to the minute: see etl_craft_server.api.access).
            Col("LAST_USED_AT", "TIMESTAMP"),
        ),
        ("TOKEN_ID",),
        unique=(Unique("ux_api_tokens_sha256", ("TOKEN_SHA256",)),),
        remedy="manage API tokens with etl-craft token",
    ),
    TableSpec(
        "AUD_ALERT_DELIVERIES",
        (
            _id("ALERT_DELIVERY_ID"),
            _ref("PIPELINE_RUN_ID", "AUD_PIPELINES_RUN_LOG"),
            _ref("ATTEMPT_ID", "AUD_TASK_ATTEMPTS", nullable=True),
            Col("CHANNEL", "VARCHAR", nullable=False),
            Col("EVENT", "VARCHAR", nullable=False, allowed=tuple(e.value for e in AlertEvent)),
            Col("STATUS", "VARCHAR", nullable=False, allowed=("DELIVERED", "FAILED")),
            Col("TRIES", "INT", nullable=False),
            Col("HTTP_STATUS", "INT"),
            Col("ERROR_MESSAGE", "VARCHAR"),
            Col("DELIVERED_AT", "TIMESTAMPTZ", nullable=False, default=NOW),
        ),
        ("ALERT_DELIVERY_ID",),
        checks=(Check("ck_alert_delivery_tries", "TRIES >= 1", "TRIES >= 1"),),
        indexes=(
            Index("ix_alert_deliveries_run", ("PIPELINE_RUN_ID", "EVENT")),
            Index("ix_alert_deliveries_attempt", ("ATTEMPT_ID",)),
        ),
        guard=GUARD_APPEND_ONLY,
        remedy="alert deliveries are recorded by etl-craft itself",
    ),
    TableSpec(
        "CFG_USERS",
        (
            Col("USER_ID", "BIGSERIAL", nullable=False),
            Col("USER_NAME", "VARCHAR(128)", nullable=False),
            # scrypt$<n>$<r>$<p>$<salt hex>$<hash hex>: the parameters travel with the hash, so they
            # can be raised later without invalidating passwords set before.
            Col("PASSWORD_HASH", "VARCHAR(512)", nullable=False),
            Col("ROLE", "VARCHAR(16)", nullable=False, allowed=tuple(r.value for r in ApiRole)),
            Col("PROJECT_ID", "BIGINT"),
            Col("CREATED_BY", "VARCHAR(128)", nullable=False),
            Col("CREATED_AT", "TIMESTAMP", nullable=False),
            Col("PASSWORD_CHANGED_AT", "TIMESTAMP", nullable=False),
            Col("DISABLED_AT", "TIMESTAMP"),
            Col("LAST_LOGIN_AT", "TIMESTAMP"),
        ),
        ("USER_ID",),
        unique=(Unique("ux_users_name", ("USER_NAME",)),),
        remedy="manage users with etl-craft user",
    ),
    TableSpec(
        "AUD_WORKERS",
        (
            _id("WORKER_ID"),
            Col("OWNER_ID", "VARCHAR", nullable=False),  # what its attempts' OWNER_ID holds
            Col("POOL", "VARCHAR", nullable=False),
            Col("HOST", "VARCHAR", nullable=False),
            Col("PID", "INT", nullable=False),
            Col("VERSION", "VARCHAR", nullable=False),  # the last ENGINE migration it was built for
            Col("INGESTION_SLOTS", "INT", nullable=False),
            Col("WAREHOUSE_SLOTS", "INT", nullable=False),
            Col("STARTED_AT", "TIMESTAMPTZ", nullable=False),
            Col("HEARTBEAT_AT", "TIMESTAMPTZ", nullable=False),
            Col("STATUS", "VARCHAR", nullable=False, allowed=("ACTIVE", "DRAINING", "GONE")),
            Col("STOPPED_AT", "TIMESTAMPTZ"),
            Col("STATUS_REASON", "VARCHAR"),
            Col("UPDATED_AT", "TIMESTAMPTZ", nullable=False),  # every write sets it (clones copy by it)
        ),
        ("WORKER_ID",),
        unique=(Unique("ux_workers_owner", ("OWNER_ID",)),),
        indexes=(Index("ix_workers_live", ("POOL", "HEARTBEAT_AT"), "STATUS IN ('ACTIVE','DRAINING')"),),
        remedy="start and stop workers with etl-craft worker",
    ),
    TableSpec(
        "AUD_UI_SESSIONS",
        (
            Col("SESSION_ID", "BIGSERIAL", nullable=False),
            # The SHA-256 of the cookie's value: a copy of the Engine DB holds no usable session.
            Col("SESSION_SHA256", "VARCHAR(64)", nullable=False),
            _ref("USER_ID", "CFG_USERS"),
            Col("ADDRESS", "VARCHAR(64)", nullable=False),
            Col("CREATED_AT", "TIMESTAMP", nullable=False),
            Col("EXPIRES_AT", "TIMESTAMP", nullable=False),
            # When the UI last accepted the session (to the minute, as a token's last use).
            Col("LAST_SEEN_AT", "TIMESTAMP", nullable=False),
            Col("ENDED_AT", "TIMESTAMP"),
        ),
        ("SESSION_ID",),
        unique=(Unique("ux_ui_sessions_sha256", ("SESSION_SHA256",)),),
        indexes=(Index("ix_ui_sessions_user", ("USER_ID",)),),
        remedy="sign in and out through the web UI (etl-craft server)",
    ),
    TableSpec(
        "CFG_POOLS",
        (
            _id("POOL_ID"),
            Col("POOL_NAME", "VARCHAR", nullable=False),
            Col("DESCRIPTION", "VARCHAR"),
            # The most attempts of the pool CLAIMED or RUNNING at once across all its workers, by
            # slot kind (NULL: as many as its workers' slots).
            Col("INGESTION_SLOTS", "INT"),
            Col("WAREHOUSE_SLOTS", "INT"),
            _flag(),
            *_STAMPS,
        ),
        ("POOL_ID",),
        unique=(Unique("ux_pools_name_active", ("POOL_NAME",), "ACTIVE_FLAG = 'Y'"),),
        checks=(
            Check(
                "ck_pools_slots",
                "COALESCE(INGESTION_SLOTS, 0) >= 0 AND COALESCE(WAREHOUSE_SLOTS, 0) >= 0",
                "COALESCE(INGESTION_SLOTS, 0) >= 0 AND COALESCE(WAREHOUSE_SLOTS, 0) >= 0",
            ),
        ),
        remedy=_CFG_REMEDY,
        tracks_metadata=True,
    ),
)


def _with_updated_at(spec: TableSpec) -> TableSpec:
    """Every AUD_ table ends with UPDATED_AT (ENGINE migration 0009): clones copy by it (S6.E).

    The column has no DDL default: SQLite cannot add a column with a computed default, and a
    trigger setting it would fire the append-only guards' triggers. `_build_metadata` gives it a SQL
    default and on-update value instead, so every INSERT and UPDATE etl-craft issues (the
    transitions' compare-and-sets included) writes it in the same statement.
    """
    if not spec.name.startswith("AUD_") or any(c.name == "UPDATED_AT" for c in spec.columns):
        return spec
    column = Col("UPDATED_AT", "TIMESTAMPTZ")  # set by every etl-craft write (clones copy by it)
    return replace(spec, columns=(*spec.columns, column))


TABLE_SPECS = tuple(_with_updated_at(spec) for spec in TABLE_SPECS)
SPECS_BY_NAME = {spec.name: spec for spec in TABLE_SPECS}
# The tables project migrations write (the pipelines' metadata); every other table is etl-craft's own.
METADATA_TABLES = tuple(spec.name for spec in TABLE_SPECS if spec.tracks_metadata)
# The purpose marking a transaction's statements as a project migration's: the guards refuse their
# writes to any table but the metadata tables (and their recorded changes, written by the triggers).
PROJECT_SQL = "project-sql"


class UtcDateTime(sa.types.TypeDecorator[datetime]):
    """Aware UTC datetimes: TIMESTAMPTZ (or UTC wall time in a plain TIMESTAMP) on PostgreSQL."""

    impl = sa.types.DateTime
    cache_ok = True

    def __init__(self, timezone: bool = True) -> None:
        super().__init__(timezone=timezone)
        self.with_timezone = timezone

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> Any:
        if value is None:
            return None
        utc = _as_utc(value)
        return utc if self.with_timezone else utc.replace(tzinfo=None)

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> datetime | None:
        return None if value is None else _read_utc(value)


class UtcText(sa.types.TypeDecorator[datetime]):
    """Aware UTC datetimes as SQLite stores them: the text 'YYYY-MM-DD HH:MM:SS.ffffff' in UTC, which
    sorts and compares correctly as text."""

    impl = sa.types.String
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: sa.Dialect) -> Any:
        return None if value is None else _as_utc(value).strftime("%Y-%m-%d %H:%M:%S.%f")

    def process_result_value(self, value: Any, dialect: sa.Dialect) -> datetime | None:
        return None if value is None else _read_utc(datetime.fromisoformat(value) if isinstance(value, str) else value)


def _as_utc(value: Any) -> datetime:
    if not isinstance(value, datetime):
        raise TypeError(f"expected a datetime, got {type(value).__name__}")
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _read_utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _timestamp(timezone: bool) -> sa.types.TypeEngine[Any]:
    return UtcDateTime(timezone).with_variant(UtcText(), "sqlite")


def _sa_type(pg_type: str) -> sa.types.TypeEngine[Any]:
    base = pg_type.split("(", maxsplit=1)[0]
    if base in ("BIGINT", "BIGSERIAL"):
        return sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    if base in ("INT", "INTEGER"):
        return sa.Integer()
    if base == "VARCHAR":
        return sa.String()
    if base == "NUMERIC":
        return sa.Numeric()
    if base == "JSONB":
        return sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
    if base == "TIMESTAMPTZ":
        return _timestamp(timezone=True)
    if base == "TIMESTAMP":
        return _timestamp(timezone=False)
    if base == "DATE":
        return sa.Date()
    if base == "BOOLEAN":
        return sa.Boolean()
    raise ValueError(f"no SQLAlchemy type for {pg_type}")


class engine_now(sa.sql.functions.FunctionElement[datetime]):
    """The statement's time in the form each dialect stores timestamps (as the NOW column default)."""

    type = _timestamp(timezone=True)
    inherit_cache = True


@compiles(engine_now)
def _now_postgres(element: engine_now, compiler: Any, **kw: Any) -> str:
    return NOW.postgres


@compiles(engine_now, "sqlite")
def _now_sqlite(element: engine_now, compiler: Any, **kw: Any) -> str:
    return NOW.sqlite


def _written_now(column: Col) -> dict[str, Any]:
    """UPDATED_AT without a DDL default: every INSERT and UPDATE SQLAlchemy builds sets it."""
    if column.name != "UPDATED_AT" or column.default is not None:
        return {}
    return {"default": engine_now(), "onupdate": engine_now()}


def _build_metadata() -> sa.MetaData:
    metadata = sa.MetaData()
    for spec in TABLE_SPECS:
        columns = [
            sa.Column(
                c.name.lower(),
                _sa_type(c.type),
                primary_key=c.name in spec.primary_key,
                autoincrement=c.identity or c.type == "BIGSERIAL",
                nullable=c.nullable,
                server_default=sa.FetchedValue() if c.default else None,
                **_written_now(c),
            )
            for c in spec.columns
        ]
        sa.Table(spec.name.lower(), metadata, *columns)
    return metadata


METADATA = _build_metadata()
T = METADATA.tables

cfg_pipelines = T["cfg_pipelines"]
cfg_pipeline_dependency = T["cfg_pipeline_dependency"]
cfg_tasks = T["cfg_tasks"]
cfg_task_dependency = T["cfg_task_dependency"]
cfg_task_parameters = T["cfg_task_parameters"]
cfg_business_rules = T["cfg_business_rules"]
aud_pipelines_run_log = T["aud_pipelines_run_log"]
aud_task_run_log = T["aud_task_run_log"]
aud_run_interventions = T["aud_run_interventions"]
aud_pipeline_pauses = T["aud_pipeline_pauses"]
aud_business_rules_run_log = T["aud_business_rules_run_log"]
aud_business_rules_results = T["aud_business_rules_results"]
aud_task_offset_tracker = T["aud_task_offset_tracker"]
aud_column_lineage = T["aud_column_lineage"]
aud_docs_publication = T["aud_docs_publication"]
aud_task_documentation = T["aud_task_documentation"]
aud_dependency_consumption = T["aud_dependency_consumption"]
schema_migrations = T["schema_migrations"]
aud_task_attempts = T["aud_task_attempts"]
aud_gate_decisions = T["aud_gate_decisions"]
aud_actions = T["aud_actions"]
aud_metadata_changes = T["aud_metadata_changes"]
aud_target_hash_version = T["aud_target_hash_version"]
aud_overseers = T["aud_overseers"]
aud_gate_waits = T["aud_gate_waits"]
cfg_api_tokens = T["cfg_api_tokens"]
cfg_users = T["cfg_users"]
aud_ui_sessions = T["aud_ui_sessions"]
aud_alert_deliveries = T["aud_alert_deliveries"]
aud_workers = T["aud_workers"]
cfg_pools = T["cfg_pools"]
