"""The reviewer's inbox: what waits for a person, where it came from, and what else needs a look.

Open proposals newest first, each with its source, why it needs review, who made it, what it is
about and how long it has waited; how many came from each source; the notices (outputs and
memories citing a value that is no longer active); and how the last nightly run went.

A proposal's source is read from what it carries, in this order:

* ``arbitration``: two values of one fact met (a team proposal in conflict, or a sync conflict);
* ``distill``: a nightly distill or promotion run (``distill_*``, ``promote_*``);
* ``clean-up``: influence decay's deletion candidates (``cleanup_*``);
* ``agent``: written by a model or a tool (source model-inference, tool or flush), or under an
  author name that is not the committer's (an agent runtime sets ``MEMREPO_AGENT`` or
  ``MEMREPO_AUTHOR``; a team member's ``memrepo propose`` is one of these);
* ``person``: anything else (a person's own ``add``, ``add --file``, ``import --propose``).
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from memrepo.model import Memory, aware_time
from memrepo.review import proposals
from memrepo.store import git
from memrepo.store.vault import Vault

SOURCES = ("person", "agent", "distill", "arbitration", "clean-up")
AGENT_SOURCES = ("model-inference", "tool", "flush")


@dataclass(frozen=True)
class InboxItem:
    id: str
    source: str
    reason: str
    author: str
    created: str
    age_seconds: int
    memories: tuple[dict[str, Any], ...]    # id, summary, subject, fact, kind, layer, risk_reason
    deletes: int

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "memories": list(self.memories)}


@dataclass(frozen=True)
class Inbox:
    items: tuple[InboxItem, ...]
    counts: dict[str, int]
    notices: tuple[dict[str, Any], ...]
    nightly: dict[str, Any] | None
    reviewer: str
    now: str
    problems: tuple[str, ...] = field(default=())

    def as_dict(self) -> dict[str, Any]:
        return {"items": [i.as_dict() for i in self.items], "counts": self.counts, "notices": list(self.notices),
                "nightly": self.nightly, "reviewer": self.reviewer, "now": self.now, "problems": list(self.problems)}


def inbox(vault: Vault, *, now: dt.datetime | None = None) -> Inbox:
    """Open proposals (newest first) with their sources, the notices and the last nightly run."""
    from memrepo.errors import MemrepoError
    from memrepo.lifecycle.run_history import last_nightly
    from memrepo.team import citations
    when = now or dt.datetime.now(dt.UTC)
    found = proposals.list_proposals(vault)
    items = [_item(p, rows, committer, when) for p, (rows, committer) in zip(reversed(found), _read(vault, found[::-1]))]
    counts = {s: sum(1 for i in items if i.source == s) for s in SOURCES}
    problems = []
    try:
        notices = tuple(n.as_dict() for n in citations.notices(vault))
    except MemrepoError as e:   # a damaged citations file must not hide the proposals
        notices, problems = (), [str(e)]
    return Inbox(tuple(items), counts, notices, last_nightly(vault), git.identity(vault.root)[0],
                 when.isoformat(timespec="seconds"), tuple(problems))


# proposal commit -> (its memories' rows and sources, its committer): a commit never changes,
# so a long-running reader (memrepo ui) parses each proposal once.
_READ: dict[tuple[str, str], tuple[list[Memory], git.LogEntry | None]] = {}
_READ_LIMIT = 5000


def _read(vault: Vault, found: list[proposals.Proposal]) -> list[tuple[list[Memory], git.LogEntry | None]]:
    """Each proposal's memories and the git author of its commit (two git calls for the ones not read before)."""
    root = str(vault.root)
    new = [p for p in found if (root, p.commit) not in _READ]
    if new:
        held = proposals.memories_of_all(vault, new)
        committers = git.commits(vault.root, [p.commit for p in new])
        if len(_READ) + len(new) > _READ_LIMIT:
            _READ.clear()
        for p in new:
            _READ[(root, p.commit)] = (held.get(p.id, []), committers.get(p.commit))
    return [_READ.get((root, p.commit)) or ([], None) for p in found]


def _item(p: proposals.Proposal, memories: list[Memory], committer: git.LogEntry | None, now: dt.datetime) -> InboxItem:
    created = aware_time(p.created)
    age = int((now - created).total_seconds()) if created else 0
    rows = tuple({"id": m.id, "summary": m.meta.get("summary"), "subject": m.meta.get("subject"),
                  "fact": m.meta.get("fact"), "kind": m.meta.get("kind"), "layer": m.meta.get("layer"),
                  "risk_reason": m.meta.get("risk_reason")} for m in memories)
    return InboxItem(p.id, source_of(p, memories, committer), p.reason, p.author, p.created, max(age, 0), rows,
                     max(len(p.ids) - len(memories), 0))


def source_of(p: proposals.Proposal, memories: list[Memory], committer: git.LogEntry | None = None) -> str:
    """Where a proposal came from (the rules in this module's docstring)."""
    if p.reason.startswith(("conflict on ", "sync: ")):
        return "arbitration"
    if p.id.startswith(("distill_", "promote_")) or (memories and all(m.meta.get("source") == "distill" for m in memories)):
        return "distill"
    if p.id.startswith("cleanup_"):
        return "clean-up"
    if any(m.meta.get("source") in AGENT_SOURCES for m in memories):
        return "agent"
    name = committer.author.rsplit(" <", 1)[0] if committer else None
    return "agent" if name is not None and p.author and p.author != name else "person"
