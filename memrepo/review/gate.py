"""The review gate, audited from history: which active high-risk memory skipped review?

The pre-commit hook stops a plain commit that activates a high-risk memory, but git runs no
hook for a fast-forward, ``cherry-pick``, ``rebase``, ``am``, ``revert`` or ``--no-verify``.
So ``memrepo validate`` asks git's history instead: for every active memory whose content is
high risk (by the ``[risk]`` policy), the commit on main that made it active-and-high-risk must
be one of

* a ``memrepo apply`` merge, recorded under ``refs/memrepo/applied/<proposal>``;
* a ``memrepo import`` commit (a person's bulk import);
* a ``memrepo propose`` arbitration commit (``Memrepo-Action: arbitrate``): the vault's
  ``[arbitration]`` policy (``latest``/``authority``) took the place of the supersede review,
  and only for memories whose sole high-risk reason is that override (high-risk kinds always
  go to review);
* a ``memrepo sync`` merge (``Memrepo-Action: sync``): it brings in versions activated on the
  other clone's history (audited there) and settles two active values of one fact by the same
  arbitration policy;
* the merge (or fast-forward) of a proposal branch that ``memrepo proposals push`` activated:
  an ``activate`` commit on top of the ``propose`` commit that held the memory as
  ``pending_review``, whose file is what main now holds;
* a restoration: the commit puts back, unchanged, a version that was active before and was
  retired without being rolled back (``git revert`` of an apply, ``memrepo rollback`` of
  what superseded it, a revert of an archive); the check then follows that earlier version;
* a commit carrying a ``Memrepo-Override: <reason>`` trailer: listed as an override.

Anything else is reported, naming the activating commit. History is read once for all the
candidates (one ``git log --raw``), and only their own blobs are read.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from memrepo.config import Config
from memrepo.errors import Problem
from memrepo.review import risk
from memrepo.store import git
from memrepo.store.checks import RowSet, check_bytes
from memrepo.store.vault import Vault

OVERRIDE_TRAILER = "Memrepo-Override"
_TRUSTED_ACTIONS = ("import", "arbitrate", "sync")
_PATHSPEC_LIMIT = 400  # more candidates than this: ask git for all memory files and filter


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


@dataclass(frozen=True)
class _State:
    status: str | None
    high: bool
    key: str           # the version's content (front matter and body), for restorations

    @property
    def active_high(self) -> bool:
        return self.status == "active" and self.high


def audit(vault: Vault, candidates: Mapping[str, str]) -> GateReport:
    """Check how each candidate (memory id -> path) became active and high risk on main."""
    if not candidates or vault.head() is None:
        return GateReport([], [])
    ids = set(candidates)
    paths = ([f":(glob)**/{i}.md" for i in sorted(ids)] if len(ids) <= _PATHSPEC_LIMIT else ["memories", "archive"])
    history: dict[str, list[tuple[git.LogEntry, list[git.RawChange]]]] = {i: [] for i in ids}
    for entry, changes in git.log_raw(vault.root, vault.main_ref, paths=paths):
        mine: dict[str, list[git.RawChange]] = {}
        for ch in changes:
            memory_id = ch.path.rsplit("/", 1)[-1].removesuffix(".md")
            if memory_id in ids:
                mine.setdefault(memory_id, []).append(ch)
        for memory_id, chs in mine.items():
            history[memory_id].append((entry, chs))
    applied = _genuine_applied(vault)
    problems, overrides = [], []
    with git.BlobReader(vault.root) as reader:
        states = _StateCache(reader, vault.config)
        for memory_id in sorted(ids):
            verdict = _judge(vault, memory_id, history[memory_id], states, applied)
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
    return GateReport(problems, overrides)


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


def _judge(vault: Vault, memory_id: str, versions, states: _StateCache, applied: set[str]):
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
        found = git_trailers(entry.body)
        new = [c for c in changes if c.new_sha != git.ZERO
               and (state := states(c.new_sha, c.path)) is not None and state.active_high]
        if entry.commit in applied or (new and _trusted_action(vault, entry, found, new[0], states)):
            return None
        if found.get(OVERRIDE_TRAILER):
            return entry, "", found[OVERRIDE_TRAILER]
        if new and (_from_pushed_proposal(vault, entry, memory_id, new[0].new_sha)
                    or _squash_of_pushed_proposal(vault, memory_id, new[0], states)):
            return None
        restored = _restored_from(steps, j, next(s for s in after if s.active_high).key)
        if restored is None:
            reason = high_risk_reason(_meta_of(states, new), vault.config) if new else "high risk"
            return entry, reason, None
        i = restored
    return None


def _trusted_action(vault: Vault, entry: git.LogEntry, found: Mapping[str, str], change: git.RawChange,
                   states: _StateCache) -> bool:
    """A memrepo commit whose kind may activate a high-risk memory, checked against what such a
    commit can do, so a hand commit that only copies the trailer is still seen:

    * ``import`` adds new files written as ``source: import``; it never edits a memory;
    * ``arbitrate`` settles a supersede by policy: the memory's sole high-risk reason is that
      it overrides a state (a high-risk kind always goes to review);
    * ``sync`` merges another clone's main: it is a merge commit.
    """
    action = found.get("Memrepo-Action")
    if action not in _TRUSTED_ACTIONS:
        return False
    meta = _meta_of(states, [change])
    if action == "import":
        return change.status == "A" and meta.get("source") == "import"
    if action == "arbitrate":
        return not risk.assess(meta, RowSet(), vault.config).high
    return len(entry.parents) >= 2  # a sync is a merge (it may settle a fact by policy, so its version can be new)


def _squash_of_pushed_proposal(vault: Vault, memory_id: str, change: git.RawChange, states: _StateCache) -> bool:
    """True when the commit holds, byte for byte, the version the "activate on merge" commit of
    the memory's pushed proposal holds (a squash or rebase merge on a forge copies it)."""
    pid = _meta_of(states, [change]).get("proposal")
    if not isinstance(pid, str) or not pid:
        return False
    refs = git.ref_messages(vault.root, f"refs/heads/proposal/{pid}") | git.ref_messages(vault.root, f"refs/remotes/*/proposal/{pid}")
    for ref, (_tip, message) in refs.items():
        t = git_trailers(message)
        if t.get("Memrepo-Action") != "activate" or t.get("Memrepo-Proposal") != pid:
            continue
        held = git.run(vault.root, "rev-parse", "-q", "--verify", f"{ref}:{change.path}", check=False).strip()
        if held == change.new_sha:
            return True
    return False


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


