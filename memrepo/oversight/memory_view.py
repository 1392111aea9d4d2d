"""One memory as a person looks at it: the memory, why it is active, its history, its citations
and its neighbours, from whichever vault holds it (the shared pool or an agent's private vault).

Each part is asked of the library on its own, and a part that cannot be answered (a memory that
was never made active has no "why") is a note on the page, not a failure of the page.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memrepo.errors import MemrepoError, NotFound
from memrepo.lifecycle.graph_view import Neighbour, mentions, neighbours
from memrepo.model import Memory
from memrepo.oversight.main_files import main_files
from memrepo.review import provenance
from memrepo.review.timeline import TimelineEntry, timeline
from memrepo.store.vault import Vault
from memrepo.team import citations, scopes


@dataclass(frozen=True)
class MemoryView:
    memory: Memory
    scope: str                                # shared, or the agent whose private vault holds it
    why: dict[str, Any] | None
    why_note: str | None
    history: tuple[TimelineEntry, ...]
    cited_by: tuple[citations.Citation, ...]
    cites: tuple[str, ...]
    neighbours: tuple[Neighbour, ...]
    can_roll_back: bool                       # active, and made active by a commit that can be undone

    def front_matter(self) -> list[tuple[str, Any]]:
        return list(self.memory.meta.items())


def memory_view(vault: Vault, memory_id: str, *, agent: str | None = None) -> MemoryView:
    """Everything the memory page shows about ``memory_id`` (``agent``: look in that agent's
    private vault too)."""
    try:
        return _view(vault, vault.get(memory_id), "shared")
    except NotFound:
        private = scopes.private_vault(vault, scopes.require_agent(agent, "a private memory")) if agent else None
        if private is None:
            raise
        with private:
            return _view(private, private.get(memory_id), str(agent))


def _view(vault: Vault, memory: Memory, scope: str) -> MemoryView:
    why, note = None, None
    try:
        why = provenance.why(vault, memory.id).as_dict()
    except MemrepoError as e:
        note = str(e)
    history = tuple(timeline(vault, memory.id))
    active = memory.meta.get("status") == "active"
    mentioning = mentions(vault, memory.id, main_files(vault))   # one search serves the citations and the neighbours
    return MemoryView(memory, scope, why, note, history, tuple(citations.cited_by(vault, memory.id, mentioning=mentioning)),
                      tuple(memory.meta.get("cites", ())), tuple(neighbours(vault, memory, mentioning)),
                      active and why is not None)
