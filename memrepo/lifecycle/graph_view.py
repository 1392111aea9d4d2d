"""The memory graph around one memory or one subject, cut to what a person can take in.

:func:`graph_around` picks the neighbourhood: for a memory, its strongest direct neighbours,
then their strongest neighbours while room is left; for a subject, that subject's memories
(active ones first, most active first) and the edges between them. Each node carries what
influence decay thinks of it (its activity score and whether the next decay run would archive
it), so the picture shows what is alive and what is fading. A neighbourhood larger than
``limit`` is cut to the strongest and says how many were left out. The whole graph behind it
reads every memory on main (about 40 s at 100,000 memories), so a long-running reader
(``memrepo ui``) keeps it for the commit it was read at, for a few minutes.

:func:`neighbours` is the cheap answer a memory page needs (no whole-graph build): the memories
this one points at and the memories whose files mention its id (links, ``[[wikilinks]]``,
``cites``, ``supersedes``), found with one fixed-string ``git grep``.
"""
from __future__ import annotations

import datetime as dt
import re
import threading
import time
from dataclasses import dataclass
from typing import Any, Mapping

from memrepo.errors import NotFound, UsageError
from memrepo.model import MEMORY_ROOTS, Memory
from memrepo.store import git
from memrepo.store.checks import check_bytes
from memrepo.store.vault import Vault

DEFAULT_LIMIT = 24
WHOLE_SECONDS = 600        # how long the whole graph of one commit is kept (recall statistics move too)


@dataclass(frozen=True)
class GraphNode:
    id: str
    summary: str
    layer: str
    kind: str
    status: str
    ring: int                  # 0 the centre, 1 direct neighbours, 2 their neighbours
    activity: float | None     # influence decay's score (None for a subject's centre)
    cold: bool                 # the next decay run would archive it


@dataclass(frozen=True)
class GraphLink:
    source: str
    target: str
    kind: str
    strength: float


@dataclass(frozen=True)
class GraphView:
    centre: str
    centre_kind: str            # memory or subject
    nodes: tuple[GraphNode, ...]
    links: tuple[GraphLink, ...]
    candidates: int             # neighbours there were before the cut
    limit: int
    archive_threshold: float

    @property
    def cut(self) -> bool:
        return self.candidates > len(self.nodes) - 1

    def as_dict(self) -> dict[str, Any]:
        return {"centre": self.centre, "centre_kind": self.centre_kind, "cut": self.cut, "candidates": self.candidates,
                "limit": self.limit, "nodes": [n.__dict__ for n in self.nodes], "links": [e.__dict__ for e in self.links]}


def graph_around(vault: Vault, *, memory_id: str | None = None, subject: str | None = None,
                 limit: int = DEFAULT_LIMIT, now: str | dt.datetime | None = None) -> GraphView:
    """The neighbourhood of ``memory_id`` (or the memories of ``subject``), at most ``limit``
    nodes besides the centre, strongest first."""
    if (memory_id is None) == (subject is None):
        raise UsageError("give a memory id or a subject, not both")
    if limit < 1:
        raise UsageError("limit must be at least 1")
    whole = _whole(vault, now)
    cards = whole.cards
    if memory_id is not None:
        if memory_id not in cards:
            vault.get(memory_id)   # NotFound with the usual message, or an unreadable file
            raise NotFound(f"{memory_id} is not on main")
        rings, candidates = _memory_rings(whole.graph, memory_id, limit)
    else:
        rings, candidates = _subject_rings(cards, whole.activity, str(subject), limit)
    nodes = [_node(i, ring, cards, whole.activity, whole.cold) for i, ring in rings.items()]
    if subject is not None:
        nodes.insert(0, GraphNode(str(subject), str(subject), "", "subject", "", 0, None, False))
    shown = set(rings)
    links = [GraphLink(e.source, e.target, e.kind, e.strength) for e in whole.graph.edges if e.source in shown and e.target in shown]
    if subject is not None:
        links += [GraphLink(str(subject), i, "subject", 0.3) for i, ring in rings.items() if ring == 1]
    return GraphView(memory_id or str(subject), "memory" if memory_id else "subject", tuple(nodes), tuple(links),
                     candidates, limit, whole.archive_threshold)


@dataclass(frozen=True)
class _Card:
    """What the picture shows of one memory."""
    summary: str
    layer: str
    kind: str
    status: str
    subject: str


@dataclass(frozen=True)
class _Whole:
    """The whole graph of main at one commit, with what influence decay makes of it."""
    graph: Any
    cards: dict[str, _Card]
    activity: dict[str, Any]
    cold: frozenset[str]
    archive_threshold: float


_WHOLE: dict[str, tuple[str | None, float, _Whole]] = {}
_WHOLE_LOCK = threading.Lock()


def _whole(vault: Vault, now: str | dt.datetime | None) -> _Whole:
    """The whole graph at main's tip, kept for :data:`WHOLE_SECONDS` when asked for the present."""
    root, head = str(vault.root), vault.head()
    with _WHOLE_LOCK:
        kept = _WHOLE.get(root) if now is None else None
        if kept is not None and kept[0] == head and time.monotonic() - kept[1] < WHOLE_SECONDS:
            return kept[2]
        whole = _read_whole(vault, now)
        if now is None:
            _WHOLE[root] = (head, time.monotonic(), whole)
        return whole


