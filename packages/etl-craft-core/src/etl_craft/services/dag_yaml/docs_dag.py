"""`generate-yml --docs`: one DAG that rebuilds the catalog site on Docs_site.Schedule (interface §13).

Its single step runs `etl-craft generate-docs` on a worker, whose own config (ETL_CRAFT_CONFIG) gives
the Engine DB and Docs_site.Output, as a pipeline step's config gives its Engine DB. No --output is
written: the loaded Output is a path resolved on the machine that generated the YAML, and a worker
whose project lives elsewhere would write the site to a folder its publish-docs never serves. The
schedule is read in Orchestration.Timezone: Docs_site has no time zone of its own.
"""

from __future__ import annotations

import shlex
from datetime import date
from typing import Any

from etl_craft import __version__
from etl_craft.config.model import DocsSiteSettings, OrchestrationSettings
from etl_craft.services.dag_yaml.airflow_range import TEMPLATES_SINCE, AirflowRange
from etl_craft.services.dag_yaml.build import ACTOR, YAML_VERSION

DOCS_DAG_ID = "etl_craft_docs"
DOCS_STEP = "generate_docs"


def docs_command() -> str:
    return shlex.join([*ACTOR, "etl-craft", "generate-docs"])


def build_docs_dag(
    site: DocsSiteSettings, settings: OrchestrationSettings, start_date: date, airflow: AirflowRange
) -> dict[str, Any]:
    """The catalog DAG; the caller checked that Docs_site.Schedule is set."""
    airflow.require(TEMPLATES_SINCE, "etl-craft generate-yml --docs", "the run_id template")
    return {
        "etl_craft_yaml_version": YAML_VERSION,
        "generated_by": f"etl-craft {__version__}",
        "airflow_version": airflow.text,
        "dag_id": DOCS_DAG_ID,
        "description": "the etl-craft catalog site (etl-craft generate-docs)",
        "schedule": site.schedule if settings.allow_schedule else None,
        "timezone": settings.timezone,
        "start_date": start_date.isoformat(),
        "sla_hours": None,
        "refresh_type": None,
        # A missed rebuild is not worth replaying: the next one writes the same site from the Engine DB.
        "catchup": False,
        "tags": list(dict.fromkeys(["etl-craft", "docs", *settings.tags])),
        "default_args": {
            "retries": settings.retries,
            "retry_delay_minutes": settings.retry_delay_minutes,
            "depends_on_past": False,  # one failed rebuild must not stop the next
            "email_on_failure": settings.email_on_failure,
            "email": list(settings.email_recipients),
        },
        "max_active_runs": 1,
        "tasks": [
            {
                "task_id": DOCS_STEP,
                "kind": "docs",
                "command": docs_command(),
                "depends_on": [],
                "trigger_rule": "all_success",
            }
        ],
    }
