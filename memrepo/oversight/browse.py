"""Browsing the memories a person supervises: one page at a time, filtered, in any agent's scope.

The shared pool is the vault's ``main``; an agent's private memories live in that agent's own
private vault (:mod:`memrepo.team.scopes`), so choosing an agent scope browses that vault. A page
is read from the catalog with a ``LIMIT``: paging through 100,000 memories never loads them all.
A tag filter asks git which files carry the tag (the catalog holds no tags) and checks each.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from memrepo.errors import UsageError
from memrepo.model import LAYERS, MEMORY_ROOTS, STATUSES, check_choice
from memrepo.store import git
from memrepo.store.vault import Vault
from memrepo.team import scopes

FILTERS = ("layer", "kind", "status", "subject", "fact")
MAX_PAGE = 500
MAX_OFFSET = 2**62          # SQLite's integers end at 2**63


@dataclass(frozen=True)
class MemoryPage:
    rows: tuple[dict[str, Any], ...]
    total: int
    offset: int
    limit: int
    scope: str                     # shared, or the agent whose private vault this is
    filters: dict[str, str] = field(default_factory=dict)

    @property
    def next_offset(self) -> int | None:
        return self.offset + self.limit if self.offset + self.limit < self.total else None

    @property
    def previous_offset(self) -> int | None:
        return max(self.offset - self.limit, 0) if self.offset > 0 else None

    def as_dict(self) -> dict[str, Any]:
        return {"rows": list(self.rows), "total": self.total, "offset": self.offset, "limit": self.limit,
                "scope": self.scope, "filters": self.filters, "next_offset": self.next_offset}


def agents_with_private_memories(vault: Vault) -> list[str]:
    """The agents that have a private vault inside this vault's folder."""
    folder = vault.root / scopes.PRIVATE_DIR
    if not folder.is_dir():
        return []
    return sorted(name for name in os.listdir(folder) if (folder / name / ".memrepo").is_dir())


def browse(vault: Vault, *, offset: int = 0, limit: int = 50, agent: str | None = None, tag: str | None = None,
           **filters: str | None) -> MemoryPage:
    """One page of memories (newest first) matching the filters, in the shared pool or, with
    ``agent``, in that agent's private vault."""
    unknown = set(filters) - set(FILTERS)
    if unknown:
        raise UsageError(f"unknown filter(s): {', '.join(sorted(unknown))}; use {', '.join(FILTERS + ('tag', 'agent'))}")
    if not 0 <= offset <= MAX_OFFSET or not 1 <= limit <= MAX_PAGE:
        raise UsageError(f"a page starts at 0 to {MAX_OFFSET} and holds 1 to {MAX_PAGE} memories")
    clean = {k: v for k, v in filters.items() if v}
    check_choice("layer", clean.get("layer"), LAYERS)
    check_choice("status", clean.get("status"), STATUSES)
    check_choice("kind", clean.get("kind"))
    if not agent:
        return _page(vault, "shared", offset, limit, tag, clean)
    private = scopes.private_vault(vault, scopes.require_agent(agent, "an agent scope"))
    if private is None:
        return MemoryPage((), 0, offset, limit, agent, {**clean, **({"tag": tag} if tag else {})})
    with private:
        return _page(private, agent, offset, limit, tag, clean)


def _page(vault: Vault, scope: str, offset: int, limit: int, tag: str | None, filters: dict[str, str]) -> MemoryPage:
    paths = _tagged(vault, tag) if tag else None
    rows, total = vault.catalog().page(offset=offset, limit=limit, paths=paths, **filters)
    return MemoryPage(tuple(rows), total, offset, limit, scope, {**filters, **({"tag": tag} if tag else {})})


def _tagged(vault: Vault, tag: str) -> set[str]:
    """Paths on main whose memory carries ``tag``: git finds the files with a list item or a
    ``tags:`` line holding its text as written or as memrepo writes it (quoted, escaped), so a
    hand-written file's flow list or unindented items count too; each candidate is checked."""
    from memrepo.store.document import scalar
    forms = "|".join("".join("\\" + c if c in ".^$*+?()[]{}|\\" else c for c in text) for text in {tag, scalar(tag)})
    candidates = git.grep_files(vault.root, vault.main_ref, f"^(tags:|[[:space:]]*-[[:space:]]).*({forms})", MEMORY_ROOTS)
    found = set()
    for path in candidates:
        try:
            if tag in vault.read_at(vault.main_ref, path).meta.get("tags", ()):
                found.add(path)
        except Exception:   # an unreadable file is reported by validate, not by a filter
            continue
    return found


def get_memory(vault: Vault, memory_id: str, *, agent: str | None = None):
    """A memory by id from the shared pool or, failing that, ``agent``'s private vault."""
    return scopes.get(vault, memory_id, agent=agent)


def search_visible(vault: Vault, text: str, *, agent: str | None = None, **options: Any):
    """``search`` over what ``agent`` sees: the shared pool plus its private vault."""
    return scopes.search(vault, text, agent=agent, **options)


def search_filters(filters: dict[str, str | None], limit: int) -> dict[str, Any]:
    """The search options for a page's filters: a status other than active searches the
    history (superseded, rolled back, rejected) or the archive as ``--history``/``--deep`` do."""
    status = filters.get("status")
    options: dict[str, Any] = {k: filters.get(k) for k in ("layer", "kind", "subject", "tag") if filters.get(k)}
    options["limit"] = limit
    if status in ("superseded", "rolled_back", "rejected", "pending_review"):
        options["history"] = True
    elif status == "archived":
        options["deep"] = True
    return options
