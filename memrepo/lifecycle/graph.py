"""The memory graph: which memory points at which, and how strongly (influence decay lends
activity along it).

Built from plain values so the vault layer (files) and the index (co-occurrence statistics)
can both feed it. Edges are directed, ``source → target``, read "source relies on target":

* ``link``: the target is in the source's ``links`` front matter (strength 1.0);
* ``wikilink``: ``[[target]]`` appears in the source's body (1.0; a target already in
  ``links`` is not counted twice);
* ``supersedes``: the newer version points at the one it replaced (0.5);
* ``cooccur``: both were recalled in the same context ``count`` times (both directions,
  strength growing with the logarithm of the count, capped at 0.8).

A link to an unknown id is kept in :attr:`Graph.dangling` and exported, never a crash.
"""
from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from memrepo.model import check_choice

STRENGTHS = {"link": 1.0, "wikilink": 1.0, "supersedes": 0.5}
COOCCUR_UNIT = 0.2  # strength of one co-occurrence; doubles with each doubling of the count
COOCCUR_CAP = 0.8  # seen together is weaker evidence than written down as a link
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:[#|][^\[\]\n]*)?\]\]")
_GRAPHML_NS = "http://graphml.graphdrawing.org/xmlns"


@dataclass(frozen=True)
class Node:
    """A memory as the graph sees it (built by the vault layer from front matter and body)."""

    id: str
    status: str = "active"
    links: tuple[str, ...] = ()
    body: str = ""
    supersedes: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()
    weight: float = 0.0
    layer: str | None = None
    created: str | None = None
    expires: str | None = None


@dataclass(frozen=True)
class Edge:
    """A directed edge: ``source`` relies on ``target`` with ``strength`` (0 < s ≤ 1)."""

    source: str
    target: str
    kind: str
    strength: float


@dataclass(frozen=True)
class Neighbour:
    """An edge seen from one memory: ``direction`` is ``in`` (other → me) or ``out``."""

    id: str
    direction: str
    kind: str
    strength: float


@dataclass(frozen=True)
class Graph:
    """Nodes by id, edges sorted, and the edges whose target is not a known memory."""

    nodes: dict[str, Node]
    edges: tuple[Edge, ...]
    dangling: tuple[Edge, ...]
    _out: dict[str, tuple[Edge, ...]] = field(repr=False, compare=False)
    _in: dict[str, tuple[Edge, ...]] = field(repr=False, compare=False)
    _dangling_from: dict[str, int] = field(repr=False, compare=False)

    def out_edges(self, node_id: str) -> tuple[Edge, ...]:
        """Edges leaving ``node_id`` (to known memories)."""
        return self._out.get(node_id, ())

    def in_edges(self, node_id: str) -> tuple[Edge, ...]:
        """Edges arriving at ``node_id``."""
        return self._in.get(node_id, ())

    def neighbours(self, node_id: str) -> tuple[Neighbour, ...]:
        """Every edge touching ``node_id``, in then out, each sorted by id and kind."""
        ins = [Neighbour(e.source, "in", e.kind, e.strength) for e in self.in_edges(node_id)]
        outs = [Neighbour(e.target, "out", e.kind, e.strength)
                for e in self.out_edges(node_id)]
        return tuple(ins + outs)

    def degree(self, node_id: str) -> int:
        """Number of edges touching ``node_id``, dangling ones included."""
        return (len(self.in_edges(node_id)) + len(self.out_edges(node_id))
                + self._dangling_from.get(node_id, 0))

    def to_graphml(self, target: str | Path | IO[str] | None = None) -> str:
        """GraphML text (also written to a path or text stream when given)."""
        return _emit(graphml_text(self), target)

    def to_dot(self, target: str | Path | IO[str] | None = None) -> str:
        """Graphviz DOT text (also written to a path or text stream when given)."""
        return _emit(dot_text(self), target)

    def export(self, target: str | Path, fmt: str | None = None) -> str:
        """Write the graph to ``target`` as ``fmt`` (``graphml`` or ``dot``; default: ``dot``
        for a ``.dot``/``.gv`` file, else ``graphml``); returns the format written."""
        kind = fmt or ("dot" if Path(target).suffix in (".dot", ".gv") else "graphml")
        check_choice("format", kind, GRAPH_FORMATS)
        (self.to_dot if kind == "dot" else self.to_graphml)(target)
        return kind


GRAPH_FORMATS = ("graphml", "dot")


def build_graph(memories: Iterable[Node],
                cooccurrence: Iterable[tuple[str, str, int]] = ()) -> Graph:
    """The memory graph of ``memories`` plus co-occurrence pairs ``(a, b, count)``.

    Duplicate memory ids keep the first; self-edges are dropped; parallel edges of one kind
    keep the strongest.
    """
    nodes: dict[str, Node] = {}
    for node in memories:
        nodes.setdefault(node.id, node)
    best: dict[tuple[str, str, str], float] = {}
    for edge in _raw_edges(nodes.values(), cooccurrence):
        if edge.source == edge.target:
            continue
        key = (edge.source, edge.target, edge.kind)
        best[key] = max(best.get(key, 0.0), edge.strength)
    edges: list[Edge] = []
    dangling: list[Edge] = []
    for (source, target, kind), strength in sorted(best.items()):
        if source not in nodes:
            continue  # co-occurrence of a memory that no longer exists: nothing to say
        (edges if target in nodes else dangling).append(Edge(source, target, kind, strength))
    return _index(nodes, edges, dangling)


def _raw_edges(nodes: Iterable[Node],
               cooccurrence: Iterable[tuple[str, str, int]]) -> Iterable[Edge]:
    """Every edge the inputs imply, before de-duplication."""
    for node in nodes:
        links = tuple(dict.fromkeys(str(t) for t in node.links))
        for target in links:
            yield Edge(node.id, target, "link", STRENGTHS["link"])
        for target in wikilinks(node.body):
            if target not in links:
                yield Edge(node.id, target, "wikilink", STRENGTHS["wikilink"])
        for old in node.supersedes:
            yield Edge(node.id, str(old), "supersedes", STRENGTHS["supersedes"])
        for new in node.superseded_by:  # the same fact recorded on the other side
            yield Edge(str(new), node.id, "supersedes", STRENGTHS["supersedes"])
    for a, b, count in cooccurrence:
        strength = cooccur_strength(count)
        if strength > 0:
            yield Edge(str(a), str(b), "cooccur", strength)
            yield Edge(str(b), str(a), "cooccur", strength)


def wikilinks(body: str) -> tuple[str, ...]:
    """Targets of ``[[id]]``, ``[[id|label]]`` and ``[[id#section]]`` in order, once each."""
    found = (m.group(1).strip() for m in _WIKILINK.finditer(body or ""))
    return tuple(dict.fromkeys(t for t in found if t))


def cooccur_strength(count: int) -> float:
    """Strength of a co-occurrence seen ``count`` times: logarithmic growth, capped."""
    if count <= 0:
        return 0.0
    return round(min(COOCCUR_CAP, COOCCUR_UNIT * math.log2(1 + count)), 4)


def _index(nodes: dict[str, Node], edges: list[Edge], dangling: list[Edge]) -> Graph:
    """Freeze the graph with per-node edge lists for linear-time traversal."""
    outs: dict[str, list[Edge]] = defaultdict(list)
    ins: dict[str, list[Edge]] = defaultdict(list)
    for edge in edges:
        outs[edge.source].append(edge)
        ins[edge.target].append(edge)
    dangling_from: dict[str, int] = defaultdict(int)
    for edge in dangling:
        dangling_from[edge.source] += 1
    order = lambda e: (e.source, e.target, e.kind)  # noqa: E731 - a sort key, named once
    return Graph(nodes=dict(sorted(nodes.items())), edges=tuple(edges),
                 dangling=tuple(dangling),
                 _out={k: tuple(sorted(v, key=order)) for k, v in outs.items()},
                 _in={k: tuple(sorted(v, key=order)) for k, v in ins.items()},
                 _dangling_from=dict(dangling_from))


# --- export ----------------------------------------------------------------------------------

def graphml_text(graph: Graph) -> str:
    """The graph as GraphML: sorted nodes (dangling targets flagged ``missing``), sorted edges."""
    root = ET.Element("graphml", xmlns=_GRAPHML_NS)
    for key, owner, name, kind in (("d0", "node", "status", "string"),
                                   ("d1", "node", "weight", "double"),
                                   ("d2", "node", "layer", "string"),
                                   ("d3", "edge", "kind", "string"),
                                   ("d4", "edge", "strength", "double")):
        ET.SubElement(root, "key", {"id": key, "for": owner, "attr.name": name,
                                    "attr.type": kind})
    body = ET.SubElement(root, "graph", id="memories", edgedefault="directed")
    for node_id, status, weight, layer in _node_rows(graph):
        element = ET.SubElement(body, "node", id=node_id)
        _data(element, "d0", status)
        _data(element, "d1", repr(float(weight)))
        if layer:
            _data(element, "d2", layer)
    for n, edge in enumerate(graph.edges + graph.dangling):
        element = ET.SubElement(body, "edge", id=f"e{n}", source=edge.source,
                                target=edge.target)
        _data(element, "d3", edge.kind)
        _data(element, "d4", repr(float(edge.strength)))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def dot_text(graph: Graph) -> str:
    """The graph as Graphviz DOT; every id is quoted and escaped."""
    lines = ["digraph memories {"]
    for node_id, status, weight, _layer in _node_rows(graph):
        style = ', style="dashed"' if status == "missing" else ""
        lines.append(f"  {_quote(node_id)} [status={_quote(status)}, "
                     f"weight={_quote(repr(float(weight)))}{style}];")
    for edge in graph.edges + graph.dangling:
        lines.append(f"  {_quote(edge.source)} -> {_quote(edge.target)} "
                     f"[kind={_quote(edge.kind)}, weight={_quote(repr(float(edge.strength)))}];")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _node_rows(graph: Graph) -> list[tuple[str, str, float, str | None]]:
    """(id, status, weight, layer) for every node and every missing link target, sorted."""
    rows = [(n.id, n.status, n.weight, n.layer) for n in graph.nodes.values()]
    missing = sorted({e.target for e in graph.dangling})
    rows += [(m, "missing", 0.0, None) for m in missing]
    return sorted(rows, key=lambda r: r[0])


def _data(element: ET.Element, key: str, value: str) -> None:
    ET.SubElement(element, "data", key=key).text = value


def _quote(text: str) -> str:
    """A DOT double-quoted string: backslashes, quotes and line breaks escaped."""
    escaped = (str(text).replace("\\", "\\\\").replace('"', '\\"')
               .replace("\r", "\\r").replace("\n", "\\n"))
    return f'"{escaped}"'


def _emit(text: str, target: str | Path | IO[str] | None) -> str:
    """Write ``text`` to a path or stream when one is given; return it either way."""
    if target is None:
        return text
    if hasattr(target, "write"):
        target.write(text)
    else:
        Path(target).write_text(text, encoding="utf-8")
    return text
