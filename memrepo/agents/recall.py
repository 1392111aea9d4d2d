"""``recall``: the memories relevant to an agent's latest turn, as one block to inject.

The query is the latest user message (from a bare message, a transcript in plain text with
speaker labels, or OpenAI/Anthropic message JSON). Ranking is the search service's own; this
module only reads the hits' bodies and packs them, best first, into a character budget that
is never exceeded. Nothing relevant gives an empty block: the agent injects nothing.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from memrepo.agents.transcript import latest_user_text
from memrepo.store.vault import Vault

DEFAULT_BUDGET = 4000
DEFAULT_LIMIT = 8
RECALL_HEADER = "Relevant memories from memrepo (best first; cite the [id] you rely on):"
CONTEXT_HEADER = "Standing memories from memrepo (identity, principles, constraints, preferences):"
_ELLIPSIS = "…"


@dataclass(frozen=True)
class Packed:
    """Memories packed into a budget: the text block and the memory objects it holds."""

    text: str = ""
    memories: tuple[dict[str, Any], ...] = field(default_factory=tuple)

    @property
    def chars(self) -> int:
        return len(self.text)


@dataclass(frozen=True)
class Recall:
    query: str
    packed: Packed
    nothing_relevant: bool

    @property
    def text(self) -> str:
        return self.packed.text

    def as_dict(self) -> dict[str, Any]:
        return {"query": self.query, "memories": list(self.packed.memories),
                "nothing_relevant": self.nothing_relevant, "chars": self.packed.chars}


def memory_object(vault: Vault, path: str, *, score: float | None = None, shown_from: Vault | None = None) -> dict[str, Any] | None:
    """The memory at ``path`` in the working tree as the agent-facing object, or None when
    it cannot be read (a broken hand edit is skipped, never shown half-parsed). With
    ``shown_from`` (the shared vault, when ``vault`` is an agent's private one inside it) the
    path is given from that vault's root."""
    import os

    from memrepo.store.checks import reader_problem
    from memrepo.store.document import DocumentError, load_bytes
    from memrepo.store.files import LinkRefused, read_inside
    try:
        parsed = load_bytes(read_inside(vault.root, path), path)
    except (OSError, DocumentError, LinkRefused):  # never through a link: the file is skipped
        return None
    m = parsed.meta
    if reader_problem(path, m) is not None:
        return None
    if shown_from is not None and shown_from.root != vault.root:
        path = os.path.relpath(vault.root / path, shown_from.root).replace(os.sep, "/")
    return {"id": m.get("id"), "path": path, "layer": m.get("layer"), "kind": m.get("kind"),
            "subject": m.get("subject"), "fact": m.get("fact"), "summary": m.get("summary"),
            "body": parsed.body.strip(), "score": None if score is None else round(float(score), 4),
            "weight": m.get("weight")}


def _hit_object(vault: Vault, hit, *, shown_from: Vault) -> dict[str, Any]:
    """A search hit as the agent-facing object (the fields :func:`memory_object` reads from the
    file, as the index holds them: the search has just brought the index up to the files)."""
    import os
    path = hit.path
    if shown_from.root != vault.root:
        path = os.path.relpath(vault.root / path, shown_from.root).replace(os.sep, "/")
    return {"id": hit.id, "path": path, "layer": hit.layer, "kind": hit.kind, "subject": hit.subject,
            "fact": hit.fact or None, "summary": hit.summary, "body": hit.body.strip(),
            "score": round(float(hit.score), 4), "weight": None}


def pack(memories: Iterable[dict[str, Any]], budget: int, header: str) -> Packed:
    """As many memories as fit in ``budget`` characters, best first, each as ``[id] summary``,
    as much of its body as fits, and its path as citation. The block never exceeds the budget;
    a memory whose id, summary and citation do not fit ends the block."""
    lines = [header]
    used = len(header)
    kept = []
    for m in memories:
        head = f"\n\n[{m['id']}] {m['summary']}"
        cite = f"\n(source: {m['path']})"
        room = budget - used - len(head) - len(cite)
        if room < 0:
            break
        body = m.get("body") or ""
        if body and room > len(_ELLIPSIS) + 1:
            body = body if len(body) + 1 <= room else body[:room - 1 - len(_ELLIPSIS)].rstrip() + _ELLIPSIS
            entry = f"{head}\n{body}{cite}"
        else:
            body = ""
            entry = head + cite
        lines.append(entry)
        used += len(entry)
        kept.append({**{k: v for k, v in m.items() if k != "weight"}, "body": body})
    if not kept:
        return Packed()
    return Packed("".join(lines), tuple(kept))


def recall(vault: Vault, text: str, *, budget: int = DEFAULT_BUDGET, session: str | None = None,
           subject: str | None = None, limit: int = DEFAULT_LIMIT, intent: str | None = None,
           also: Sequence[Vault] = ()) -> Recall:
    """The relevant active memories for ``text`` (a message or a transcript), packed into
    ``budget`` characters. With ``session`` the recall is logged (heat, co-recall); ``intent``
    forces the retrieval route (``model.INTENTS``) instead of the guess from the text.
    ``also`` are more vaults searched with it (the acting agent's private vault: see
    ``team.scopes.visible_vaults``); their hits are merged by score."""
    from memrepo.errors import UsageError
    from memrepo.retrieval import search

    if budget < 1:
        raise UsageError("--budget must be a positive number of characters")
    query = latest_user_text(text or "")
    if not query:
        return Recall("", Packed(), True)
    hits = []
    for v in (vault, *also):
        result, _ = search.search(v, query, limit=limit, subject=subject, session=session,
                                  log_recalls=session is not None, intent=intent)
        hits += [(h.score, v, h) for h in result.hits]
    hits.sort(key=lambda t: -t[0])
    found = (_hit_object(v, h, shown_from=vault) for _, v, h in hits[:limit])
    packed = pack((m for m in found if m is not None), budget, RECALL_HEADER)
    return Recall(query, packed, not packed.memories)


QUERY_ECHO = 200  # characters of the query a recall result repeats back, at most


def recall_within(vault: Vault, text: str, *, budget: int = DEFAULT_BUDGET, **options: Any) -> dict[str, Any]:
    """The recall as one JSON-ready object whose serialized text fits in ``budget`` characters
    (a tool result an agent reads whole): the block, then per memory only what the block does
    not say (id, summary, path, layer, kind, score), the query cut to :data:`QUERY_ECHO` characters.
    ``options`` are :func:`recall`'s (session, subject, limit, intent, also)."""
    import json

    from memrepo.errors import UsageError

    def fitted(room: int) -> dict[str, Any]:
        found = recall(vault, text, budget=max(room, 1), **options) if room > 0 else None
        query = (found.query if found else latest_user_text(text or "")).strip()
        query = query if len(query) <= QUERY_ECHO else query[:QUERY_ECHO - 1].rstrip() + _ELLIPSIS
        memories = [{k: m.get(k) for k in ("id", "summary", "path", "layer", "kind", "score")}
                    for m in (found.packed.memories if found else ())]
        block = found.text if found and memories else ""
        return {"block": block, "memories": memories, "nothing_relevant": not memories,
                "chars": len(block), "query": query}

    room = budget
    for _ in range(8):
        result = fitted(room)
        size = len(json.dumps(result, ensure_ascii=False))
        if size <= budget:
            return result
        room -= size - budget + 16
    result = fitted(0)
    if len(json.dumps(result, ensure_ascii=False)) > budget:
        raise UsageError(f"budget {budget} is too small for a recall result; give at least "
                         f"{len(json.dumps(result, ensure_ascii=False))} characters")
    return result