def _read_whole(vault: Vault, now: str | dt.datetime | None) -> _Whole:
    from memrepo.lifecycle import decay as algo
    from memrepo.lifecycle import decay_run
    from memrepo.lifecycle.runs import resolve_now
    graph, memories = decay_run.build_graph(vault)
    params = decay_run.decay_params(vault)
    activity = algo.compute_activity(graph, recall=decay_run._with_writes(decay_run._stats(vault).recall_summary(), memories),
                                     now=resolve_now(now), params=params)
    plan = algo.plan_archive(activity, graph, now=resolve_now(now), params=params)
    cards = {m.id: _Card(*(str(m.meta.get(k, "")) for k in ("summary", "layer", "kind", "status", "subject"))) for m in memories}
    return _Whole(graph, cards, activity, frozenset(d.id for d in plan.decisions if d.action != "keep"), params.archive_threshold)


def _memory_rings(graph, centre: str, limit: int) -> tuple[dict[str, int], int]:
    first = _strongest(graph, centre, exclude={centre})
    rings = {centre: 0}
    for other in first[:limit]:
        rings[other] = 1
    for parent in first[:limit]:
        if len(rings) > limit:
            break
        for other in _strongest(graph, parent, exclude=set(rings))[:3]:
            if len(rings) > limit:
                break
            rings[other] = 2
    return rings, len(first)


def _strongest(graph, node_id: str, *, exclude: set[str]) -> list[str]:
    best: dict[str, float] = {}
    for n in graph.neighbours(node_id):
        if n.id not in exclude:
            best[n.id] = max(best.get(n.id, 0.0), n.strength)
    return sorted(best, key=lambda i: (-best[i], i))


def _subject_rings(cards: dict[str, _Card], activity, subject: str, limit: int) -> tuple[dict[str, int], int]:
    mine = [i for i, card in cards.items() if card.subject == subject]
    if not mine:
        raise NotFound(f"no memory on main is about subject {subject!r}")
    order = sorted(mine, key=lambda i: (cards[i].status != "active", -activity[i].score, i))
    return {i: 1 for i in order[:limit]}, len(mine)


def _node(memory_id: str, ring: int, cards: dict[str, _Card], activity, cold: frozenset[str]) -> GraphNode:
    c = cards[memory_id]
    return GraphNode(memory_id, c.summary, c.layer, c.kind, c.status,
                     ring, activity[memory_id].score if memory_id in activity else None, memory_id in cold)


# ------------------------------------------------------------------ a memory page's neighbours

@dataclass(frozen=True)
class Neighbour:
    id: str
    direction: str       # out: this memory points at it; in: it mentions this memory
    relation: str        # link, wikilink, cites, supersedes, superseded_by, mentions
    summary: str | None
    status: str | None


def mentions(vault: Vault, memory_id: str, files: Mapping[str, bytes] | None = None) -> list[Memory]:
    """The memories on main whose file mentions ``memory_id`` as a whole id (in ``links``,
    ``cites``, ``supersedes``, a ``[[wikilink]]`` or the text). ``files`` (path -> bytes of
    every memory file on main) is searched when a long-running caller keeps it; otherwise git
    finds the files holding the string. Each candidate is checked for the whole id and parsed."""
    whole = re.compile(_id_pattern(memory_id).encode(), re.MULTILINE)
    needle = memory_id.encode()
    own = f"/{memory_id}.md"
    if files is not None:
        found = {p: data for p, data in files.items() if needle in data and not ("/" + p).endswith(own)}
    else:
        paths = [p for p in git.grep_fixed(vault.root, vault.main_ref, memory_id, MEMORY_ROOTS) if not ("/" + p).endswith(own)]
        with git.BlobReader(vault.root) as reader:
            found = {p: reader.read(f"{vault.main_ref}:{p}") for p in paths}
    out = []
    for path, data in sorted(found.items()):
        memory, _ = check_bytes(path, data) if whole.search(data) else (None, None)
        if memory is not None:
            out.append(memory)
    return out


def neighbours(vault: Vault, memory: Memory, mentioning: list[Memory] | None = None) -> list[Neighbour]:
    """The memories ``memory`` points at, then those that mention its id (``mentioning``:
    :func:`mentions`, when the caller already has it)."""
    from memrepo.lifecycle.graph import wikilinks
    catalog = vault.catalog()
    g = memory.meta.get
    out: list[tuple[str, str, str]] = []
    for relation, ids in (("link", g("links", ())), ("wikilink", wikilinks(memory.body)), ("cites", g("cites", ())),
                          ("supersedes", [g("supersedes")] if g("supersedes") else []),
                          ("superseded_by", [g("superseded_by")] if g("superseded_by") else [])):
        out += [(str(i), "out", relation) for i in ids]
    seen = {(i, d) for i, d, _r in out}
    for citer in mentions(vault, memory.id) if mentioning is None else mentioning:
        if (citer.id, "in") not in seen:
            seen.add((citer.id, "in"))
            out.append((citer.id, "in", "mentions"))
    found = []
    for other, direction, relation in out:
        rows = catalog.query(id=other)
        found.append(Neighbour(other, direction, relation, rows[0]["summary"] if rows else None,
                               rows[0]["status"] if rows else None))
    return found


def _id_pattern(memory_id: str) -> str:
    """A regex matching the id as a whole word (ids hold letters, digits, . _ -)."""
    return f"(?<![A-Za-z0-9_.-]){re.escape(memory_id)}(?![A-Za-z0-9_-]|\\.[A-Za-z0-9_-])"
