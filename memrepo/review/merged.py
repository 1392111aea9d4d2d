"""Proposals merged on a forge (by a pull request): a pushed proposal branch merged (or squash-merged) into main
by a pull request is applied by that merge. Only an activation memrepo made and recorded
(``refs/memrepo/proposed/<id>``, written by ``memrepo proposals push``) counts: a branch that
only looks like one (copied trailers) stays an open proposal.
"""
from __future__ import annotations

from typing import Any

from memrepo.review.records import BRANCH_PREFIX, PROPOSED_PREFIX, record_patterns, trailers
from memrepo.store import git
from memrepo.store.vault import Vault


def merged_on_main(vault: Vault) -> dict[str, list[str]]:
    """Proposal branches whose "activate on merge" tip main already holds, each with the
    paths main holds it at: merged on a forge and brought in by a pull or a sync. A merge or
    fast-forward makes the tip an ancestor of main (one git call); a squash merge (or a
    cherry-pick) does not, but leaves every memory the proposal carries on main exactly as the
    tip has it (one more call, only when such a branch's memories are all on main)."""
    prefix = "refs/heads/" + BRANCH_PREFIX
    main = vault.main_ref
    recorded = set(git.refs(vault.root, *record_patterns(PROPOSED_PREFIX)).values())  # memrepo's, not look-alikes
    activating = {ref: (tip, trailers(message)) for ref, (tip, message) in git.ref_messages(vault.root, prefix).items()
                  if tip in recorded}
    if not activating:
        return {}
    merged: dict[str, list[str]] = {ref: [] for ref in git.ref_messages(vault.root, prefix, merged_into=main)
                                    if ref in activating}
    catalog = vault.catalog()
    candidates: dict[str, tuple[str, list[str]]] = {}
    for ref, (tip, t) in activating.items():
        ids = [i for i in t.get("Memrepo-Ids", "").split(",") if i]
        paths = [catalog.path_of(i) for i in ids]
        if ref not in merged and ids and all(paths):
            candidates[ref] = (tip, [p for p in paths if p])
    if candidates:
        head = git.rev_parse(vault.root, main)
        blobs = git.object_ids(vault.root, [f"{rev}:{p}" for tip, paths in candidates.values()
                                            for rev in (head, tip) for p in paths])
        for ref, (tip, paths) in candidates.items():
            if all(blobs[f"{head}:{p}"] is not None and blobs[f"{head}:{p}"] == blobs[f"{tip}:{p}"] for p in paths):
                merged[ref] = paths
    return merged


def forge_outcome(vault: Vault, tip: str, squashed: list[str]) -> dict[str, Any]:
    """Who applied a proposal by merging its pushed branch (``tip``) into main, and when; for a
    squash merge (``squashed``: the paths main holds it at), the newest commit on main that
    brought those files to the tip's content."""
    if squashed:
        found = git.log(vault.root, vault.main_ref, paths=squashed, extra=["-1"])
        if found:
            return {"by": found[0].author, "at": found[0].date, "commit": found[0].commit,
                    "via": "squash merge of the pushed branch"}
    merge = git.merge_commit_of(vault.root, tip, vault.main_ref) or tip  # a fast-forward: the tip itself
    entry = git.commits(vault.root, [merge])[merge]
    return {"by": entry.author, "at": entry.date, "commit": merge, "via": "merge of the pushed branch"}
