"""Provenance and rollback, answered from git history ("why is this memory active?").

* :func:`activation` finds the commit on main that made a memory active (its ``add`` commit, or
  the ``apply`` merge of its proposal, or any hand commit that set ``status: active``).
* :func:`rollback` reverts that commit the way ``git revert`` would (relative to main's first
  parent for merges), keeps the undone memory as ``rolled_back`` for the record, and refuses
  when later commits changed the same files.
* :func:`fact_history` lists every version of a (subject, fact) that ever existed on main,
  including versions later undone, by reading the blobs git kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memrepo.errors import Conflict, InvalidMemory, NotFound
from memrepo.model import MEMORY_ROOTS, Memory, now_iso
from memrepo.review.proposals import trailers
from memrepo.store import faults, git
from memrepo.store.checks import check_bytes
from memrepo.store.vault import Vault


def _file_glob(memory_id: str) -> str:
    return f":(glob)**/{memory_id}.md"


def _status_at(vault: Vault, rev: str, memory_id: str) -> tuple[str | None, Memory | None]:
    path = vault.find_path(memory_id, rev) if rev else None
    if path is None:
        return None, None
    memory, _ = check_bytes(path, git.read_blob(vault.root, f"{rev}:{path}"))
    return (memory.meta.get("status") if memory else None), memory


def _blob_status(reader: git.BlobReader, sha: str, path: str) -> str | None:
    if sha == git.ZERO:
        return None
    memory, _ = check_bytes(path, reader.read(sha))
    return memory.meta.get("status") if memory else None


def activation(vault: Vault, memory_id: str) -> git.LogEntry:
    """The newest commit on main after which this memory is active and before which it was not.

    Reads the before/after blobs that ``git log --raw`` names, so the cost follows the
    memory's own history, not the size of the vault.
    """
    vault.get(memory_id)
    name = f"/{memory_id}.md"
    with git.BlobReader(vault.root) as reader:
        for entry, changes in git.log_raw(vault.root, vault.main_ref, paths=[_file_glob(memory_id)]):
            mine = [c for c in changes if ("/" + c.path).endswith(name)]
            before = {_blob_status(reader, c.old_sha, c.path) for c in mine} - {None}
            after = {_blob_status(reader, c.new_sha, c.path) for c in mine} - {None}
            if "active" in after and "active" not in before:
                return entry
    raise NotFound(f"{memory_id} was never made active on {vault.main_branch}")


@dataclass(frozen=True)
class Why:
    memory: Memory
    activated_by: git.LogEntry
    proposal: dict[str, Any] | None
    superseded: Memory | None

    def as_dict(self) -> dict[str, Any]:
        m, e = self.memory.meta, self.activated_by
        t = trailers(e.body)
        return {
            "id": self.memory.id, "status": m.get("status"), "summary": m.get("summary"),
            "written_by": m.get("author"), "source": m.get("source"), "created": m.get("created"),
            "risk": m.get("risk"), "risk_reason": m.get("risk_reason"),
            "activated_in": e.commit, "activated_at": e.date, "committed_by": e.author,
            "action": t.get("Memrepo-Action") or ("merge" if self.proposal else "hand commit"),
            "proposal": self.proposal,
            "applied_by": t.get("Memrepo-Reviewer") or (e.author if self.proposal and "via" in self.proposal else None),
            "supersedes": ({"id": self.superseded.id, "summary": self.superseded.meta.get("summary")}
                           if self.superseded else None),
            "evidence": list(m.get("evidence", ())), "rollback_point": e.parents[0] if e.parents else None,
        }


def why(vault: Vault, memory_id: str) -> Why:
    memory = vault.get(memory_id)
    entry = activation(vault, memory_id)
    t = trailers(entry.body)
    proposal = None
    pid = t.get("Memrepo-Proposal") or _merged_proposal(vault, memory, entry)
    if pid:
        from memrepo.review import proposals
        p = proposals.get(vault, pid)
        proposal = {"id": p.id, "proposed_by": p.author, "proposed_at": p.created, "reason": p.reason,
                    "status": p.status, **({"via": p.outcome["via"]} if p.outcome.get("via") else {})}
        if not t.get("Memrepo-Proposal"):
            proposal["via"] = p.outcome.get("via") or "merge of the pushed branch"
    old = None
    if memory.meta.get("supersedes"):
        _, old = _status_at(vault, entry.commit, memory.meta["supersedes"])
    return Why(memory, entry, proposal, old)


def _merged_proposal(vault: Vault, memory: Memory, entry: git.LogEntry) -> str | None:
    """The pushed proposal whose merge (on a forge, then pulled or synced) is ``entry``: the
    memory names it, it carries the memory, and it was applied by this very commit."""
    pid = memory.meta.get("proposal")
    if not isinstance(pid, str) or not pid:
        return None
    from memrepo.review import proposals
    try:
        p = proposals.get(vault, pid)
    except (NotFound, InvalidMemory):
        return None
    if p.status == "applied" and memory.id in p.ids and entry.commit in (p.outcome.get("commit"), p.tip):
        return p.id
    return None


# ------------------------------------------------------------------ rollback

def _changed(vault: Vault, entry: git.LogEntry) -> list[git.Change]:
    parent = entry.parents[0] if entry.parents else None
    return git.diff_tree(vault.root, parent, entry.commit, MEMORY_ROOTS)


def rollback(vault: Vault, memory_id: str, *, reason: str = "") -> str:
    """Undo the commit that made ``memory_id`` active; returns the new commit id."""
    vault.require_main_checkout()
    with vault.lock():
        current = vault.get(memory_id)
        if current.meta.get("status") == "rolled_back":
            done = git.log(vault.root, vault.main_ref, paths=[current.path], extra=["-n", "1"])
            raise Conflict(f"{memory_id} is already rolled back"
                           + (f" ({done[0].commit[:12]} {done[0].subject})" if done else "") + "; nothing changed")
        entry = activation(vault, memory_id)
        everything = _changed(vault, entry)
        # Only this memory's part of the commit: an import or a batch proposal activates many
        # memories in one commit, and rolling back one id must not delete the others.
        mine = {memory_id, current.meta.get("supersedes")} - {None}
        changes = [c for c in everything if c.path.rsplit("/", 1)[-1][:-3] in mine]
        paths = [c.path for c in changes]
        later = git.log(vault.root, f"{entry.commit}..{vault.main_ref}", paths=paths, extra=["--first-parent"])
        if later:
            names = "; ".join(f"{e.commit[:12]} {e.subject}" for e in later[:5])
            raise Conflict(f"later changes depend on {entry.commit[:12]} ({entry.subject}): {names}; "
                           "roll those back first, or revert by hand")
        parent = entry.parents[0]
        writes, deletes = [], []
        for ch in changes:
            if ch.status == "A":
                deletes.append(ch.path)
            else:
                writes.append(vault.read_at(parent, ch.path))
        if current.path in deletes:
            deletes.remove(current.path)
            writes.append(current.evolve(status="rolled_back", updated=now_iso()))
        _refuse_emptying_a_restored_fact(current, entry, writes)
        vault.check_new(writes, deleted=[])
        faults.point("rollback-checked")
        message = (f"memrepo: rollback {memory_id}: revert {entry.commit[:12]}\n\n"
                   + (f"This reverts commit {entry.commit} ({entry.subject}).\n" if len(changes) == len(everything) else
                      f"This reverts the part of commit {entry.commit} ({entry.subject}) that changed "
                      f"{', '.join(sorted(paths))}.\n")
                   + (f"\n{reason.strip()}\n" if reason.strip() else "")
                   + f"\nMemrepo-Action: rollback\nMemrepo-Id: {memory_id}\nMemrepo-Reverts: {entry.commit}\n")
        return vault.commit(writes=writes, deletes=deletes, message=message).commit


def _refuse_emptying_a_restored_fact(current: Memory, entry: git.LogEntry, writes: list[Memory]) -> None:
    """A memory made active again by the rollback of what superseded it is the fact's value now;
    undoing that restoration would leave the fact with no active version (the version it would
    return to names, as its successor, a memory that was rolled back)."""
    undo = trailers(entry.body).get("Memrepo-Action") == "rollback" or "This reverts " in entry.body
    if not current.key or not undo:
        return
    if any(m.key == current.key and m.meta.get("status") == "active" for m in writes):
        return
    subject, fact = current.key
    raise Conflict(f"{current.id} is active again since {entry.commit[:12]} ({entry.subject}) restored it; rolling it "
                   f"back would leave ({subject}, {fact}) with no active version. To change the value, write the new "
                   f"one with 'memrepo add --subject {subject} --fact {fact} ...' (it supersedes {current.id} through "
                   "review); nothing changed")


# ------------------------------------------------------------------ history

@dataclass(frozen=True)
class Version:
    id: str
    status: str | None
    summary: str | None
    commit: str
    date: str
    change: str      # what the commit did to this file (A, M, D)
    message: str

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def fact_history(vault: Vault, subject: str, fact: str) -> list[Version]:
    """Every version of (subject, fact) that ever existed on main, oldest first."""
    paths = git.log_paths(vault.root, vault.main_ref, MEMORY_ROOTS, line_regex=f"^fact: \"?{_regex_escape(fact)}\"?$")
    ids = sorted({p.rsplit("/", 1)[-1][:-3] for p in paths if p.endswith(".md")})
    if not ids:
        return []
    history = git.log_raw(vault.root, vault.main_ref, paths=[_file_glob(i) for i in ids], reverse=True)
    blobs = git.read_blobs(vault.root, [c.new_sha for _entry, changes in history for c in changes if c.status != "D"])
    versions = [_version(entry, c, blobs.get(c.new_sha)) for entry, changes in history for c in changes]
    return [v for v in versions if v is not None and (v.status is not None or v.change == "D")
            and _matches(vault, v, subject, fact)]


def memory_history(vault: Vault, memory_id: str) -> list[Version]:
    """Every version of one memory that ever existed on main, oldest first (its removal by a
    revert or rollback included): what ``memrepo history ID`` shows."""
    history = git.log_raw(vault.root, vault.main_ref, paths=[_file_glob(memory_id)], reverse=True)
    if not history:
        vault.get(memory_id)  # never on main: NotFound, with where it is (a proposal) if anywhere
    blobs = git.read_blobs(vault.root, [c.new_sha for _entry, changes in history for c in changes if c.status != "D"])
    name = f"/{memory_id}.md"
    versions = [_version(entry, c, blobs.get(c.new_sha)) for entry, changes in history for c in changes
                if ("/" + c.path).endswith(name)]
    return [v for v in versions if v is not None]


def _version(entry: git.LogEntry, change: git.RawChange, data: bytes | None) -> Version | None:
    memory_id = change.path.rsplit("/", 1)[-1][:-3]
    if change.status == "D" or data is None:
        return Version(memory_id, None, None, entry.commit, entry.date, "D", entry.subject)
    memory, _ = check_bytes(change.path, data)
    if memory is None:
        return None
    m = memory.meta
    version = Version(memory_id, m.get("status"), m.get("summary"), entry.commit, entry.date, change.status, entry.subject)
    object.__setattr__(version, "_key", (m.get("subject"), m.get("fact")))
    return version


def _matches(vault: Vault, version: Version, subject: str, fact: str) -> bool:
    key = getattr(version, "_key", None)
    return key is None or key == (subject, fact)


def _regex_escape(text: str) -> str:
    return "".join("\\" + c if c in ".^$*+?()[]{}|\\" else c for c in text)
