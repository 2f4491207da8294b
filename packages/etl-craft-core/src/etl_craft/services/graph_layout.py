"""A layered drawing of a directed graph, and its SVG: task graphs, pipeline dependencies, lineage.

The layout follows the usual layered method, written here because the libraries that do it
(Graphviz, ELK) are programs or JavaScript, not something a server page can call cheaply:

1. layers: each node sits one layer after its furthest upstream (longest path), left to right;
   edges that would close a cycle are drawn backwards instead of breaking the layout;
2. an edge that spans several layers passes through a hidden point in each layer between, so it
   bends around the nodes instead of crossing them;
3. order within a layer: a few sweeps that sort each layer by the mean position of its neighbours
   in the layer before (then after), which removes most crossings;
4. coordinates: a column per layer as wide as its widest label, so no label is ever clipped, and a
   gap between columns as wide as the widest edge label.

Text is drawn in a monospace font, so a label's width is known exactly from its length. The SVG
has its natural size in pixels (a page puts it in a container that scrolls) and carries its colours
as attributes, so it needs no stylesheet and no script.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from itertools import pairwise

FONT_SIZE = 13
CHAR_WIDTH = FONT_SIZE * 0.6  # a monospace glyph's advance
SMALL_SIZE = 11
SMALL_WIDTH = SMALL_SIZE * 0.6
NODE_PADDING_X = 12
NODE_HEIGHT = 34
ROW_GAP = 18
MIN_COLUMN_GAP = 48
MARGIN = 16
SWEEPS = 4


@dataclass(frozen=True)
class Node:
    key: str
    label: str
    state: str | None = None  # picks the node's colours (STATE_COLOURS); None: neutral
    href: str | None = None  # the node links there when set
    detail: str | None = None  # a tooltip (timing, table, ...)


@dataclass(frozen=True)
class Edge:
    source: str  # the upstream node's key
    target: str
    label: str | None = None  # e.g. the dependency type


@dataclass(frozen=True)
class PlacedNode:
    node: Node
    layer: int
    x: float
    y: float
    width: float
    height: float


@dataclass(frozen=True)
class PlacedEdge:
    edge: Edge
    points: tuple[tuple[float, float], ...]  # from the source's right side to the target's left side
    backwards: bool  # closes a cycle: drawn from right to left


@dataclass(frozen=True)
class Layout:
    nodes: tuple[PlacedNode, ...]
    edges: tuple[PlacedEdge, ...]
    width: float
    height: float


# state -> (fill, stroke, text); each text colour has a contrast of at least 4.5:1 on its fill.
STATE_COLOURS: Mapping[str, tuple[str, str, str]] = {
    "SUCCESS": ("#d7f0dd", "#1e6b34", "#0f3d1c"),
    "FAILED": ("#fbd9dc", "#a3001b", "#5c0010"),
    "RUNNING": ("#d6e6fb", "#0b57b8", "#06305f"),
    "IN-PROGRESS": ("#d6e6fb", "#0b57b8", "#06305f"),
    "QUEUED": ("#ece3fa", "#5b2ca0", "#34155f"),
    "WAITING": ("#fdf0cf", "#8a5a00", "#4d3200"),
    "SKIPPED": ("#e8eaed", "#5f6671", "#2b3038"),
    "CANCELLED": ("#e8eaed", "#5f6671", "#2b3038"),
    "LOST": ("#fde2cc", "#a04500", "#552400"),
    "NOT RUN": ("#ffffff", "#8a929c", "#2b3038"),
}
NEUTRAL = ("#ffffff", "#4a5360", "#1b1f24")
EDGE_COLOUR = "#4a5360"
EDGE_LABEL_COLOUR = "#2b3038"


def text_width(text: str, char_width: float = CHAR_WIDTH) -> float:
    return len(text) * char_width


def _layers(keys: Sequence[str], edges: Sequence[Edge]) -> tuple[dict[str, int], set[int]]:
    """Longest-path layers, and the indexes of edges that close a cycle (found by a depth-first walk)."""
    downstream: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for index, edge in enumerate(edges):
        downstream[edge.source].append((index, edge.target))
    backwards: set[int] = set()
    colour: dict[str, int] = {}  # 1: on the walk's path, 2: done
    order: list[str] = []
    for root in keys:
        if root in colour:
            continue
        stack: list[tuple[str, int]] = [(root, 0)]
        colour[root] = 1
        while stack:
            key, at = stack[-1]
            if at < len(downstream[key]):
                stack[-1] = (key, at + 1)
                index, target = downstream[key][at]
                if colour.get(target) == 1:
                    backwards.add(index)
                elif target not in colour:
                    colour[target] = 1
                    stack.append((target, 0))
            else:
                colour[key] = 2
                order.append(key)
                stack.pop()
    layer = dict.fromkeys(keys, 0)
    upstream: dict[str, list[str]] = defaultdict(list)
    for index, edge in enumerate(edges):
        if index not in backwards:
            upstream[edge.target].append(edge.source)
    for key in reversed(order):  # a topological order of the forward edges
        for source in upstream[key]:
            layer[key] = max(layer[key], layer[source] + 1)
    return layer, backwards


def _order(columns: list[list[str]], links: list[tuple[str, str]]) -> None:
    """Barycentre sweeps over the layers (in place): down using upstream positions, then up."""
    ups: dict[str, list[str]] = defaultdict(list)
    downs: dict[str, list[str]] = defaultdict(list)
    for a, b in links:
        downs[a].append(b)
        ups[b].append(a)

    def sort(column: list[str], neighbours: Mapping[str, list[str]], position: Mapping[str, int]) -> None:
        current = {key: i for i, key in enumerate(column)}

        def centre(key: str) -> float:
            near = [position[n] for n in neighbours[key] if n in position]
            return sum(near) / len(near) if near else current[key]

        column.sort(key=lambda key: (centre(key), current[key]))

    for _ in range(SWEEPS):
        for i in range(1, len(columns)):
            sort(columns[i], ups, {k: j for j, k in enumerate(columns[i - 1])})
        for i in range(len(columns) - 2, -1, -1):
            sort(columns[i], downs, {k: j for j, k in enumerate(columns[i + 1])})


def layout(nodes: Iterable[Node], edges: Iterable[Edge]) -> Layout:
    """Place the nodes left to right by layer; edges to unknown keys are refused (a caller's bug)."""
    by_key = {node.key: node for node in nodes}
    edge_list = list(edges)
    for edge in edge_list:
        if edge.source not in by_key or edge.target not in by_key:
            raise ValueError(f"edge {edge.source!r} -> {edge.target!r} names a node that is not in the graph")
    layer, backwards = _layers(list(by_key), edge_list)
    columns: list[list[str]] = [[] for _ in range(max(layer.values(), default=-1) + 1)]
    for key in by_key:
        columns[layer[key]].append(key)
    # Hidden points: one per layer an edge passes through, so long edges route between nodes.
    chains: dict[int, list[str]] = {}
    links: list[tuple[str, str]] = []
    for index, edge in enumerate(edge_list):
        first, last = sorted((layer[edge.source], layer[edge.target]))
        hidden = [f"\0{index}:{n}" for n in range(first + 1, last)]
        for n, point in zip(range(first + 1, last), hidden, strict=True):
            columns[n].append(point)
        low, high = (edge.source, edge.target) if index not in backwards else (edge.target, edge.source)
        chain = [low, *hidden, high]
        links += list(pairwise(chain))
        chains[index] = chain if index not in backwards else chain[::-1]
    _order(columns, links)

    label_gap = max((text_width(e.label, SMALL_WIDTH) for e in edge_list if e.label), default=0.0)
    column_gap = max(MIN_COLUMN_GAP, label_gap * 1.6 + 24)  # room for labels at spots 0.2 to 0.8
    widths = [
        max((text_width(by_key[k].label) + 2 * NODE_PADDING_X for k in column if k in by_key), default=0.0)
        for column in columns
    ]
    tallest = max((len(column) for column in columns), default=0)
    height = 2 * MARGIN + max(tallest * NODE_HEIGHT + (tallest - 1) * ROW_GAP, 0)
    placed: dict[str, PlacedNode] = {}
    points: dict[str, tuple[float, float]] = {}
    x = float(MARGIN)
    for n, column in enumerate(columns):
        column_height = len(column) * NODE_HEIGHT + (len(column) - 1) * ROW_GAP
        y = (height - column_height) / 2
        for key in column:
            centre_y = y + NODE_HEIGHT / 2
            if key in by_key:
                width = text_width(by_key[key].label) + 2 * NODE_PADDING_X
                left = x + (widths[n] - width) / 2
                placed[key] = PlacedNode(by_key[key], n, left, y, width, NODE_HEIGHT)
            else:
                points[key] = (x + widths[n] / 2, centre_y)
            y += NODE_HEIGHT + ROW_GAP
        x += widths[n] + column_gap
    width = x - column_gap + MARGIN if columns else 2 * MARGIN

    placed_edges = []
    for index, edge in enumerate(edge_list):
        source, target = placed[edge.source], placed[edge.target]
        start = (source.x + source.width, source.y + source.height / 2)
        end = (target.x, target.y + target.height / 2)
        middle = [points[p] for p in chains[index][1:-1]]
        if index in backwards:
            start = (source.x, source.y + source.height / 2)
            end = (target.x + target.width, target.y + target.height / 2)
        placed_edges.append(PlacedEdge(edge, (start, *middle, end), index in backwards))
    ordered = tuple(placed[key] for column in columns for key in column if key in placed)
    return Layout(ordered, tuple(placed_edges), width, float(height))


def _path(points: Sequence[tuple[float, float]]) -> str:
    """Smooth horizontal curves through the points."""
    (x0, y0), rest = points[0], points[1:]
    parts = [f"M{x0:.1f},{y0:.1f}"]
    for x1, y1 in rest:
        bend = (x1 - x0) / 2
        parts.append(f"C{x0 + bend:.1f},{y0:.1f} {x1 - bend:.1f},{y1:.1f} {x1:.1f},{y1:.1f}")
        x0, y0 = x1, y1
    return " ".join(parts)


def _curve_point(start: tuple[float, float], end: tuple[float, float], t: float) -> tuple[float, float]:
    """The point at `t` on the curve _path draws between two points."""
    (x0, y0), (x1, y1) = start, end
    bend = (x1 - x0) / 2
    xs, ys = (x0, x0 + bend, x1 - bend, x1), (y0, y0, y1, y1)
    weights = ((1 - t) ** 3, 3 * t * (1 - t) ** 2, 3 * t * t * (1 - t), t**3)
    return sum(w * v for w, v in zip(weights, xs, strict=True)), sum(w * v for w, v in zip(weights, ys, strict=True))


LABEL_SPOTS = (0.5, 0.3, 0.7, 0.2, 0.8)  # where along its first curve a label may sit, best first
LABEL_HEIGHT = 16


def _edge_labels(edges: Sequence[PlacedEdge]) -> str:
    """Each label on its edge's first curve, at the first spot where it overlaps no label placed before."""
    taken: list[tuple[float, float, float, float]] = []
    drawn = []
    for placed in edges:
        label = placed.edge.label
        if not label:
            continue
        width = text_width(label, SMALL_WIDTH) + 6
        start, end = placed.points[0], placed.points[1]
        box = (0.0, 0.0, 0.0, 0.0)
        for t in LABEL_SPOTS:
            x, y = _curve_point(start, end, t)
            box = (x - width / 2, y - LABEL_HEIGHT / 2, width, LABEL_HEIGHT)
            if not any(_boxes_meet(box, other) for other in taken):
                break
        else:
            x, y = _curve_point(start, end, 0.5)
            box = (x - width / 2, y - LABEL_HEIGHT / 2, width, LABEL_HEIGHT)
        taken.append(box)
        left, top = box[0], box[1]
        drawn.append(
            f'<rect x="{left:.1f}" y="{top:.1f}" width="{width:.1f}" height="{LABEL_HEIGHT}" fill="#ffffff" rx="3"/>'
            f'<text x="{left + width / 2:.1f}" y="{top + 12:.1f}" text-anchor="middle" font-size="{SMALL_SIZE}" '
            f'fill="{EDGE_LABEL_COLOUR}">{escape(label)}</text>'
        )
    return "".join(drawn)


def _boxes_meet(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


def _node(placed: PlacedNode) -> str:
    node = placed.node
    fill, stroke, ink = STATE_COLOURS.get(node.state or "", NEUTRAL)
    tip = node.label + (f" ({node.state})" if node.state else "") + (f": {node.detail}" if node.detail else "")
    body = (
        f"<title>{escape(tip)}</title>"
        f'<rect x="{placed.x:.1f}" y="{placed.y:.1f}" width="{placed.width:.1f}" height="{placed.height:.1f}" '
        f'rx="5" fill="{fill}" stroke="{stroke}" stroke-width="1.5"/>'
        f'<text x="{placed.x + placed.width / 2:.1f}" y="{placed.y + placed.height / 2 + FONT_SIZE * 0.35:.1f}" '
        f'text-anchor="middle" font-size="{FONT_SIZE}" fill="{ink}">{escape(node.label)}</text>'
    )
    state = f' data-state="{escape(node.state)}"' if node.state else ""
    group = f'<g class="graph-node" data-key="{escape(node.key)}"{state}>{body}</g>'
    return f'<a href="{escape(node.href)}">{group}</a>' if node.href else group


def _edge(placed: PlacedEdge, marker: str) -> str:
    dashes = ' stroke-dasharray="5 3"' if placed.backwards else ""
    return (
        f'<g class="graph-edge"><path d="{_path(placed.points)}" fill="none" stroke="{EDGE_COLOUR}" '
        f'stroke-width="1.3"{dashes} marker-end="url(#{marker})"/></g>'
    )


def render_svg(drawn: Layout, title: str, id_prefix: str = "graph") -> str:
    """The layout as an inline SVG element of its natural size, titled for screen readers."""
    marker = f"{id_prefix}-arrow"
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="graph" role="img" aria-labelledby="{id_prefix}-title" '
        f'width="{drawn.width:.0f}" height="{drawn.height:.0f}" viewBox="0 0 {drawn.width:.0f} {drawn.height:.0f}" '
        f'font-family="ui-monospace, SFMono-Regular, Menlo, Consolas, monospace">'
        f'<title id="{id_prefix}-title">{escape(title)}</title>'
        f'<defs><marker id="{marker}" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        f'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{EDGE_COLOUR}"/></marker></defs>'
    )
    edges = "".join(_edge(e, marker) for e in drawn.edges)
    labels = _edge_labels(drawn.edges)
    nodes = "".join(_node(n) for n in drawn.nodes)
    return f"{head}{edges}{labels}{nodes}</svg>"