def _from_pushed_proposal(vault: Vault, entry: git.LogEntry, memory_id: str, blob: str) -> bool:
    """True when ``entry`` merged (or is) the activation commit ``memrepo proposals push`` made
    for this memory, on top of the proposal that held it for review, with this very file."""
    rng = [entry.commit] if len(entry.parents) < 2 else [f"{entry.parents[0]}..{p}" for p in entry.parents[1:]]
    for rev in rng:
        extra = ["-n", "1"] if rev == entry.commit else ["-n", "200"]
        for act in git.log(vault.root, rev, extra=extra):
            t = git_trailers(act.body)
            if t.get("Memrepo-Action") != "activate" or not act.parents:
                continue
            parent = git.log(vault.root, act.parents[0], extra=["-n", "1"])[0]
            p = git_trailers(parent.body)
            if (p.get("Memrepo-Action") != "propose" or p.get("Memrepo-Proposal") != t.get("Memrepo-Proposal")
                    or memory_id not in p.get("Memrepo-Ids", "").split(",")):
                continue
            if _blob_of(vault, act.commit, memory_id) == blob and _status_at(vault, parent.commit, memory_id) == "pending_review":
                return True
    return False


def _blob_of(vault: Vault, rev: str, memory_id: str) -> str | None:
    path = vault.find_path(memory_id, rev)
    return git.run(vault.root, "rev-parse", f"{rev}:{path}").strip() if path else None


def _status_at(vault: Vault, rev: str, memory_id: str) -> str | None:
    path = vault.find_path(memory_id, rev)
    if path is None:
        return None
    memory, _ = check_bytes(path, git.read_blob(vault.root, f"{rev}:{path}"))
    return memory.meta.get("status") if memory else None


def _genuine_applied(vault: Vault) -> set[str]:
    """The commits of ``refs/memrepo/applied/<id>`` markers that are ``memrepo apply`` merges of
    that very proposal: a marker pointed at a hand commit (``git update-ref``) vouches for nothing.
    (A marker ``memrepo sync`` records for a forge merge is checked as that merge instead.)"""
    found = set()
    for ref, (sha, message) in git.ref_messages(vault.root, "refs/memrepo/applied/").items():
        t = git_trailers(message)
        if t.get("Memrepo-Action") == "apply" and t.get("Memrepo-Proposal") == ref.rsplit("/", 1)[-1]:
            found.add(sha)
    return found


def git_trailers(message: str) -> dict[str, str]:
    from memrepo.review.proposals import trailers
    return trailers(message)


def _refs(vault: Vault, prefix: str) -> Iterable[tuple[str, str]]:
    return list(git.refs(vault.root, prefix).items())
