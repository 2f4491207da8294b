"""`validate`: every rule that can be checked before running, read from the Engine DB and the project files.

Nothing is connected but the Engine DB: the warehouse dialect is loaded for its SQL flavour only,
scripts are parsed with `ast`, and no relay is contacted. `validate_metadata` takes an open
connection, so `config plan` and `config apply` can judge rows they have written but not committed.
"""

from __future__ import annotations

import sqlalchemy as sa

from etl_craft.config.model import ConnectorConfig
from etl_craft.engine import reads
from etl_craft.engine.reads.cfg_rows import read_cfg_rows
from etl_craft.services.context import OperationContext
from etl_craft.services.validate.dependencies import check_task_dependencies
from etl_craft.services.validate.email_alerts import check_alerts
from etl_craft.services.validate.findings import FAIL, WARN, Finding, Findings, ValidationReport
from etl_craft.services.validate.parameters import check_parameters
from etl_craft.services.validate.pipelines import check_pipelines
from etl_craft.services.validate.pools import active_pools, check_pools
from etl_craft.services.validate.project import Project
from etl_craft.services.validate.rules import check_business_rules
from etl_craft.services.validate.scripts import check_scripts
from etl_craft.services.validate.sql import check_sql_tasks

__all__ = ["FAIL", "WARN", "Finding", "ValidationReport", "validate", "validate_metadata"]


def validate_metadata(
    conn: sa.Connection, config: ConnectorConfig, pipeline_code: str | None = None
) -> ValidationReport:
    """Judge the metadata the connection sees: every active pipeline, or the one named (MetadataError if none)."""
    scope = None if pipeline_code is None else {reads.find_pipeline(conn, pipeline_code).pipeline_id}
    project = Project.build(read_cfg_rows(conn), config, scope)
    findings = Findings()
    check_pipelines(project, findings)
    check_task_dependencies(project, findings)
    check_parameters(project, findings)
    specs = check_sql_tasks(project, findings)
    check_business_rules(project, findings, specs)
    check_scripts(project, findings)
    check_alerts(project, findings)
    check_pools(project, active_pools(conn), findings)
    return ValidationReport(
        pipelines_checked=len(project.scope),
        tasks_checked=len(project.checked_tasks()),
        findings=findings.sorted(),
    )


def validate(ctx: OperationContext, pipeline_code: str | None = None) -> ValidationReport:
    with ctx.db.snapshot() as conn:
        return validate_metadata(conn, ctx.config, pipeline_code)
