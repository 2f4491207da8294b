"""The catalog's SVG graphs, drawn with the shared layered layout (services.graph_layout)."""

from __future__ import annotations

from typing import Any

from etl_craft.services.graph_layout import Edge, Node, layout, render_svg

MAX_LINEAGE_NODES = 200  # a bigger lineage stays a table only: a drawing that size helps nobody


def task_graph(pipeline_code: str, tasks: list[dict[str, Any]], edges: list[dict[str, Any]]) -> str:
    """The pipeline's tasks coloured by their last run, with the tasks of other pipelines they wait on."""
    nodes = [
        Node(
            task["code"], task["code"], (task["last_run"] or {}).get("status"), f"#task-{task['code']}", task["handler"]
        )
        for task in tasks
    ]
    known = {task["code"] for task in tasks}
    for edge in edges:
        if edge["from"] not in known:
            known.add(edge["from"])
            href = f"../{edge['from_href']}" if edge["from_href"] else None
            nodes.append(Node(edge["from"], edge["from"], None, href, "a task of another pipeline"))
    drawn = layout(nodes, [Edge(e["from"], e["to"], e["type"]) for e in edges])
    return render_svg(drawn, f"Task dependencies of {pipeline_code}", id_prefix="tasks")


def lineage_graph(table: str, columns: list[dict[str, Any]]) -> str:
    """Source columns to this table's columns; a derived column's edge carries its expression."""
    nodes: dict[str, Node] = {}
    edges = []
    for column in columns:
        target = f"{table}.{column['column']}"
        nodes.setdefault(target, Node(target, column["column"], None, f"#col-{column['column']}", table))
        if column["source"]:
            href = f"../{column['source_href']}" if column["source_href"] else None
            nodes.setdefault(column["source"], Node(column["source"], column["source"], None, href))
            how = column["how"]
            edges.append(Edge(column["source"], target, None if how == "copy" else how[:40]))
    if not edges or len(nodes) > MAX_LINEAGE_NODES:
        return ""
    return render_svg(layout(nodes.values(), edges), f"Column lineage of {table}", id_prefix="lineage")
