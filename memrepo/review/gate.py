"""The review gate, audited from history: which active high-risk memory skipped review?

The pre-commit hook stops a plain commit that activates a high-risk memory, but git runs no
hook for a fast-forward, ``cherry-pick``, ``rebase``, ``am``, ``revert`` or ``--no-verify``.
So ``memrepo validate`` asks git's history instead: for every active memory whose content is
high risk (by the policy in force), the commit on main that made it active-and-high-risk must
be one of

* a ``memrepo apply`` merge: recorded under ``refs/memrepo/applied/<proposal>``, a merge whose
  other side (the proposal) holds the memory;
* a ``memrepo import`` or ``memrepo propose`` arbitration commit: recorded under
  ``refs/memrepo/imported/`` / ``refs/memrepo/arbitrated/``; an import only adds files written
  as ``source: import``, an arbitration only settles a supersede by the ``[arbitration]``
  policy (high-risk kinds always go to review);
* the merge (or squash) of an activation ``memrepo proposals push`` made: the commit holds the
  very file an activation recorded under ``refs/memrepo/proposed/<proposal>`` holds;
* any other merge (``memrepo sync``, ``git pull``) that brings the version its other side
  holds: that side's history is audited the same way (so the commit that skipped review there
  is named); or that settles two active values of one fact (the version kept only gains a
  ``supersedes`` of the other side's value);
* a restoration: the commit puts back, unchanged, a version that was active before and was
  retired without being rolled back (``git revert`` of an apply, ``memrepo rollback`` of
  what superseded it, a revert of an archive); the check then follows that earlier version;
* a commit carrying a ``Memrepo-Override: <reason>`` trailer: listed as an override.

Trailers are not credentials: ``Memrepo-Action`` lines are text anyone can copy into a commit
message, so memrepo's own commits are recognised by the refs it writes and by what each kind
of commit can do. Anything else is reported, naming the activating commit. History is read
once for all the candidates (one ``git log --raw``), and only their own blobs are read.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from memrepo.config import Config
from memrepo.errors import Problem
from memrepo.review import risk
from memrepo.review.records import APPLIED_PREFIX, ARBITRATED_PREFIX, IMPORTED_PREFIX, PROPOSED_PREFIX, record_patterns, trailers
from memrepo.store import git
from memrepo.store.checks import RowSet, check_bytes
from memrepo.store.vault import Vault

OVERRIDE_TRAILER = "Memrepo-Override"
_PATHSPEC_LIMIT = 400  # more candidates than this: ask git for all memory files and filter
_MERGE_DEPTH = 8       # merges within merges followed at most this deep

# Refs memrepo writes for its own commits (sync carries them between clones).
APPLIED, PROPOSED, IMPORTED, ARBITRATED = APPLIED_PREFIX, PROPOSED_PREFIX, IMPORTED_PREFIX, ARBITRATED_PREFIX


def high_risk_reason(meta: Mapping[str, Any], config: Config) -> str | None:
    """Why this memory's content is high risk under the policy (None: low risk).

    The same classes as the write path's risk check; "state override" is read from the
    memory's own ``supersedes`` (the rest of the vault is not needed).
    """
    reasons = []
    decision = risk.assess(meta, RowSet(), config)
    if decision.high:
        reasons.append(decision.reason)
    if meta.get("supersedes") and config.section("risk").get("supersede_is_high", True):
        reasons.append(f"state override: supersedes {meta['supersedes']}")
    return "; ".join(reasons) or None


@dataclass(frozen=True)
class Override:
    path: str
    id: str
    commit: str
    author: str
    reason: str

    def as_dict(self) -> dict[str, str]:
        return self.__dict__.copy()

    def __str__(self) -> str:
        return f"{self.path}: override in {self.commit[:12]} by {self.author}: {self.reason}"


@dataclass(frozen=True)
class GateReport:
    problems: list[Problem]
    overrides: list[Override]
    activations: dict[str, str] = field(default_factory=dict)   # memory id -> the commit that activated it


@dataclass(frozen=True)
class Records:
    """The commits memrepo recorded as its own (by the refs it writes)."""
    applied: frozenset[str]
    proposed: frozenset[str]
    imported: frozenset[str]
    arbitrated: frozenset[str]

    @classmethod
    def of(cls, vault: Vault) -> Records:
        refs = git.refs(vault.root, *record_patterns(APPLIED, PROPOSED, IMPORTED, ARBITRATED))

        def values(prefix: str) -> frozenset[str]:
            kind = prefix.removeprefix("refs/memrepo/")
            return frozenset(sha for ref, sha in refs.items()
                             if ref.startswith(prefix) or (ref.startswith("refs/memrepo/remote/") and f"/{kind}" in ref))
        return cls(values(APPLIED), values(PROPOSED), values(IMPORTED), values(ARBITRATED))


@dataclass(frozen=True)
class _State:
    status: str | None
    high: bool
    key: str           # the version's content (front matter and body), for restorations

    @property
    def active_high(self) -> bool:
        return self.status == "active" and self.high


def audit(vault: Vault, candidates: Mapping[str, str], *, rev: str | None = None) -> GateReport:
    """Check how each candidate (memory id -> path) became active and high risk on main (or
    along ``rev``'s history: the other side of a merge the hook is asked about)."""
    if not candidates or vault.head() is None:
        return GateReport([], [])
    ids = set(candidates)
    paths = ([f":(glob)**/{i}.md" for i in sorted(ids)] if len(ids) <= _PATHSPEC_LIMIT else ["memories", "archive"])
    history: dict[str, list[tuple[git.LogEntry, list[git.RawChange]]]] = {i: [] for i in ids}
    for entry, changes in git.log_raw(vault.root, rev or vault.main_ref, paths=paths):
        mine: dict[str, list[git.RawChange]] = {}
        for ch in changes:
            memory_id = ch.path.rsplit("/", 1)[-1].removesuffix(".md")
            if memory_id in ids:
                mine.setdefault(memory_id, []).append(ch)
        for memory_id, chs in mine.items():
            history[memory_id].append((entry, chs))
    records = Records.of(vault)
    problems, overrides = [], []
    activations: dict[str, str] = {}
    with git.BlobReader(vault.root) as reader:
        states = _StateCache(reader, vault.config)
        for memory_id in sorted(ids):
            verdict = _judge(vault, memory_id, history[memory_id], states, records, activations=activations)
            if verdict is None:
                continue
            entry, reason, override = verdict
            path = candidates[memory_id]
            if override is not None:
                overrides.append(Override(path, memory_id, entry.commit, entry.author, override))
            else:
                problems.append(Problem(path, "status", (
                    f"high-risk memory ({reason}) became active in {entry.commit[:12]} ({entry.subject!r}, "
                    f"{entry.author}) without review; undo it ('git revert {entry.commit[:12]}') and write it with "
                    f"'memrepo add' so it goes to review, or, if it was deliberate, say so in a commit with a "
                    f"'{OVERRIDE_TRAILER}: <reason>' trailer")))
    return GateReport(problems, overrides, activations)


class _StateCache:
    def __init__(self, reader: git.BlobReader, config: Config):
        self.reader, self.config = reader, config
        self.cache: dict[str, _State | None] = {}

    def __call__(self, sha: str, path: str) -> _State | None:
        if sha == git.ZERO:
            return None
        if sha not in self.cache:
            memory, _ = check_bytes(path, self.reader.read(sha))
            if memory is None:
                self.cache[sha] = _State(None, False, sha)
            else:
                meta = dict(memory.meta)
                key = json.dumps({k: v for k, v in meta.items() if k != "updated"}, sort_keys=True, default=str)
                self.cache[sha] = _State(meta.get("status"), high_risk_reason(meta, self.config) is not None,
                                         key + "\0" + memory.body)
        return self.cache[sha]


def _judge(vault: Vault, memory_id: str, versions, states: _StateCache, records: Records, *, depth: int = 0,
           activations: dict[str, str] | None = None):
    """(activating commit, risk reason, override reason or None) when review was skipped; None when fine."""
    steps = []   # newest first: (entry, before states, after states, changes)
    for entry, changes in versions:
        before = [s for s in (states(c.old_sha, c.path) for c in changes) if s]
        after = [s for s in (states(c.new_sha, c.path) for c in changes) if s]
        steps.append((entry, before, after, changes))
    if not steps or not any(s.active_high for s in steps[0][2]):
        return None  # not active and high risk on main (an uncommitted edit: the hook sees it)
    i = 0
    while i < len(steps):
        j = next((k for k in range(i, len(steps))
                  if any(s.active_high for s in steps[k][2]) and not any(s.active_high for s in steps[k][1])), None)
        if j is None:
            return None
        entry, _before, after, changes = steps[j]
        if activations is not None:
            activations.setdefault(memory_id, entry.commit)
        new = [c for c in changes if c.new_sha != git.ZERO
               and (state := states(c.new_sha, c.path)) is not None and state.active_high]
        if new and _recorded(vault, entry, new[0], states, records):
            return None
        found = git_trailers(entry.body)
        if found.get(OVERRIDE_TRAILER):
            return entry, "", found[OVERRIDE_TRAILER]
        if new and len(entry.parents) >= 2:
            side = _through_merge(vault, memory_id, entry, new[0], states, records, depth)
            return None if side is True else side
        restored = _restored_from(steps, j, next(s for s in after if s.active_high).key)
        if restored is None:
            reason = high_risk_reason(_meta_of(states, new), vault.config) if new else "high risk"
            return entry, reason, None
        i = restored
    return None


def _recorded(vault: Vault, entry: git.LogEntry, change: git.RawChange, states: _StateCache, records: Records) -> bool:
    """A commit memrepo recorded as its own, checked against what that kind of commit can do:

    * an apply merge: its other side (the proposal it merged) holds the memory;
    * an import: adds new files written as ``source: import``;
    * an arbitration: the memory's sole high-risk reason is the override it settled;
    * a merge (or squash) of an activation ``proposals push`` made: the very file it holds.
    """
    if entry.commit in records.applied and len(entry.parents) >= 2:
        name = f"{entry.parents[1]}:{change.path}"
        if git.object_ids(vault.root, [name])[name]:
            return True
    meta = _meta_of(states, [change])
    if entry.commit in records.imported and change.status == "A" and meta.get("source") == "import":
        return True
    if entry.commit in records.arbitrated and not risk.assess(meta, RowSet(), vault.config).high:
        return True
    if records.proposed:
        held = git.object_ids(vault.root, [f"{a}:{change.path}" for a in records.proposed])
        if change.new_sha in held.values():
            return True
    return False


def _held_by(vault: Vault, rev: str, memory_id: str, path: str, states: _StateCache) -> tuple[str, _State] | None:
    """(path, state) of the memory in commit ``rev`` (where main has it, else wherever it is)."""
    name = f"{rev}:{path}"
    blob = git.object_ids(vault.root, [name])[name]
    if blob is None:
        other = vault.find_path(memory_id, rev)
        if other is None:
            return None
        path, blob = other, git.object_ids(vault.root, [f"{rev}:{other}"])[f"{rev}:{other}"]
    state = states(blob, path) if blob else None
    return (path, state) if state is not None else None


def _through_merge(vault: Vault, memory_id: str, entry: git.LogEntry, change: git.RawChange, states: _StateCache,
                   records: Records, depth: int):
    """A merge that activated the memory on main's line: True when its other side already held
    it active and high risk and that side's history passes the audit (or the merge settled two
    active values of one fact); else the verdict naming the commit that skipped review."""
    sides = [(parent, h) for parent in entry.parents[1:] if (h := _held_by(vault, parent, memory_id, change.path, states))]
    held = [h for _parent, h in sides]
    for parent, (_path, state) in sides:
        if not state.active_high:
            continue
        if depth >= _MERGE_DEPTH:
            return entry, "high risk (merges nested too deep to follow)", None
        return _judge(vault, memory_id, _versions(vault, parent, memory_id), states, records, depth=depth + 1) or True
    meta = _meta_of(states, [change])
    target = meta.get("supersedes")
    plain = {k: v for k, v in meta.items() if k != "supersedes"}
    mine = _held_by(vault, entry.parents[0], memory_id, change.path, states)
    if isinstance(target, str) and any(s.status == "active" for _p, s in [*held, *([mine] if mine else [])]) and \
            high_risk_reason(plain, vault.config) is None and \
            any((h := _held_by(vault, p, target, change.path, states)) and h[1].status == "active" for p in entry.parents):
        return True  # two active values of one fact settled by the merge: the kept one supersedes the other
    return entry, high_risk_reason(meta, vault.config) or "high risk", None


def _versions(vault: Vault, rev: str, memory_id: str) -> list[tuple[git.LogEntry, list[git.RawChange]]]:
    """The memory's history along ``rev``'s first-parent line, newest first."""
    name = f"/{memory_id}.md"
    found = []
    for entry, changes in git.log_raw(vault.root, rev, paths=[f":(glob)**/{memory_id}.md"]):
        mine = [c for c in changes if ("/" + c.path).endswith(name)]
        if mine:
            found.append((entry, mine))
    return found


def _restored_from(steps, j: int, key: str) -> int | None:
    """The older step whose version commit ``j`` puts back, unless that version was rolled back since."""
    seen_rolled_back = any(s.status == "rolled_back" for s in steps[j][1])
    for k in range(j + 1, len(steps)):
        if any(s.key == key and s.status == "active" for s in steps[k][2]):
            return None if seen_rolled_back else k
        if any(s.status == "rolled_back" for s in steps[k][1] + steps[k][2]):
            seen_rolled_back = True
    return None


def _meta_of(states: _StateCache, changes) -> dict[str, Any]:
    ch = changes[0]
    memory, _ = check_bytes(ch.path, states.reader.read(ch.new_sha))
    return dict(memory.meta) if memory else {}


def git_trailers(message: str) -> dict[str, str]:
    return trailers(message)


def _refs(vault: Vault, prefix: str) -> Iterable[tuple[str, str]]:
    return list(git.refs(vault.root, prefix).items())
