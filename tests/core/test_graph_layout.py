"""The layered layout and its SVG: layers follow edges, nothing overlaps, no label is clipped."""

from __future__ import annotations

import itertools
import re
import xml.etree.ElementTree as ET

import pytest

from etl_craft.services.graph_layout import (
    CHAR_WIDTH,
    SMALL_WIDTH,
    STATE_COLOURS,
    Edge,
    Layout,
    Node,
    layout,
    render_svg,
)

pytestmark = pytest.mark.unit
SVG = "{http://www.w3.org/2000/svg}"


def _by_key(drawn: Layout) -> dict[str, object]:
    return {p.node.key: p for p in drawn.nodes}


def _overlap(a, b) -> bool:  # type: ignore[no-untyped-def]
    return a.x < b.x + b.width and b.x < a.x + a.width and a.y < b.y + b.height and b.y < a.y + a.height


def test_each_node_sits_one_layer_after_its_furthest_upstream() -> None:
    nodes = [Node(k, k) for k in "abcde"]
    edges = [Edge("a", "b"), Edge("b", "c"), Edge("a", "c"), Edge("d", "c"), Edge("c", "e")]
    placed = _by_key(layout(nodes, edges))
    assert {k: p.layer for k, p in placed.items()} == {"a": 0, "d": 0, "b": 1, "c": 2, "e": 3}  # type: ignore[attr-defined]
    for edge in edges:  # every edge runs left to right
        assert placed[edge.source].x + placed[edge.source].width < placed[edge.target].x  # type: ignore[attr-defined]


def test_no_two_nodes_overlap_and_all_fit_inside_the_drawing() -> None:
    nodes = [Node(f"t{i}", f"task_{i}" * (1 + i % 3)) for i in range(30)]
    edges = [Edge(f"t{i}", f"t{j}", "SUCCESS") for i in range(30) for j in (i * 2 + 1, i * 3 + 2) if j < 30]
    drawn = layout(nodes, edges)
    assert len(drawn.nodes) == 30
    for a, b in itertools.combinations(drawn.nodes, 2):
        assert not _overlap(a, b), (a.node.key, b.node.key)
    for p in drawn.nodes:
        assert p.x >= 0 and p.y >= 0 and p.x + p.width <= drawn.width and p.y + p.height <= drawn.height


def test_a_long_label_widens_its_node_and_its_column_instead_of_being_clipped() -> None:
    long = "load_the_customer_dimension_with_history"
    drawn = layout([Node("a", "a"), Node("b", long), Node("c", "c")], [Edge("a", "b"), Edge("b", "c")])
    placed = _by_key(drawn)
    assert placed["b"].width >= len(long) * CHAR_WIDTH + 2  # type: ignore[attr-defined]
    assert placed["c"].x > placed["b"].x + placed["b"].width  # type: ignore[attr-defined]
    assert drawn.width >= placed["c"].x + placed["c"].width  # type: ignore[attr-defined]


def test_the_gap_between_layers_holds_the_widest_edge_label() -> None:
    label = "HAS_DATA_FROM_ANOTHER_PIPELINE"
    placed = _by_key(layout([Node("a", "a"), Node("b", "b")], [Edge("a", "b", label)]))
    gap = placed["b"].x - (placed["a"].x + placed["a"].width)  # type: ignore[attr-defined]
    assert gap >= len(label) * SMALL_WIDTH + 6


def test_ordering_removes_a_crossing_that_the_input_order_has() -> None:
    # Input order puts x above y and q above p, while x feeds p and y feeds q: a crossing.
    nodes = [Node("x", "x"), Node("y", "y"), Node("q", "q"), Node("p", "p")]
    placed = _by_key(layout(nodes, [Edge("x", "p"), Edge("y", "q")]))
    assert (placed["x"].y < placed["y"].y) == (placed["p"].y < placed["q"].y)  # type: ignore[attr-defined]


