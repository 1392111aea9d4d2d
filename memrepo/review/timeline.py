"""A memory's history as a person reads it: every version of the fact, newest first.

``memrepo log`` lists the commits that touched one file, and ``memrepo history`` the versions of
one (subject, fact). A person looking at a memory wants both at once, with the answers git
holds for each step: who made the commit, when, what it did (added, applied a proposal,
superseded, rolled back, reverted, archived), why (the proposal's reason, a rejection's or a
rollback's words), which proposal and reviewer, and the status of each version before and
after. A commit later undone (``memrepo rollback`` or ``git revert``) is marked with the commit
that undid it, and the undoing commit names what it undid.

The versions followed are the memory's own file, the chain of versions it supersedes and that
supersede it, and, for a memory with a fact key, every memory that ever held that fact on main.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from memrepo.model import MEMORY_ROOTS, Memory
from memrepo.review.proposals import trailers
from memrepo.store import git
from memrepo.store.checks import check_bytes
from memrepo.store.vault import Vault

_REVERTS = re.compile(r"^This reverts (?:the part of )?commit ([0-9a-f]{40})", re.MULTILINE)
_CHAIN_LIMIT = 200   # versions followed along supersedes links (a long-lived fact has fewer)


@dataclass(frozen=True)
class VersionChange:
    """What one commit did to one version: ``change`` A (added), M (modified) or D (deleted)."""
    id: str
    change: str
    before: str | None       # status before the commit (None: the file did not exist)
    after: str | None        # status after (None: the file was deleted)
    summary: str | None


@dataclass(frozen=True)
class TimelineEntry:
    commit: str
    date: str
    author: str
    action: str              # add, apply, supersede, rollback, revert, archive, sync, hand edit, ...
    title: str
    reason: str | None
    proposal: str | None
    reviewer: str | None
    versions: tuple[VersionChange, ...]
    undoes: str | None = None
    undone_by: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def timeline(vault: Vault, memory_id: str) -> list[TimelineEntry]:
    """Every commit on main that changed a version of ``memory_id``'s fact, newest first."""
    memory = vault.get(memory_id)
    ids = sorted(versions_of(vault, memory))
    history = git.log_raw(vault.root, vault.main_ref, paths=[f":(glob)**/{i}.md" for i in ids])
    wanted = set(ids)
    shas = {sha for _e, changes in history for c in changes for sha in (c.old_sha, c.new_sha) if sha != git.ZERO}
    blobs = git.read_blobs(vault.root, shas)
    entries = [_entry(entry, [c for c in changes if _id(c.path) in wanted], blobs) for entry, changes in history]
    entries = [e for e in entries if e.versions]
    undone = {e.undoes: e.commit for e in reversed(entries) if e.undoes}
    reasons = _proposal_reasons(vault, {e.proposal for e in entries if e.proposal and not e.reason})
    return [_completed(e, undone.get(e.commit), reasons) for e in entries]


def versions_of(vault: Vault, memory: Memory) -> set[str]:
    """The memory, the versions it supersedes and that supersede it, and every memory that
    held its fact key on main."""
    catalog = vault.catalog()
    found: set[str] = set()
    todo = [memory.id]
    while todo and len(found) < _CHAIN_LIMIT:
        current = todo.pop()
        if current in found:
            continue
        found.add(current)
        for row in catalog.with_id(current) + catalog.referencing(current):
            todo += [i for i in (row.id, row.supersedes, row.superseded_by) if i and i not in found]
    if memory.key:
        from memrepo.review.provenance import _regex_escape
        fact = memory.key[1]
        paths = git.log_paths(vault.root, vault.main_ref, MEMORY_ROOTS, line_regex=f"^fact: \"?{_regex_escape(fact)}\"?$")
        found |= {_id(p) for p in paths if p.endswith(".md")}
    return found


def _id(path: str) -> str:
    return path.rsplit("/", 1)[-1][:-3]


def _status(path: str, data: bytes | None) -> tuple[str | None, str | None, Any]:
    if data is None:
        return None, None, None
    memory, _ = check_bytes(path, data)
    if memory is None:
        return "invalid", None, None
    return memory.meta.get("status"), memory.meta.get("summary"), memory.key


def _entry(entry: git.LogEntry, changes: list[git.RawChange], blobs: dict[str, bytes]) -> TimelineEntry:
    t = trailers(entry.body)
    versions = []
    for c in changes:
        before = _status(c.path, blobs.get(c.old_sha)) if c.old_sha != git.ZERO else (None, None, None)
        after = _status(c.path, blobs.get(c.new_sha)) if c.new_sha != git.ZERO else (None, None, None)
        versions.append(VersionChange(_id(c.path), c.status, before[0], after[0], after[1] or before[1]))
    undoes = t.get("Memrepo-Reverts") or next(iter(_REVERTS.findall(entry.body)), None)
    action = t.get("Memrepo-Action") or ("revert" if undoes else "merge" if len(entry.parents) > 1 else "hand edit")
    return TimelineEntry(entry.commit, entry.date, entry.author, action, entry.subject, _reason(entry.body, t),
                         t.get("Memrepo-Proposal"), t.get("Memrepo-Reviewer"), tuple(versions), undoes)


def _reason(body: str, t: dict[str, str]) -> str | None:
    """Why the commit was made: a recorded reason, else the words a person wrote in its body."""
    for key in ("Memrepo-Why", "Memrepo-Reason", "Memrepo-Override"):
        if t.get(key):
            return t[key]
    lines = [line for line in body.splitlines() if line.strip() and not line.startswith("Memrepo-")
             and not _REVERTS.match(line) and not line.startswith(("Applied proposal ", "Review card", "==="))]
    return " ".join(lines)[:500] or None


def _proposal_reasons(vault: Vault, ids: set[str]) -> dict[str, str]:
    from memrepo.errors import MemrepoError
    from memrepo.review import proposals
    out = {}
    for pid in ids:
        try:
            out[pid] = proposals.get(vault, pid).reason
        except MemrepoError:
            continue   # a proposal whose records are gone: the commit still says what it did
    return out


def _completed(e: TimelineEntry, undone_by: str | None, reasons: dict[str, str]) -> TimelineEntry:
    reason = e.reason or (reasons.get(e.proposal) if e.proposal else None)
    return TimelineEntry(**{**e.__dict__, "reason": reason, "undone_by": undone_by})
