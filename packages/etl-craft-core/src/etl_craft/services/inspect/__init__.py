"""Read-only inspection: list, graph, steps, status, history and audit. Nothing here writes, and no
inspection records an AUD_ACTIONS row."""

from etl_craft.services.inspect.history import audit, parse_since, run_history
from etl_craft.services.inspect.pipelines import list_pipelines, pipeline_graph, pipeline_steps
from etl_craft.services.inspect.status import run_status

__all__ = ["audit", "list_pipelines", "parse_since", "pipeline_graph", "pipeline_steps", "run_history", "run_status"]
