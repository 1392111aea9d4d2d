"""Review proposals: branches that hold high-risk changes until a person applies or rejects them.

A proposal is the branch ``proposal/<id>`` with one commit on top of the main tip it was made
from (its *base*): the new memories with ``status: pending_review``; its commit message is the
review card. It is built with plumbing, so the user's checkout and index are never touched.

* **apply** writes one merge commit on main (first parent: main, second: the proposal): the
  memories become ``active``; with ``overwrite`` the memory each one supersedes becomes
  ``superseded`` in the same commit. It refuses when a superseded target changed since the
  base or another version of the fact became active first.
* **reject** records who and why in a commit on top of the proposal, kept reachable under
  ``refs/memrepo/rejected/<id>``, and removes ``proposal/<id>`` from the queue.
* **push** adds an "activate on merge" commit (the same statuses apply would write) and pushes
  the branch, so merging the pull request on a forge yields the state ``apply`` yields.
Applied proposals are remembered under ``refs/memrepo/applied/<id>`` (the merge commit).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Mapping

from memrepo.errors import Conflict, GitError, InvalidMemory, NotFound, UsageError
from memrepo.model import MERGE_MODES, Memory, check_choice, new_id, now_iso
from memrepo.review import proposal_files
from memrepo.review.records import APPLIED_PREFIX, BRANCH_PREFIX, PROPOSED_PREFIX, REJECTED_PREFIX, trailers  # noqa: F401
from memrepo.store import faults, git
from memrepo.store.checks import Overlay, Row, check_rows
from memrepo.store.vault import Vault

_REVERTS_RE = re.compile(r"^This reverts (?:the part of )?commit ([0-9a-f]{40})", re.MULTILINE)
MODES = MERGE_MODES


@dataclass(frozen=True)
class Proposal:
    id: str
    branch: str
    commit: str            # the proposal commit (pending_review memories, card in message)
    tip: str               # branch tip (differs from commit after push added the activation)
    base: str              # main tip when proposed: the rollback point
    ids: tuple[str, ...]
    status: str            # open, applied, rejected
    author: str
    created: str
    reason: str
    outcome: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "branch": self.branch, "status": self.status, "memories": list(self.ids),
                "base": self.base, "commit": self.commit, "author": self.author, "created": self.created,
                "reason": self.reason, **({"outcome": self.outcome} if self.outcome else {})}


def new_proposal_id(memories: list[Memory]) -> str:
    if len(memories) == 1:
        return f"prop_{memories[0].id}"[:128]
    return new_id().replace("mem_", "prop_", 1)


# ------------------------------------------------------------------ create

def create(vault: Vault, memories: list[Memory], *, reason: str, push: bool = False,
           remote: str = "origin", proposal_id: str | None = None,
           deletes: Iterable[Memory] = (), affected: Iterable[str] = (), checked: bool = False,
           files: Mapping[str, bytes] | None = None, agent: str | None = None, request_id: str | None = None,
           call_id: str | None = None) -> Proposal:
    """Open a proposal branch for ``memories`` (and deletions) (caller holds the vault lock).

    ``checked``: the caller has already checked each memory on its own and its id against
    the vault (``add`` and ``import`` do, before routing), so they are not checked twice.
    ``files``: new recall-check files (``checks/*.yaml``) the proposal adds when applied."""
    deletes, adds = list(deletes), dict(files or {})
    proposal_files.check_new(vault, adds)
    base = vault.head()
    pid = proposal_id or new_proposal_id(memories)
    branch = BRANCH_PREFIX + pid
    if git.rev_parse(vault.root, f"refs/heads/{branch}") or _closed_ref(vault, pid):
        raise Conflict(f"a proposal {pid} already exists; see 'memrepo proposals --all'")
    memories = [m.evolve(proposal=pid, rollback_point=base) for m in memories]
    if not checked:
        _check_proposed(vault, memories)
    card = review_card(vault, memories, reason=reason, base=base, deletes=deletes, affected=affected)
    card += "".join(f"\n{line}" for line in proposal_files.card_lines(adds))
    ids = ",".join(dict.fromkeys([m.id for m in memories] + [m.id for m in deletes]))   # a move writes and deletes one id
    first = (memories or deletes or [Memory({"summary": reason}, "")])[0]
    message = (f"memrepo: propose {pid} ({len(memories)} memor{'y' if len(memories) == 1 else 'ies'}): "
               f"{first.meta['summary']}"[:100] + "\n\n" + card + "\n\n"
               f"Memrepo-Action: propose\nMemrepo-Proposal: {pid}\nMemrepo-Base: {base}\n"
               f"Memrepo-Ids: {ids}\nMemrepo-Author: {first.meta.get('author', '')}\n"
               f"Memrepo-Reason: {reason}\n")
    from memrepo.review import requests
    message += "".join(f"{k}: {v}\n" for k, v in requests.trailers(request_id, call_id).items())
    vault.commit(writes=memories, deletes=[m.path for m in deletes], message=message, branch=branch,
                 parent=base, reason=f"memrepo: propose {pid}", files={**adds}, agent=agent,
                 also=requests.record(request_id))
    proposal = get(vault, pid)
    if push:
        push_proposal(vault, pid, remote=remote)
    return proposal


def _bytes(memory: Memory) -> bytes:
    from memrepo.store.vault import render_bytes
    return render_bytes(memory)


def _check_proposed(vault: Vault, memories: list[Memory]) -> None:
    from memrepo.store.checks import check_memory
    problems = []
    for m in memories:
        problems += check_memory(m, text=_bytes(m).decode("utf-8"))
    rows = [Row.of(m) for m in memories]
    problems += [p for p in check_rows(rows, Overlay(vault.catalog(), rows)) if p.field == "id"]
    if problems:
        raise InvalidMemory(problems, "no proposal was created")


def review_card(vault: Vault, memories: list[Memory], *, reason: str, base: str | None,
                deletes: Iterable[Memory] = (), affected: Iterable[str] = ()) -> str:
    """The five answers a reviewer needs (what triggered it, what it
    supersedes, the evidence, what it affects, the rollback point), as plain text.

    ``affected`` names what cites the memory being replaced (memories and agent outputs):
    they are listed under Affects, as they need re-evaluating when it changes.
    """
    affected = list(affected)
    lines = ["Review card", "==========="]
    for m in deletes:
        lines += [f"Delete {m.id} ({m.meta.get('layer')} {m.meta.get('kind')}, subject {m.meta.get('subject')}, "
                  f"status {m.meta.get('status')}): {m.meta.get('summary')}",
                  f"  Why: {reason}",
                  f"  Rollback point: {base} (git keeps the file in history)"]
    for m in memories:
        meta = m.meta
        lines += [f"Memory {m.id} ({meta.get('layer')} {meta.get('kind')}, subject {meta.get('subject')}"
                  + (f", fact {meta['fact']}" if meta.get("fact") else "") + f"): {meta.get('summary')}",
                  f"  Risk: {meta.get('risk', 'high')}: {reason}",
                  f"1. Triggered by: {meta.get('author', 'unknown')} (source: {meta.get('source')}"
                  + (f", session {meta['session']}" if meta.get("session") else "")
                  + (f", written through {meta['x-written-via']}" if meta.get("x-written-via") else "") + ")",
                  *_supersedes_lines(vault, m),
                  "3. Evidence: " + ("; ".join(meta.get("evidence", ())) or "none given"),
                  "4. Affects: " + ("; ".join([*meta.get("affects", ()), *(f"cited by {a}" for a in affected)])
                                    or _default_affects(meta)),
                  f"5. Rollback point: {base or 'the empty vault'} (main returns here if this is wrong)"]
        if meta.get("links"):
            lines.append("   Links: " + ", ".join(meta["links"]))
    return "\n".join(lines)


def _supersedes_lines(vault: Vault, memory: Memory) -> list[str]:
    """What the memory replaces, and both sides of the conflict: who holds the value being
    replaced and on what evidence."""
    target = memory.meta.get("supersedes")
    if not target:
        return ["2. Supersedes: nothing (no active memory for this fact)"]
    try:
        old = vault.get(target)
    except NotFound:
        return [f"2. Supersedes: {target} (not found on main)"]
    return [f"2. Supersedes: {old.id} (active): {old.meta.get('summary')}",
            f"   Current value: {old.meta.get('summary')!r} by {old.meta.get('author', 'unknown')}"
            f" (evidence: {'; '.join(old.meta.get('evidence', ())) or 'none given'})",
            f"   Proposed value: {memory.meta.get('summary')!r} by {memory.meta.get('author', 'unknown')}"
            f" (evidence: {'; '.join(memory.meta.get('evidence', ())) or 'none given'})"]


def _default_affects(meta) -> str:
    what = f"({meta.get('subject')}, {meta['fact']})" if meta.get("fact") else str(meta.get("subject"))
    return f"what the agent recalls and does about {what} ({meta.get('kind')})"


# ------------------------------------------------------------------ reading

def _closed_ref(vault: Vault, pid: str) -> str | None:
    found = git.refs(vault.root, APPLIED_PREFIX + pid, REJECTED_PREFIX + pid)
    return found.get(APPLIED_PREFIX + pid) or found.get(REJECTED_PREFIX + pid)


def _all_refs(vault: Vault) -> dict[str, str]:
    """Every proposal branch and applied/rejected marker (ref -> commit), in one git call."""
    return git.refs(vault.root, "refs/heads/" + BRANCH_PREFIX, APPLIED_PREFIX, REJECTED_PREFIX)


def _proposal_commits(vault: Vault, tips: list[str]) -> dict[str, git.LogEntry]:
    """tip -> the 'propose' commit at or below it (push may have added one on top), for
    every tip at once: one git call per level below the tip, at most three."""
    below = {tip: tip for tip in tips}
    found: dict[str, git.LogEntry] = {}
    for _level in range(3):
        need = {t: c for t, c in below.items() if t not in found}
        if not need:
            break
        entries = git.commits(vault.root, need.values())
        for tip, sha in need.items():
            entry = entries.get(sha)
            if entry is None:
                continue
            if trailers(entry.body).get("Memrepo-Action") == "propose":
                found[tip] = entry
            elif entry.parents:
                below[tip] = entry.parents[0]
    return found


# (proposal id, branch tip, status, branch, outcome)
_Item = tuple[str, str, str, str, dict[str, Any]]


def _load_all(vault: Vault, items: list[_Item]) -> list[Proposal]:
    commits = _proposal_commits(vault, [tip for _pid, tip, *_rest in items])
    out = []
    for pid, tip, status, branch, outcome in items:
        entry = commits.get(tip)
        if entry is None:
            raise InvalidMemory([], f"{tip[:12]} is not a memrepo proposal (no 'Memrepo-Action: propose' commit)")
        found = trailers(entry.body)
        out.append(Proposal(id=pid, branch=branch, commit=entry.commit, tip=tip, base=found.get("Memrepo-Base", ""),
                            ids=tuple(filter(None, found.get("Memrepo-Ids", "").split(","))), status=status,
                            author=found.get("Memrepo-Author", entry.author), created=entry.date,
                            reason=found.get("Memrepo-Reason", ""), outcome=outcome))
    return out


def _items(vault: Vault, refs: dict[str, str], *, markers: dict[str, str] | None = None,
           include_merged: bool = True) -> list[_Item]:
    """What to load for these proposal refs: closed markers are read (one git call) for the
    reviewer, reason and the branch tip they closed. A pushed branch that main already
    contains was merged on a forge: applied by that merge (unless a marker among ``markers``,
    default ``refs``, records its outcome; left out without ``include_merged``)."""
    items: list[_Item] = []
    branch_prefix = "refs/heads/" + BRANCH_PREFIX
    from memrepo.review.merged import forge_outcome, merged_on_main
    merged = merged_on_main(vault) if any(ref.startswith(branch_prefix) for ref in refs) else {}
    markers = refs if markers is None else markers
    closed = {ref: sha for ref, sha in refs.items() if ref.startswith((APPLIED_PREFIX, REJECTED_PREFIX))}
    marker_commits = git.commits(vault.root, closed.values())
    for ref, sha in refs.items():
        if ref not in closed:
            pid = ref.removeprefix(branch_prefix)
            if ref not in merged:
                items.append((pid, sha, "open", ref.removeprefix("refs/heads/"), {}))
            elif include_merged and APPLIED_PREFIX + pid not in markers and REJECTED_PREFIX + pid not in markers:
                items.append((pid, sha, "applied", BRANCH_PREFIX + pid, forge_outcome(vault, sha, merged[ref])))
            continue
        status = "applied" if ref.startswith(APPLIED_PREFIX) else "rejected"
        pid = ref.removeprefix(APPLIED_PREFIX if status == "applied" else REJECTED_PREFIX)
        entry = marker_commits[sha]
        t = trailers(entry.body)
        outcome = {"by": t.get("Memrepo-Reviewer", entry.author), "at": entry.date,
                   "reason": t.get("Memrepo-Why", ""), "commit": sha, "mode": t.get("Memrepo-Mode", ""),
                   "declined": t.get("Memrepo-Declined", "")}
        tip = entry.parents[-1] if status == "applied" else entry.parents[0]
        items.append((pid, tip, status, BRANCH_PREFIX + pid, {k: v for k, v in outcome.items() if v}))
    return items


def list_proposals(vault: Vault, *, include_closed: bool = False) -> list[Proposal]:
    """Open proposals (and, with ``include_closed``, applied and rejected ones, and pushed
    proposals merged on a forge: applied by that merge)."""
    refs = _all_refs(vault) if include_closed else git.refs(vault.root, "refs/heads/" + BRANCH_PREFIX)
    found = _load_all(vault, _items(vault, refs, include_merged=include_closed))
    if include_closed and any(p.status == "applied" for p in found):
        undone = _reverts(vault)
        found = [replace(p, outcome={**p.outcome, "reverted": undone[p.outcome["commit"]]})
                 if p.status == "applied" and p.outcome.get("commit") in undone else p for p in found]
    return sorted(found, key=lambda p: (p.created, p.id))


def open_ids(vault: Vault) -> dict[str, str]:
    """Memory id -> open proposal id, for every memory an open proposal carries: one git call
    (the ids are in the tip's trailers), plus one for a branch whose tip lacks them."""
    found: dict[str, str] = {}
    prefix = "refs/heads/" + BRANCH_PREFIX
    tips = git.ref_messages(vault.root, prefix)
    lacking = [tip for tip, message in tips.values() if not trailers(message).get("Memrepo-Ids")]
    below = _proposal_commits(vault, lacking) if lacking else {}
    for ref, (tip, message) in tips.items():
        t = trailers(message)
        if not t.get("Memrepo-Ids"):
            if tip not in below:
                continue  # not a memrepo proposal: nothing it carries was announced
            t = trailers(below[tip].body)
        for memory_id in filter(None, t.get("Memrepo-Ids", "").split(",")):
            found.setdefault(memory_id, ref.removeprefix(prefix))
    return found


def _reverts(vault: Vault) -> dict[str, dict[str, str]]:
    """Commits on main that undid another commit (a memrepo rollback or a hand git revert),
    by the commit they undid: one git call for the whole listing."""
    undone: dict[str, dict[str, str]] = {}
    for entry in git.log(vault.root, vault.main_ref, extra=["-E", "--grep=^This reverts ", "--grep=^Memrepo-Reverts: "]):
        t = trailers(entry.body)
        target = t.get("Memrepo-Reverts") or next(iter(_REVERTS_RE.findall(entry.body)), None)
        if target and target not in undone:  # newest first: the latest undo is kept
            undone[target] = {"commit": entry.commit, "by": entry.author, "at": entry.date,
                              "action": "rollback" if t.get("Memrepo-Action") == "rollback" else "revert"}
    return undone


def get(vault: Vault, ref: str) -> Proposal:
    """An open or closed proposal by proposal id or by the id of a memory it carries."""
    pid = ref.removeprefix(BRANCH_PREFIX)
    refs = _all_refs(vault)
    for name in ("refs/heads/" + BRANCH_PREFIX + pid, APPLIED_PREFIX + pid, REJECTED_PREFIX + pid):
        if name in refs:
            items = _items(vault, {name: refs[name]}, markers=refs)
            if items:  # a branch merged on a forge with a marker since: the marker tells
                return _load_all(vault, items)[0]
    matches = [p for p in list_proposals(vault, include_closed=True) if ref in p.ids]
    open_ = [p for p in matches if p.status == "open"]
    if open_ or matches:
        return (open_ or matches)[-1]
    raise NotFound(f"no proposal {ref!r}; 'memrepo proposals --all' lists them")


def memories_of(vault: Vault, proposal: Proposal) -> list[Memory]:
    """The proposed memories as the proposal commit holds them."""
    return memories_of_all(vault, [proposal])[proposal.id]


def memories_of_all(vault: Vault, found: Iterable[Proposal]) -> dict[str, list[Memory]]:
    """proposal id -> its proposed memories, for many proposals in two git calls."""
    from memrepo.store.checks import check_bytes
    found = list(found)
    changes = git.diff_trees(vault.root, [(p.base or None, p.commit) for p in found], ("memories", "archive"))
    wanted = {p.id: [ch for ch in changes[(p.base or None, p.commit)] if ch.status != "D"] for p in found}
    blobs = git.read_blobs(vault.root, [ch.sha for chs in wanted.values() for ch in chs])
    out: dict[str, list[Memory]] = {}
    for pid, chs in wanted.items():
        out[pid] = []
        for ch in chs:
            memory, problems = check_bytes(ch.path, blobs[ch.sha])
            if memory is None:
                raise InvalidMemory(problems)
            out[pid].append(memory)
    return out


def card(vault: Vault, ref: str) -> str:
    proposal = get(vault, ref)
    entry = git.log(vault.root, proposal.commit, extra=["-n", "1"])[0]
    body = entry.body.split("\n\nMemrepo-Action:")[0]
    header = f"Proposal {proposal.id} [{proposal.status}] on branch {proposal.branch}\n"
    if proposal.outcome:
        header += "Outcome: " + ", ".join(f"{k} {v}" for k, v in proposal.outcome.items()) + "\n"
    return header + "\n" + body.strip() + "\n"


# ------------------------------------------------------------------ apply

def _require_open(proposal: Proposal) -> None:
    if proposal.status != "open":
        raise Conflict(f"proposal {proposal.id} is already {proposal.status}"
                       + (f" ({proposal.outcome.get('commit', '')[:12]})" if proposal.outcome else "")
                       + "; nothing changed")


def planned_deletes(vault: Vault, proposal: Proposal, *, only: Iterable[str] | None = None) -> list[str]:
    """Paths the proposal deletes that still hold the same file on main."""
    wanted = set(only) if only is not None else None
    gone = [ch.path for ch in git.diff_tree(vault.root, proposal.base or None, proposal.commit, ("memories", "archive"))
            if ch.status == "D" and (wanted is None or ch.path.rsplit("/", 1)[-1][:-3] in wanted)]
    ids = git.object_ids(vault.root, [f"{rev}:{path}" for path in gone for rev in (proposal.base, vault.main_ref)])
    for path in gone:
        if ids[f"{vault.main_ref}:{path}"] != ids[f"{proposal.base}:{path}"]:
            raise Conflict(f"{path}, which proposal {proposal.id} deletes, changed or moved since it was proposed; "
                           f"review again: 'memrepo reject {proposal.id} --why stale'")
    return gone


def planned_writes(vault: Vault, proposal: Proposal, *, mode: str, only: Iterable[str] | None = None) -> list[Memory]:
    """What applying writes on main: proposed memories active, superseded targets retired.

    Raises Conflict when the state the proposal was reviewed against has moved on.
    """
    check_choice("mode", mode, MODES)
    catalog = vault.catalog()
    head = vault.head()
    writes: list[Memory] = []
    wanted = set(only) if only is not None else None
    for memory in memories_of(vault, proposal):
        if wanted is not None and memory.id not in wanted:
            continue
        meta = memory.meta
        target = meta.get("supersedes")
        if target:
            _check_target_unchanged(vault, proposal, target)
        current = [r for r in catalog.active_for(meta["subject"], meta["fact"]) if r.id != memory.id] if meta.get("fact") else []
        if current and current[0].id != target:
            raise Conflict(f"{current[0].id} became active for ({meta['subject']}, {meta['fact']}) after proposal "
                           f"{proposal.id} was made (another proposal was applied first); review it again: "
                           f"'memrepo reject {proposal.id} --why stale' and re-add against the new state")
        now = now_iso()
        if mode == "append" or not target:
            if current:
                raise Conflict(f"append would leave two active memories for ({meta['subject']}, {meta['fact']}); use --mode overwrite")
            writes.append(memory.evolve(status="active", supersedes=None if mode == "append" else target, updated=now,
                                        rollback_point=head))
            continue
        old = vault.get(target)
        writes.append(memory.evolve(status="active", updated=now, rollback_point=head))
        writes.append(old.evolve(status="superseded", superseded_by=memory.id, updated=now))
    return writes


def _check_target_unchanged(vault: Vault, proposal: Proposal, target: str) -> None:
    base_path = vault.find_path(target, proposal.base) if proposal.base else None
    now_path = vault.catalog().path_of(target)
    if now_path is None:
        raise Conflict(f"{target}, which proposal {proposal.id} supersedes, no longer exists on main; "
                       f"re-review: 'memrepo reject {proposal.id} --why stale'")
    ids = git.object_ids(vault.root, [f"{vault.main_ref}:{now_path}"] + ([f"{proposal.base}:{base_path}"] if base_path else []))
    before = ids[f"{proposal.base}:{base_path}"] if base_path else None
    after = ids[f"{vault.main_ref}:{now_path}"]
    if before != after:
        changed = git.log(vault.root, f"{proposal.base}..{vault.main_ref}", paths=[now_path] + ([base_path] if base_path else []))
        what = "; ".join(f"{e.commit[:12]} {e.subject}" for e in changed[:3]) or "its file differs"
        raise Conflict(f"{target} changed since proposal {proposal.id} was made ({what}); "
                       f"review it again: 'memrepo review {proposal.id}', then reject and re-propose")


def apply(vault: Vault, ref: str, *, mode: str = "overwrite", reviewer: str | None = None,
          only: Iterable[str] | None = None, extra_trailers: Mapping[str, str] | None = None, why: str = "") -> str:
    """Merge a proposal into main as one merge commit; returns the merge commit id.

    ``only`` applies just those memory ids of a multi-memory proposal (a distill run); the
    others are recorded as declined in the merge commit and are not proposed again; an empty
    ``only`` chooses nothing and is refused (None applies them all). ``extra_trailers`` are
    recorded in the merge commit (``Memrepo-*: value`` lines), and so is the reviewer's ``why``
    (optional when approving; ``proposals --all`` and the history show it). A caller already holding the
    vault lock (the recall-checked apply) keeps it throughout.
    """
    vault.require_main_checkout()
    with vault.lock(reentrant=True):
        proposal = get(vault, ref)
        _require_open(proposal)
        only = list(only) if only is not None else None
        if only == []:
            raise UsageError(f"choose at least one memory of {proposal.id} to apply (it carries {', '.join(proposal.ids)}), "
                             "or reject the proposal")
        unknown = sorted(set(only or ()) - set(proposal.ids))
        if unknown:
            raise UsageError(f"proposal {proposal.id} does not carry {', '.join(unknown)}; it carries {', '.join(proposal.ids)}")
        proposal_files.check_branch(vault, proposal)
        writes = planned_writes(vault, proposal, mode=mode, only=only)
        deletes = planned_deletes(vault, proposal, only=only)
        files = proposal_files.planned(vault, proposal)
        gone = [r for p in deletes for r in vault.catalog()._rows("path=?", (p,))]
        vault.check_new(writes, deleted=gone)
        reviewer = reviewer or git.identity(vault.root)[0]
        applied = [i for i in proposal.ids if only is None or i in only]
        declined = [i for i in proposal.ids if i not in applied]
        title = writes[0].meta["summary"] if writes else f"delete {len(deletes)} memories" if deletes else proposal.reason
        message = (f"memrepo: apply {proposal.id} ({mode}): {title}"[:100]
                   + f"\n\nApplied proposal {proposal.id} ({', '.join(applied)}).\n\n"
                   + (f"{' '.join(why.split())}\n\n" if why.strip() else "")
                   + f"Memrepo-Action: apply\nMemrepo-Proposal: {proposal.id}\nMemrepo-Ids: {','.join(applied)}\n"
                   + (f"Memrepo-Declined: {','.join(declined)}\n" if declined else "")
                   + f"Memrepo-Mode: {mode}\nMemrepo-Reviewer: {reviewer}\n"
                   + (f"Memrepo-Why: {' '.join(why.split())}\n" if why.strip() else "")
                   + "".join(f"{k}: {' '.join(v.split())}\n" for k, v in (extra_trailers or {}).items()))
        faults.point("apply-checked")
        # main, the applied marker and the proposal branch move in one ref transaction: a
        # killed apply leaves the proposal open and main untouched, or everything recorded.
        result = vault.commit(writes=writes, deletes=deletes, message=message, merge=[proposal.tip], files=files,
                              also=[git.RefChange(APPLIED_PREFIX + proposal.id, git.NEW_COMMIT, None),
                                    git.RefChange(f"refs/heads/{proposal.branch}", None, proposal.tip)])
    return result.commit


# ------------------------------------------------------------------ reject / push

def reject(vault: Vault, ref: str, *, why: str, reviewer: str | None = None) -> str:
    """Close a proposal without applying it; its history stays under refs/memrepo/rejected/."""
    if not why.strip():
        raise UsageError("say why the proposal is rejected (--why TEXT): the author and later reviewers read it")
    with vault.lock():
        proposal = get(vault, ref)
        _require_open(proposal)
        reviewer = reviewer or git.identity(vault.root)[0]
        message = (f"memrepo: reject {proposal.id}\n\n{why.strip()}\n\nMemrepo-Action: reject\n"
                   f"Memrepo-Proposal: {proposal.id}\nMemrepo-Reviewer: {reviewer}\nMemrepo-Why: {' '.join(why.split())}\n")
        faults.point("reject-checked")
        sha = vault.commit(message=message, ref=REJECTED_PREFIX + proposal.id, parent=proposal.tip,
                           also=[git.RefChange(f"refs/heads/{proposal.branch}", None, proposal.tip)],
                           reason=f"memrepo: rejected {proposal.id}").commit
    return sha


def push_proposal(vault: Vault, ref: str, *, remote: str = "origin") -> str:
    """Push the proposal branch (with its activation commit) so a pull request can be opened."""
    proposal = get(vault, ref)
    _require_open(proposal)
    if remote not in git.remotes(vault.root):
        raise UsageError(f"no git remote {remote!r} in {vault.root}; add one with 'git remote add {remote} URL'")
    if proposal.tip == proposal.commit:
        _add_activation(vault, proposal)
    try:
        git.push_branch(vault.root, remote, proposal.branch)
        git.push(vault.root, remote, [f"{PROPOSED_PREFIX}{proposal.id}:{PROPOSED_PREFIX}{proposal.id}"])
    except GitError as e:
        raise GitError(f"pushing {proposal.branch} to {remote} failed (nothing was forced): {e}") from None
    return proposal.branch


def delete_pushed_branches(vault: Vault, *, remote: str | None = None, ids: Iterable[str] | None = None) -> dict[str, str]:
    """Delete, on the remotes they were pushed to, the branches of proposals closed here
    (applied or rejected): ``remote/proposal/ID`` -> 'ok', or why it was kept.

    Only a ``proposal/`` branch whose remote tip (as last fetched or pushed) is already part of
    the closed record is deleted, and only if the remote still holds that tip (a
    compare-and-delete): work someone added to it on the remote is never lost. A remote that
    cannot be reached keeps its branches (said in the answer); nothing else changes."""
    wanted = None if ids is None else set(ids)
    out: dict[str, str] = {}
    for name in [remote] if remote else git.remotes(vault.root):
        tracking = f"refs/remotes/{name}/{BRANCH_PREFIX}"
        expected = {}
        for ref, sha in git.refs(vault.root, tracking).items():
            pid = ref.removeprefix(tracking)
            if wanted is not None and pid not in wanted:
                continue
            record = git.rev_parse(vault.root, APPLIED_PREFIX + pid) or git.rev_parse(vault.root, REJECTED_PREFIX + pid)
            if record and git.is_ancestor(vault.root, sha, record):
                expected[f"refs/heads/{BRANCH_PREFIX}{pid}"] = sha
        try:
            results = git.delete_remote_refs(vault.root, name, expected)
        except GitError as e:
            results = {ref: f"kept: {name} could not be reached ({e})" for ref in expected}
        for ref, outcome in results.items():
            out[f"{name}/{ref.removeprefix('refs/heads/')}"] = outcome
    return out


def _add_activation(vault: Vault, proposal: Proposal) -> None:
    """Commit on the branch the statuses apply would write, so a forge merge equals apply."""
    writes = planned_writes(vault, proposal, mode="overwrite")
    deletes = planned_deletes(vault, proposal)
    message = (f"memrepo: activate {proposal.id} on merge\n\nMerging this branch applies proposal {proposal.id}: "
               f"the memories become active and what they supersede becomes superseded.\n\n"
               f"Memrepo-Action: activate\nMemrepo-Proposal: {proposal.id}\nMemrepo-Ids: {','.join(proposal.ids)}\n")
    with vault.lock(reentrant=True):
        # recorded as memrepo's own activation by a ref (the audit trusts no commit message)
        vault.commit(writes=writes, deletes=deletes, message=message, branch=proposal.branch, parent=proposal.tip,
                     expect=proposal.tip, reason=f"memrepo: activate {proposal.id}",
                     also=[git.RefChange(PROPOSED_PREFIX + proposal.id, git.NEW_COMMIT, None)])
