"""The core commands, in the order `etl-craft --help` lists them."""

from __future__ import annotations

from etl_craft.cli.commands.attempts import ATTEMPT, ATTEMPT_LOG, TASK_RUN
from etl_craft.cli.commands.catalog import DOCS_VERSION, GENERATE_DOCS, PUBLISH_DOCS
from etl_craft.cli.commands.clone import CLONE
from etl_craft.cli.commands.config import CONFIG
from etl_craft.cli.commands.demo import DEMO
from etl_craft.cli.commands.engine_db import DOCTOR, INIT_DB, MIGRATE, SETUP
from etl_craft.cli.commands.explain import EXPLAIN
from etl_craft.cli.commands.generate_yml import GENERATE_YML
from etl_craft.cli.commands.history import AUDIT, HISTORY
from etl_craft.cli.commands.inspect import GRAPH, LIST, STEPS
from etl_craft.cli.commands.interventions import CANCEL, MARK, RECONCILE, REOPEN
from etl_craft.cli.commands.pause import PAUSE, RESUME
from etl_craft.cli.commands.purge import PURGE
from etl_craft.cli.commands.run import RUN
from etl_craft.cli.commands.status import STATUS
from etl_craft.cli.commands.targets import LINEAGE, REHASH, UPGRADE_TARGETS
from etl_craft.cli.commands.validate import VALIDATE
from etl_craft.cli.framework import Command

CORE_COMMANDS: tuple[Command, ...] = (
    RUN,
    MARK,
    CANCEL,
    REOPEN,
    RECONCILE,
    PURGE,
    REHASH,
    UPGRADE_TARGETS,
    PAUSE,
    RESUME,
    LIST,
    GRAPH,
    STEPS,
    STATUS,
    EXPLAIN,
    TASK_RUN,
    ATTEMPT,
    ATTEMPT_LOG,
    HISTORY,
    AUDIT,
    LINEAGE,
    DOCS_VERSION,
    GENERATE_DOCS,
    PUBLISH_DOCS,
    GENERATE_YML,
    CLONE,
    VALIDATE,
    DOCTOR,
    SETUP,
    INIT_DB,
    MIGRATE,
    CONFIG,
    DEMO,
)