def test_a_long_edge_bends_through_each_layer_it_passes() -> None:
    nodes = [Node(k, k) for k in "abcd"]
    drawn = layout(nodes, [Edge("a", "b"), Edge("b", "c"), Edge("c", "d"), Edge("a", "d")])
    long = next(e for e in drawn.edges if (e.edge.source, e.edge.target) == ("a", "d"))
    assert len(long.points) == 4  # start, a point in layers 1 and 2, end
    placed = _by_key(drawn)
    for x, y in long.points[1:-1]:
        assert not any(p.x <= x <= p.x + p.width and p.y <= y <= p.y + p.height for p in placed.values())  # type: ignore[attr-defined]


def test_a_cycle_is_drawn_with_a_backwards_edge_instead_of_hanging() -> None:
    drawn = layout([Node("a", "a"), Node("b", "b")], [Edge("a", "b"), Edge("b", "a", "loop")])
    assert [e.backwards for e in drawn.edges] == [False, True]
    assert sorted(p.layer for p in drawn.nodes) == [0, 1]


def test_an_edge_to_an_unknown_node_is_refused() -> None:
    with pytest.raises(ValueError, match="'a' -> 'zz'"):
        layout([Node("a", "a")], [Edge("a", "zz")])


def test_the_svg_has_its_natural_size_states_links_and_escaped_labels() -> None:
    nodes = [
        Node("a", "extract<script>", state="SUCCESS", href="/ui/x?a=1&b=2", detail="2 s"),
        Node("b", "load", state="FAILED"),
        Node("c", "report"),
    ]
    drawn = layout(nodes, [Edge("a", "b", "SUCCESS"), Edge("b", "c", "ALWAYS")])
    svg = render_svg(drawn, "the sales graph", id_prefix="sales")
    root = ET.fromstring(svg)  # well-formed XML: nothing unescaped
    assert (
        root.get("width") == f"{drawn.width:.0f}" and root.get("viewBox") == f"0 0 {drawn.width:.0f} {drawn.height:.0f}"
    )
    assert root.get("role") == "img" and root.find(f"{SVG}title").text == "the sales graph"  # type: ignore[union-attr]
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert texts == ["SUCCESS", "ALWAYS", "extract<script>", "load", "report"]
    groups = {g.get("data-key"): g for g in root.iter(f"{SVG}g") if g.get("class") == "graph-node"}
    assert groups["b"].find(f"{SVG}rect").get("fill") == STATE_COLOURS["FAILED"][0]  # type: ignore[union-attr]
    assert groups["a"].get("data-state") == "SUCCESS" and groups["c"].get("data-state") is None
    links = [a.get("href") for a in root.iter(f"{SVG}a")]
    assert links == ["/ui/x?a=1&b=2"]
    assert "<script>" not in svg and re.search(r"<title>extract&lt;script&gt; \(SUCCESS\): 2 s</title>", svg)


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


@pytest.mark.parametrize("state", sorted(STATE_COLOURS))
def test_every_states_label_meets_contrast_aa_on_its_fill(state: str) -> None:
    fill, _stroke, ink = STATE_COLOURS[state]
    light, dark = sorted((_luminance(fill), _luminance(ink)), reverse=True)
    assert (light + 0.05) / (dark + 0.05) >= 4.5


def test_edge_labels_leaving_one_node_do_not_cover_each_other() -> None:
    nodes = [Node("hub", "hub"), *(Node(f"t{i}", f"target_{i}") for i in range(5))]
    edges = [Edge("hub", f"t{i}", "SUCCESS") for i in range(5)]
    root = ET.fromstring(render_svg(layout(nodes, edges), "a hub"))
    boxes = [
        tuple(float(r.get(a)) for a in ("x", "y", "width", "height"))  # type: ignore[arg-type]
        for r in root.iter(f"{SVG}rect")
        if r.get("height") == "16"
    ]
    assert len(boxes) == 5
    for a, b in itertools.combinations(boxes, 2):
        assert not (a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3])
