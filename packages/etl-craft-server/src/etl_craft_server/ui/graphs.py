"""A pipeline's task graph as the pipeline page draws it: services.graph_layout nodes and edges from
the graph view, coloured by the selected run's task states."""

from __future__ import annotations

from urllib.parse import quote

from markupsafe import Markup

from etl_craft.services.graph_layout import Edge, Node, layout, render_svg
from etl_craft.services.inspect.grid import GridRun
from etl_craft.services.inspect.pipelines import GraphView
from etl_craft.services.targets.lineage import LineageView


def pipeline_svg(graph: GraphView, selected: GridRun | None) -> Markup:
    code = graph.pipeline.pipeline_code
    cells = {c.task_code: c for c in selected.cells} if selected else {}
    run_path = f"/ui/pipelines/{code}/runs/{selected.run.pipeline_run_id}" if selected else None
    nodes = []
    for task in (t for wave in graph.waves for t in wave):
        cell = cells.get(task)
        detail = None
        if cell and cell.start_date:
            detail = f"started {cell.start_date:%Y-%m-%d %H:%M:%S}, {cell.attempt_count} attempt(s)"
        href = f"{run_path}?task={task}" if run_path else None
        nodes.append(Node(task, task, cell.status if cell else None, href, detail))
    known = {n.key for n in nodes}
    edges = []
    for dep in graph.task_dependencies:
        if dep.depends_on not in known:  # another pipeline's task (PIPE.TASK)
            nodes.append(Node(dep.depends_on, dep.depends_on, None, f"/ui/pipelines/{dep.depends_on.split('.')[0]}"))
            known.add(dep.depends_on)
        edges.append(Edge(dep.depends_on, dep.task_code, dep.dependency_type))
    title = f"Task graph of {code}" + (f", coloured by run {selected.run.pipeline_run_id}" if selected else "")
    return Markup(render_svg(layout(nodes, edges), title, id_prefix=f"dag-{code}"))


def lineage_svg(found: LineageView) -> Markup | None:
    """Tables as nodes, each traced task as edges from its source tables to its target."""
    nodes: dict[str, Node] = {}
    edges = []
    for task in found.tasks:
        for table in (*task.source_tables, task.target):
            nodes.setdefault(table, Node(table, table, None, f"/ui/lineage?table={quote(table)}"))
        edges += [Edge(source, task.target, f"{task.pipeline_code}.{task.task_code}") for source in task.source_tables]
    if not nodes:
        return None
    title = f"Lineage of {found.table}" if found.table else "Lineage of every traced table"
    return Markup(render_svg(layout(nodes.values(), edges), title, id_prefix="lineage"))
