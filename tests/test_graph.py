"""The memory graph: edges from links, wikilinks, supersedes and co-occurrence; export."""
from __future__ import annotations

import io
import xml.etree.ElementTree as ET

from memrepo.lifecycle.graph import Node, build_graph, cooccur_strength, wikilinks

NS = "{http://graphml.graphdrawing.org/xmlns}"

MEMORIES = [
    Node("mem_arch", weight=0.9, layer="L3",
         body="Core architecture principle: files are canonical, the index is derived."),
    Node("mem_index", links=("mem_arch",), body="Rebuild the index from files; see [[mem_arch]]."),
    Node("mem_deploy", body="Deploy steps follow [[mem_index|the index rule]] and [[mem_ghost]]."),
    Node("mem_theme_v2", supersedes=("mem_theme_v1",), body="用户偏好深色模式"),
    Node("mem_theme_v1", status="superseded", superseded_by=("mem_theme_v2",),
         body="User prefers light mode"),
    Node('odd "id"\nwith <xml> & quotes\\', links=("mem_arch",)),
]


def kinds(graph):
    return {(e.source, e.target, e.kind) for e in graph.edges}


def test_edges_from_links_wikilinks_and_supersedes():
    graph = build_graph(MEMORIES)
    assert ("mem_index", "mem_arch", "link") in kinds(graph)
    assert ("mem_index", "mem_arch", "wikilink") not in kinds(graph)  # already a link
    assert ("mem_deploy", "mem_index", "wikilink") in kinds(graph)
    supersedes = [e for e in graph.edges if e.kind == "supersedes"]
    assert [(e.source, e.target, e.strength) for e in supersedes] == [
        ("mem_theme_v2", "mem_theme_v1", 0.5)]  # recorded on both sides, counted once


def test_unknown_targets_are_dangling_not_errors():
    graph = build_graph(MEMORIES)
    assert [(e.source, e.target) for e in graph.dangling] == [("mem_deploy", "mem_ghost")]
    assert graph.degree("mem_deploy") == 2


def test_cooccurrence_edges_grow_with_count_and_are_capped():
    graph = build_graph(MEMORIES, cooccurrence=[("mem_deploy", "mem_theme_v2", 3)])
    pair = {(e.source, e.target): e.strength for e in graph.edges if e.kind == "cooccur"}
    assert pair == {("mem_deploy", "mem_theme_v2"): 0.4, ("mem_theme_v2", "mem_deploy"): 0.4}
    assert cooccur_strength(1) < cooccur_strength(3) < cooccur_strength(1000) == 0.8
    assert cooccur_strength(0) == 0.0


def test_neighbours_in_and_out():
    graph = build_graph(MEMORIES)
    around = graph.neighbours("mem_index")
    assert [(n.id, n.direction, n.kind) for n in around] == [
        ("mem_deploy", "in", "wikilink"), ("mem_arch", "out", "link")]
    assert {n.id for n in graph.neighbours("mem_arch")} == {
        "mem_index", 'odd "id"\nwith <xml> & quotes\\'}
    assert graph.neighbours("nobody") == ()


def test_wikilink_forms():
    assert wikilinks("a [[x]] b [[y|label]] c [[z#part]] [[x]] [[ ]]") == ("x", "y", "z")


def test_graphml_parses_and_is_deterministic(tmp_path):
    text = build_graph(MEMORIES).to_graphml()
    assert text == build_graph(list(reversed(MEMORIES))).to_graphml()
    root = ET.fromstring(text)
    ids = [n.get("id") for n in root.iter(f"{NS}node")]
    assert ids == sorted(ids) and "mem_ghost" in ids and 'odd "id"\nwith <xml> & quotes\\' in ids
    edges = {(e.get("source"), e.get("target")) for e in root.iter(f"{NS}edge")}
    assert ("mem_deploy", "mem_ghost") in edges
    path = tmp_path / "g.graphml"
    build_graph(MEMORIES).to_graphml(path)
    assert path.read_text(encoding="utf-8") == text


def test_dot_escapes_and_is_deterministic():
    stream = io.StringIO()
    text = build_graph(MEMORIES).to_dot(stream)
    assert stream.getvalue() == text == build_graph(list(reversed(MEMORIES))).to_dot()
    assert '"odd \\"id\\"\\nwith <xml> & quotes\\\\"' in text
    assert '"mem_index" -> "mem_arch" [kind="link", weight="1.0"];' in text
    assert text.startswith("digraph memories {") and text.rstrip().endswith("}")
