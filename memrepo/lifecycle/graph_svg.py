"""A neighbourhood of the memory graph drawn as SVG, server-side and without a layout library.

The centre sits in the middle; direct neighbours on a ring around it, strongest first from the
top, clockwise (on two alternating radii when there are many, so labels do not collide); their
own neighbours on an outer ring beside the neighbour they hang from. A node's colour is its
layer, its size its influence activity; a memory the next decay run would archive is faded and
dashed, one that is no longer active is hollow. An edge's width is its strength and its stroke
its kind (link, wikilink, supersedes, co-recall). Every label is the memory's summary, escaped;
the full summary and the numbers are in the node's tooltip. Colours are exported for a legend.
"""
from __future__ import annotations

import math
from html import escape
from urllib.parse import quote

from memrepo.lifecycle.graph_view import GraphLink, GraphNode, GraphView

WIDTH, HEIGHT = 960, 680
LAYER_COLOURS = {"L1": "#4e79a7", "L2": "#59a14f", "L3": "#f28e2b", "L4": "#b07aa1", "": "#6b6b6b"}
EDGE_STYLES = {"link": ("#8a8f98", ""), "wikilink": ("#8a8f98", "5 3"), "supersedes": ("#e15759", "7 4"),
               "cooccur": ("#3f9f9a", "2 4"), "subject": ("#c9ccd1", "")}
LABEL_CHARS = 16


def graph_legend() -> dict[str, dict]:
    """The colours and strokes :func:`graph_svg` draws with, for a legend beside the picture."""
    return {"layers": {k: v for k, v in LAYER_COLOURS.items() if k}, "edges": {k: v for k, v in EDGE_STYLES.items() if k != "subject"}}


def graph_svg(view: GraphView, *, href: str | None = None) -> str:
    """The view as a standalone SVG document; with ``href``, each memory links to
    ``href + id`` (``/memory/`` for the UI's memory pages)."""
    positions = layout(view)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
             f'class="memory-graph" aria-label="{escape(view.centre)}">']
    for link in sorted(view.links, key=lambda e: e.strength):
        if link.source in positions and link.target in positions:
            parts.append(_edge(link, positions))
    for node in sorted(view.nodes, key=lambda n: -n.ring):
        parts.append(_node(node, positions[node.id], href))
    parts.append("</svg>")
    return "\n".join(parts)


def layout(view: GraphView) -> dict[str, tuple[float, float]]:
    """Where each node goes: (x, y) in the SVG's coordinates."""
    cx, cy = WIDTH / 2, HEIGHT / 2
    pos = {n.id: (cx, cy) for n in view.nodes if n.ring == 0}
    first = [n.id for n in view.nodes if n.ring == 1]
    many = len(first) > 12
    angles: dict[str, float] = {}
    for k, node_id in enumerate(first):
        angle = -math.pi / 2 + 2 * math.pi * k / max(len(first), 1)
        radius = (170 if k % 2 else 235) if many else 200
        angles[node_id] = angle
        pos[node_id] = (cx + radius * math.cos(angle), cy + radius * math.sin(angle))
    children: dict[str, list[str]] = {}
    for node in view.nodes:
        if node.ring == 2:
            children.setdefault(_parent(node.id, view.links, angles), []).append(node.id)
    for parent, kids in children.items():
        base = angles.get(parent, 0.0)
        spread = 0.22
        for k, node_id in enumerate(kids):
            angle = base + spread * (k - (len(kids) - 1) / 2)
            pos[node_id] = (cx + 305 * math.cos(angle), cy + 305 * math.sin(angle) * 0.92)
    return pos


def _parent(node_id: str, links: tuple[GraphLink, ...], first: dict[str, float]) -> str:
    ends = [(e.target if e.source == node_id else e.source, e.strength) for e in links if node_id in (e.source, e.target)]
    best = sorted((-strength, other) for other, strength in ends if other in first)
    return best[0][1] if best else next(iter(first), "")


def _edge(link: GraphLink, pos: dict[str, tuple[float, float]]) -> str:
    (x1, y1), (x2, y2) = pos[link.source], pos[link.target]
    colour, dash = EDGE_STYLES.get(link.kind, EDGE_STYLES["link"])
    width = 1 + 5 * max(0.0, min(1.0, link.strength))
    title = escape(f"{link.source} → {link.target}: {link.kind}, strength {link.strength:.2f}")
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{colour}" '
            f'stroke-width="{width:.1f}" stroke-linecap="round"' + (f' stroke-dasharray="{dash}"' if dash else "")
            + f' opacity="0.8"><title>{title}</title></line>')


def _node(node: GraphNode, at: tuple[float, float], href: str | None) -> str:
    x, y = at
    colour = LAYER_COLOURS.get(node.layer, LAYER_COLOURS[""])
    activity = max(0.0, min(1.0, node.activity or 0.0))
    radius = 24.0 if node.ring == 0 else 9 + 10 * activity
    hollow = node.status not in ("active", "")
    fill = "#ffffff" if hollow else colour
    style = ' stroke-dasharray="3 3"' if node.cold else ""
    opacity = 0.45 if node.cold else 1.0
    label = node.summary if len(node.summary) <= LABEL_CHARS else node.summary[:LABEL_CHARS - 1] + "…"
    numbers = [node.layer, node.kind, node.status] + ([f"activity {node.activity:.2f}"] if node.activity is not None else [])
    if node.cold:
        numbers.append("cold: decay would archive it")
    tip = escape(f"{node.id}: {node.summary}\n" + ", ".join(filter(None, numbers)))
    weight = "700" if node.ring == 0 else "400"
    shape = (f'<g class="node ring{node.ring}" opacity="{opacity}"><title>{tip}</title>'
             f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{radius:.1f}" fill="{fill}" stroke="{colour}" stroke-width="3"{style}/>'
             f'<text x="{x:.1f}" y="{y + radius + 15:.1f}" text-anchor="middle" font-size="13" font-weight="{weight}" '
             f'fill="#1f2328" stroke="#ffffff" stroke-width="4" paint-order="stroke">{escape(label)}</text></g>')
    if href is None or node.kind == "subject":
        return shape
    return f'<a href="{escape(href + quote(node.id, safe=""))}">{shape}</a>'
