"""Recall checks proposed by distill: the questions that recalled a memory usefully.

When an agent's search in a session returned a memory and the same session marked that memory
useful (``memrepo useful``), the question demonstrably needs that memory. Distill turns each
such (question, memory) pair into a candidate recall check, on a proposal of its own
(``checks_<date>``) holding a new file ``checks/distilled-<date>.yaml``: a person reviews it
like any candidate, and applying it adds the checks. A pair is proposed once: a check main
already has, or a candidate an earlier proposal carried (applied or rejected), is not again.
"""
from __future__ import annotations

import datetime as dt
import hashlib
from dataclasses import dataclass
from typing import Any

from memrepo.store.recall_checks import CHECKS_DIR, DEFAULT_TOP, RecallCheck, is_check_file, load_rev, parse, render_file
from memrepo.store.vault import Vault

MAX_PER_RUN = 20
MAX_TOP = 50


@dataclass(frozen=True)
class CheckCandidates:
    candidates: tuple[RecallCheck, ...]
    proposal: str | None
    file: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"candidates": [c.as_dict() for c in self.candidates], "proposal": self.proposal, "file": self.file}


def propose_checks(vault: Vault, *, now: dt.datetime, dry_run: bool = False) -> CheckCandidates:
    """Find the useful recalls no check covers yet and propose them as checks (caller holds
    the vault lock); at most ``MAX_PER_RUN``, the most often useful first."""
    from memrepo.lifecycle.runs import free_proposal_id
    from memrepo.review import proposals
    found = _candidates(vault)
    if not found or dry_run:
        return CheckCandidates(tuple(found), None, None)
    pid = free_proposal_id(vault, f"checks_{now:%Y%m%d}")
    path = _free_file(vault, f"{CHECKS_DIR}/distilled-{pid.removeprefix('checks_')}")
    found = [RecallCheck(**{**c.__dict__, "file": path}) for c in found]
    reason = f"distill: {len(found)} question(s) that recalled a memory usefully, proposed as recall checks"
    proposal = proposals.create(vault, [], reason=reason, proposal_id=pid,
                                files={path: render_file(found).encode("utf-8")})
    return CheckCandidates(tuple(found), proposal.id, path)


def _candidates(vault: Vault) -> list[RecallCheck]:
    from memrepo.retrieval.search import stats
    pairs: dict[tuple[str, str], dict[str, Any]] = {}
    for query, memory_id, session, rank, _ts in stats(vault).useful_recalls():
        question = " ".join(query.split())
        if not question:
            continue
        seen = pairs.setdefault((question, memory_id), {"sessions": [], "rank": rank})
        if session not in seen["sessions"]:
            seen["sessions"].append(session)
        seen["rank"] = min(seen["rank"], rank)
    covered = _covered(vault)
    ranked: list[tuple[int, int, RecallCheck]] = []
    for (question, memory_id), seen in pairs.items():
        rows = vault.catalog().with_id(memory_id)
        if not rows or rows[0].status != "active" or (question, memory_id) in covered:
            continue
        sessions = seen["sessions"]
        check = RecallCheck(question=question, expect_id=memory_id, id=_check_id(question, memory_id),
                            top=min(max(DEFAULT_TOP, seen["rank"]), MAX_TOP),
                            why=f"recalled usefully in {len(sessions)} session(s): {', '.join(sessions[:3])}"
                                + (", …" if len(sessions) > 3 else ""))
        ranked.append((-len(sessions), len(ranked), check))   # most often useful first, then oldest
    return [check for *_order, check in sorted(ranked)][:MAX_PER_RUN]


def _check_id(question: str, memory_id: str) -> str:
    """The same pair always gets the same id (so a rerun recognises it)."""
    return "chk_" + hashlib.sha1(f"{question}\0{memory_id}".encode()).hexdigest()[:12]


def _covered(vault: Vault) -> set[tuple[str, str]]:
    """(question, memory) pairs main's checks hold, and those every checks proposal carried."""
    from memrepo.review import proposals
    from memrepo.store import git
    pairs = set()
    main = vault.head()
    checks = load_rev(vault.root, main)[0] if main else []
    for p in proposals.list_proposals(vault, include_closed=True):
        if not p.id.startswith("checks_"):
            continue
        changes = [ch for ch in git.diff_tree(vault.root, p.base or None, p.commit, (CHECKS_DIR,))
                   if ch.status != "D" and is_check_file(ch.path)]
        blobs = git.read_blobs(vault.root, [ch.sha for ch in changes])
        for ch in changes:
            checks += parse(ch.path, blobs[ch.sha])[0]
    for c in checks:
        if c.expect_id:
            pairs.add((" ".join(c.question.split()), c.expect_id))
    return pairs


def _free_file(vault: Vault, stem: str) -> str:
    """``stem.yaml``, or ``stem-2.yaml``…: a name main does not hold."""
    from memrepo.store import git
    n = 1
    while True:
        path = f"{stem}.yaml" if n == 1 else f"{stem}-{n}.yaml"
        if not git.exists(vault.root, f"{vault.main_ref}:{path}"):
            return path
        n += 1
