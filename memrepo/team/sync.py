"""``memrepo sync``: share a vault between machines through any git remote.

One round: fetch the remote's ``main``, proposal branches and closed-proposal records;
integrate the remote ``main`` with the local one (fast-forward, or one merge commit built by
memrepo itself: memory files merge by meaning, citation logs by union, two active values for
one fact resolved by the ``[arbitration]`` policy); re-check every invariant the merged files
touch; push ``main``, the proposal branches and the records. Nothing is ever forced. A push
rejected because the remote moved meanwhile starts the round again from a fresh fetch, a few
times at most; whatever still could not be pushed is reported.

The checkout only ever moves from one complete commit to the next (the same journaled update
every memrepo write uses): a headless agent never sees conflict markers or a half-merged tree.
The agents' private vaults are separate repositories and are never part of this.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

from memrepo.errors import Conflict, GitError, InvalidMemory, Problem, UsageError
from memrepo.model import Memory, is_memory_path, new_id, now_iso
from memrepo.review import records
from memrepo.store import git, incoming, recall_checks
from memrepo.store.checks import Overlay, Row, check_bytes, check_rows
from memrepo.store.vault import Vault, render_bytes
from memrepo.team import merge, propose

ATTEMPTS = 5
CITATIONS = "citations/"
APPLIED, REJECTED = "refs/memrepo/applied/", "refs/memrepo/rejected/"
POLICY = "refs/memrepo/policy/"   # review-policy files a person accepted (memrepo.review.policy)
RECORDS = (("applied", APPLIED), ("rejected", REJECTED), ("policy", POLICY),  # travel with every sync
           ("proposed", records.PROPOSED_PREFIX), ("imported", records.IMPORTED_PREFIX),
           ("arbitrated", records.ARBITRATED_PREFIX))


@dataclass
class SyncResult:
    remote: str
    before: str | None = None
    after: str | None = None
    integrated: str = "nothing"          # nothing, fast-forward, merge
    pushed: bool = False
    attempts: int = 0
    proposals: list[str] = field(default_factory=list)     # conflict proposals opened by this sync
    adopted: list[str] = field(default_factory=list)       # proposals recognised as applied/rejected elsewhere
    deleted: list[str] = field(default_factory=list)       # closed proposals' branches deleted on the remote
    not_pushed: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    unreviewed: list[Problem] = field(default_factory=list)  # what the integrated commits brought past review

    def as_dict(self) -> dict[str, Any]:
        return {"remote": self.remote, "before": self.before, "after": self.after, "integrated": self.integrated,
                "pushed": self.pushed, "attempts": self.attempts, "proposals": self.proposals,
                "adopted": self.adopted, "deleted": self.deleted, "not_pushed": self.not_pushed, "notes": self.notes,
                "unreviewed": [p.as_dict() for p in self.unreviewed]}


def install_driver(vault: Vault, python: str | None = None) -> list[str]:
    """Register the memory merge driver for a plain ``git merge``/``git pull`` in this clone."""
    exe = python or sys.executable
    git.set_config(vault.root, "merge.memrepo.name", "memrepo: merge memory files by meaning")
    git.set_config(vault.root, "merge.memrepo.driver", f'"{exe}" -m memrepo.cli.hook_entry merge-driver %O %A %B %P')
    attributes = git.git_path(vault.root, "info/attributes")
    wanted = ["memories/** merge=memrepo", "archive/** merge=memrepo", "citations/*.jsonl merge=union"]
    text = attributes.read_text(encoding="utf-8") if attributes.exists() else ""
    missing = [w for w in wanted if w not in text.splitlines()]
    if missing:
        attributes.parent.mkdir(parents=True, exist_ok=True)
        attributes.write_text(text + ("\n" if text and not text.endswith("\n") else "") + "\n".join(missing) + "\n", encoding="utf-8")
    done = ["merge driver: memories/** and archive/** merge by meaning (merge.memrepo)"]
    for remote in git.remotes(vault.root):
        git.add_config(vault.root, f"remote.{remote}.fetch",
                       [f"+{prefix}*:refs/memrepo/remote/{remote}/{kind}/*" for kind, prefix in RECORDS])
        done.append(f"{remote}: git fetch and git pull also bring memrepo's review records (refs/memrepo/)")
    return done


def sync(vault: Vault, *, remote: str = "origin", attempts: int = ATTEMPTS) -> SyncResult:
    """Fetch, integrate, re-check, push; retried from a fresh fetch when the push is rejected.
    The merge driver is installed first, so a plain ``git pull`` in this clone merges memory
    files by meaning too."""
    if vault.owner is not None:
        raise UsageError(f"{vault.root} is the private vault of {vault.owner}: private memories are never synced")
    if remote not in git.remotes(vault.root):
        raise UsageError(f"no git remote {remote!r} in {vault.root}; add one with 'git remote add {remote} URL'")
    vault.ensure_trusted()  # a main a plain pull made unsafe is neither read nor pushed on
    install_driver(vault)
    result = SyncResult(remote, before=vault.head())
    main = vault.main_branch
    for attempt in range(1, attempts + 1):
        result.attempts = attempt
        with vault.lock():
            vault.require_main_checkout()
            _fetch(vault, remote)
            _adopt_records(vault, remote)   # first: a policy accepted elsewhere decides this merge too
            _integrate(vault, remote, result)
            _adopt_proposals(vault, remote, result)
        pushed = _push(vault, remote, main, result)
        if pushed:
            result.pushed = True
            _delete_closed_branches(vault, remote, result)
            break
    result.after = vault.head()
    if result.integrated != "nothing":
        result.unreviewed = unreviewed_between(vault, result.before, result.after)
    if not result.pushed:
        result.notes.append(f"{main} could not be pushed to {remote} after {attempts} attempts "
                            f"({result.not_pushed.get('refs/heads/' + main, 'remote kept moving')}); "
                            "local commits are safe; run 'memrepo sync' again")
    return result


def unreviewed_between(vault: Vault, before: str | None, after: str | None) -> list[Problem]:
    """What the commits between ``before`` and ``after`` brought past review: a lowered review
    policy, and active high-risk memories that did not become active through review (the same
    audit as ``validate``, for the memories these commits changed)."""
    from memrepo.review import gate, policy
    from memrepo.store.checks import check_bytes
    if after is None or before == after:
        return []
    found = [p.problem() for p in policy.pending(vault, since=before)] if before else [p.problem() for p in policy.pending(vault)]
    changed = [c for c in git.diff_tree(vault.root, before, after, ("memories", "archive")) if c.status != "D"]
    blobs = git.read_blobs(vault.root, [c.sha for c in changed])
    candidates = {}
    for c in changed:
        memory, problems = check_bytes(c.path, blobs[c.sha])
        if memory is not None and not problems and memory.meta.get("status") == "active" and \
                gate.high_risk_reason(dict(memory.meta), vault.config):
            candidates[memory.id] = c.path
    return found + gate.audit(vault, candidates).problems


def _fetch(vault: Vault, remote: str) -> None:
    try:
        # Patterns, not names: an empty remote (the first sync) has no main yet.
        git.fetch(vault.root, remote, [f"+refs/heads/*:refs/remotes/{remote}/*",
                                       *(f"+{prefix}*:refs/memrepo/remote/{remote}/{kind}/*" for kind, prefix in RECORDS)])
    except GitError as e:
        raise GitError(f"fetching from {remote} failed; nothing changed locally: {e}") from None


def _push(vault: Vault, remote: str, main: str, result: SyncResult) -> bool:
    specs = [f"refs/heads/{main}:refs/heads/{main}"]
    specs += [f"{ref}:{ref}" for ref in git.refs(vault.root, "refs/heads/proposal/")]
    specs += [f"{ref}:{ref}" for prefix in (APPLIED, REJECTED, POLICY) for ref in git.refs(vault.root, prefix)]
    try:
        outcome = git.push(vault.root, remote, specs)
    except GitError as e:
        result.not_pushed[f"refs/heads/{main}"] = str(e)
        return False
    result.not_pushed = {ref: why for ref, why in outcome.items() if why.startswith("rejected")}
    return f"refs/heads/{main}" not in result.not_pushed


def _delete_closed_branches(vault: Vault, remote: str, result: SyncResult) -> None:
    """The branches of proposals closed here leave the remote once their records are there."""
    from memrepo.review import proposals
    for branch, outcome in proposals.delete_pushed_branches(vault, remote=remote).items():
        branch = branch.removeprefix(f"{remote}/")
        if outcome == "ok":
            result.deleted.append(branch)
        else:
            result.notes.append(f"{branch} kept on {remote}: {outcome}")


# ------------------------------------------------------------------ integrate

def _integrate(vault: Vault, remote: str, result: SyncResult) -> None:
    local, theirs = vault.head(), git.rev_parse(vault.root, f"refs/remotes/{remote}/{vault.main_branch}")
    if theirs is None or theirs == local or (local and git.is_ancestor(vault.root, theirs, local)):
        return
    incoming.check_range(vault.root, local, theirs, what=f"{remote}/{vault.main_branch} at {theirs[:12]}")
    incoming.check_config(vault.root, local, theirs, what=f"{remote}/{vault.main_branch} at {theirs[:12]}")
    if local is None or git.is_ancestor(vault.root, local, theirs):
        vault.fast_forward(theirs)
        result.integrated = "fast-forward"
        return
    base = git.merge_base(vault.root, local, theirs)
    plan = _Merge(vault, base, local, theirs)
    files, conflicts = plan.run()
    result.notes += plan.notes
    message = (f"memrepo: sync merge {remote}/{vault.main_branch} ({len(files)} files)\n\n"
               + "".join(f"{n}\n" for n in plan.notes) + ("\n" if plan.notes else "")
               + f"Memrepo-Action: sync\nMemrepo-Remote: {remote}\n")
    parsed = [m for m in plan.written.values() if files.get(m.path) is not None]
    vault.commit(files=files, merge=[theirs], message=message, expect=local, parsed=parsed)
    vault._config = None  # the merge may have brought a new config
    result.integrated = "merge"
    for loser, winner, reason in conflicts:
        result.proposals.append(_reopen(vault, loser, winner, reason))


def _reopen(vault: Vault, loser: Memory, winner: Memory, reason: str) -> str:
    """The local value that lost a review-policy conflict, as a proposal against the kept one."""
    from memrepo.review import proposals
    meta = {k: v for k, v in loser.meta.items() if k not in ("superseded_by", "proposal", "rollback_point", "updated")}
    meta.update(id=new_id(), status="pending_review", supersedes=winner.id, risk="high", risk_reason=reason,
                links=list(dict.fromkeys([*loser.meta.get("links", ()), loser.id])), created=now_iso())
    return proposals.create(vault, [Memory(meta, loser.body)], reason=reason).id


class _Merge:
    """The merged tree of two diverged mains, as the files that differ from the local one."""

    def __init__(self, vault: Vault, base: str | None, ours: str, theirs: str):
        self.vault, self.base, self.ours, self.theirs = vault, base, ours, theirs
        self.notes: list[str] = []
        self.files: dict[str, bytes | None] = {}
        self.written: dict[str, Memory] = {}      # id -> merged memory written by this merge
        self.blobs: dict[str, bytes] = {}

    def run(self) -> tuple[dict[str, bytes | None], list[tuple[Memory, Memory, str]]]:
        ours_ch = git.diff_tree(self.vault.root, self.base, self.ours)
        theirs_ch = git.diff_tree(self.vault.root, self.base, self.theirs)
        theirs_paths = {c.path for c in theirs_ch}
        self.blobs = git.read_blobs(self.vault.root, [c.sha for c in theirs_ch if c.status != "D"]
                                    + [c.sha for c in ours_ch if c.status != "D" and c.path in theirs_paths])
        self._other_files(ours_ch, theirs_ch)
        self._memories(ours_ch, theirs_ch)
        self.local_ids = {_id(c.path) for c in ours_ch if is_memory_path(c.path) and c.status == "A"}
        conflicts = self._facts()
        self._recheck()
        return self.files, conflicts

    def _bytes(self, sha: str) -> bytes:
        if sha not in self.blobs:
            self.blobs.update(git.read_blobs(self.vault.root, [sha]))
        return self.blobs[sha]

    def _memory(self, path: str, data: bytes) -> Memory:
        memory, problems = check_bytes(path, data)
        if memory is None:
            raise InvalidMemory(problems, "sync stopped before merging: fix this file on its side (nothing changed locally)")
        return memory

    def _other_files(self, ours_ch, theirs_ch) -> None:
        ours = {c.path: c for c in ours_ch}
        for tc in theirs_ch:
            if is_memory_path(tc.path):
                continue
            oc = ours.get(tc.path)
            if oc is None:
                self.files[tc.path] = None if tc.status == "D" else self._bytes(tc.sha)
            elif oc.sha == tc.sha:
                continue
            elif tc.path.startswith(CITATIONS) and tc.path.endswith(".jsonl") and "D" not in (oc.status, tc.status):
                mine = self._bytes(oc.sha).decode("utf-8").splitlines()
                other = self._bytes(tc.sha).decode("utf-8").splitlines()
                self.files[tc.path] = ("\n".join(dict.fromkeys([*mine, *other])) + "\n").encode("utf-8")
            elif recall_checks.is_check_file(tc.path) and "D" not in (oc.status, tc.status) and \
                    (both := recall_checks.merge_texts(tc.path, self._bytes(oc.sha).decode("utf-8", "replace"),
                                                       self._bytes(tc.sha).decode("utf-8", "replace"))) is not None:
                self.files[tc.path] = both.encode("utf-8")   # recall checks: the union of both sides' checks
            else:
                self.notes.append(f"{tc.path} changed on both sides; kept this clone's version (edit it by hand if needed)")

    def _memories(self, ours_ch, theirs_ch) -> None:
        ours_by_id = _by_id(ours_ch)
        for mid, changes in _by_id(theirs_ch).items():
            if mid not in ours_by_id:
                for ch in changes:
                    data = None if ch.status == "D" else self._bytes(ch.sha)
                    self.files[ch.path] = data
                    if data is not None:
                        self.written[mid] = self._memory(ch.path, data)
                continue
            mine, other = _version(ours_by_id[mid]), _version(changes)
            if mine == other:
                continue
            if other is None:               # deleted there (a reviewed deletion): deleted here too
                if mine is not None:
                    self.files[mine[0]] = None
                    self.notes.append(f"{mid}: deleted on the remote; its local edits are kept in history")
                continue
            if mine is None:                # deleted here: stays deleted
                continue
            base = self._base_version(ours_by_id[mid] + changes)
            merged = merge.merge_memory(base, self._memory(mine[0], self._bytes(mine[1])),
                                        self._memory(other[0], self._bytes(other[1])))
            if mine[0] != merged.path:
                self.files[mine[0]] = None
            self._write(merged)

    def _base_version(self, changes) -> Memory | None:
        if self.base is None:
            return None
        for ch in changes:
            if ch.status in ("M", "D"):
                return self.vault.read_at(self.base, ch.path)
        return None

    def _write(self, memory: Memory) -> None:
        self.files[memory.path] = render_bytes(memory)
        self.written[memory.id] = memory

    # ---------------------------------------------------------- facts

    def _view(self) -> Overlay:
        rows = [Row.of(m) for m in self.written.values()]
        gone = [p for p, data in self.files.items() if data is None and is_memory_path(p)]
        return Overlay(self.vault.catalog(), rows, gone)

    def _current(self, mid: str) -> Memory | None:
        if mid in self.written:
            return self.written[mid]
        rows = self._view().with_id(mid)
        return self.vault.read_at(self.ours, rows[0].path) if rows else None

    def _facts(self) -> list[tuple[Memory, Memory, str]]:
        """Two active values for one (subject, fact): the arbitration policy picks one."""
        conflicts: list[tuple[Memory, Memory, str]] = []
        for _round in range(50):
            clash = self._next_clash()
            if clash is None:
                return conflicts
            a, b = clash
            conflict = self._resolve(a, b)
            if conflict:
                conflicts.append(conflict)
        raise Conflict("sync stopped: could not settle the active values of a fact (nothing changed locally)")

    def _next_clash(self) -> tuple[Memory, Memory] | None:
        view = self._view()
        for memory in list(self.written.values()):
            if memory.meta.get("status") != "active" or not memory.key:
                continue
            rows = view.active_for(*memory.key)
            if len(rows) > 1:
                first, second = (self._current(r.id) for r in rows[:2])
                if first is not None and second is not None:
                    return first, second
        return None

    def _resolve(self, a: Memory, b: Memory) -> tuple[Memory, Memory, str] | None:
        assert a.key is not None  # a clash is between two active values of one fact
        subject, fact = a.key
        policy = propose.policy_for(self.vault, subject, fact)
        high = {a.meta.get("kind"), b.meta.get("kind")} & set(self.vault.config.get("risk", "high_kinds", ()))
        if high:
            policy = "review"
        ordered = sorted([a, b], key=lambda m: (str(m.meta.get("created", "")), m.id))
        if policy == "review":
            local = [m for m in (a, b) if m.id in self.local_ids]
            loser = local[0] if len(local) == 1 else ordered[1]
        elif policy == "authority":
            ranks = sorted([a, b], key=lambda m: (propose._rank(self.vault, m.meta.get("author")),
                                                  [-ord(c) for c in str(m.meta.get("created", ""))]))
            loser = ranks[1]
        else:
            loser = ordered[0]
        winner = b if loser is a else a
        reason = (f"sync: two active values for ({subject}, {fact}): {winner.id} {winner.meta.get('summary')!r} "
                  f"by {winner.meta.get('author')} kept, {loser.id} {loser.meta.get('summary')!r} by "
                  f"{loser.meta.get('author')} retired (arbitration: {policy})")
        self.notes.append(reason)
        self._retire(loser, winner)
        return (loser, winner, reason) if policy == "review" else None

    def _retire(self, loser: Memory, winner: Memory) -> None:
        now = now_iso()
        target = loser.meta.get("supersedes")
        if winner.meta.get("supersedes") in (None, target) and not loser.meta.get("superseded_by"):
            self._write(winner.evolve(supersedes=loser.id))
            self._write(loser.evolve(status="superseded", superseded_by=winner.id, updated=now))
            older = self._current(target) if target else None
            if older is not None:
                self._write(older.evolve(superseded_by=loser.id))
            return
        self._write(loser.evolve(status="rejected", updated=now))

    def _recheck(self) -> None:
        view = self._view()
        rows = [Row.of(m) for m in self.written.values()]
        gone = [p for p, data in self.files.items() if data is None and is_memory_path(p)]
        deleted = [r for p in gone for r in self.vault.catalog()._rows("path=?", (p,))]
        problems = check_rows(rows, view, deleted=deleted)
        if problems:
            raise InvalidMemory(problems, "sync stopped: the merged vault would break these invariants; nothing changed locally")


def _id(path: str) -> str:
    return path.rsplit("/", 1)[-1][:-3]


def _by_id(changes) -> dict[str, list]:
    out: dict[str, list] = {}
    for ch in changes:
        if is_memory_path(ch.path):
            out.setdefault(_id(ch.path), []).append(ch)
    return out


def _version(changes) -> tuple[str, str] | None:
    """(path, blob) of the memory after these changes, or None when they delete it."""
    kept = [ch for ch in changes if ch.status != "D"]
    return (kept[0].path, kept[0].sha) if kept else None


# ------------------------------------------------------------------ proposals travel

def _adopt_proposals(vault: Vault, remote: str, result: SyncResult) -> None:
    """Proposals closed on another clone (or merged on a forge) close here; open ones from
    other clones appear here."""
    root = vault.root
    _adopt_records(vault, remote)
    main = vault.head()
    for ref, sha in git.refs(root, f"refs/remotes/{remote}/proposal/").items():
        pid = ref.removeprefix(f"refs/remotes/{remote}/proposal/")
        local = f"refs/heads/proposal/{pid}"
        if git.rev_parse(root, local) is None and not _closed(root, pid) and not (main and git.is_ancestor(root, sha, main)):
            bad = incoming.unsafe_changes(git.diff_tree(root, main, sha))
            if bad:
                result.notes.append(f"proposal {pid} from {remote} not taken: {bad[0][0]}: {bad[0][1]}")
                continue
            git.update_refs(root, [git.RefChange(local, sha, None)], reason=f"memrepo: proposal {pid} from {remote}")
    recorded = set(git.refs(root, "refs/memrepo/proposed/").values())
    for ref, sha in git.refs(root, "refs/heads/proposal/").items():
        pid = ref.removeprefix("refs/heads/proposal/")
        # merged on a forge: applied, when the tip is an activation memrepo recorded (not a look-alike)
        if not _closed(root, pid) and main and sha in recorded and git.is_ancestor(root, sha, main):
            merged = git.merge_commit_of(root, sha, main)
            if merged:
                git.update_refs(root, [git.RefChange(APPLIED + pid, merged, None)], reason=f"memrepo: {pid} merged into main")
        if _closed(root, pid):
            git.update_refs(root, [git.RefChange(ref, None, sha)], reason=f"memrepo: {pid} closed")
            result.adopted.append(pid)


def _adopt_records(vault: Vault, remote: str) -> None:
    """The remote's records (proposals applied or rejected, review policies accepted) that this
    clone lacks, as fetched into ``refs/memrepo/remote/<remote>/``."""
    root = vault.root
    known = git.refs(root, *(prefix for _kind, prefix in RECORDS))
    for kind, prefix in RECORDS:
        for ref, sha in git.refs(root, f"refs/memrepo/remote/{remote}/{kind}/").items():
            name = ref.rsplit("/", 1)[-1]
            if prefix + name not in known:
                git.update_refs(root, [git.RefChange(prefix + name, sha, None)], reason=f"memrepo: {name} {kind} on {remote}")
                vault.refresh()  # an accepted policy may now be in force


def fetch_records(vault: Vault) -> list[str]:
    """Fetch and take every remote's records (what a fresh clone lacks: a plain ``git clone``
    fetches branches only), so the review policy a person accepted elsewhere is in force here
    before the first sync; returns a note per remote that could not be reached."""
    notes = []
    for remote in git.remotes(vault.root):
        try:
            git.fetch(vault.root, remote, [f"+{prefix}*:refs/memrepo/remote/{remote}/{kind}/*" for kind, prefix in RECORDS])
        except GitError as e:
            notes.append(f"{remote}: review records not fetched ({e}); 'memrepo sync' fetches them")
            continue
        _adopt_records(vault, remote)
    return notes


def _closed(root, pid: str) -> bool:
    return bool(git.rev_parse(root, APPLIED + pid) or git.rev_parse(root, REJECTED + pid))
