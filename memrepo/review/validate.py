"""Validation of a vault: the whole working tree, some paths, or what is staged for a commit.

The pre-commit hook uses :func:`check_staged`, which reads only the staged memory files and
looks everything else up in the catalog (synced to HEAD), so a one-file commit stays fast in a
vault of 100,000 memories.
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable

from memrepo.config import CONFIG_PATH
from memrepo.errors import Problem
from memrepo.model import MEMORY_ROOTS, is_memory_path
from memrepo.review import check_audit, gate, risk
from memrepo.review.gate import GateReport
from memrepo.store import git
from memrepo.store.checks import Overlay, Row, RowSet, check_bytes, check_rows, check_scope
from memrepo.store.vault import Vault


def _read_disk(vault: Vault, rel: str) -> tuple[Row | None, list[Problem], dict]:
    from memrepo.store.files import LinkRefused, read_inside
    if (vault.root / rel).is_symlink():
        return None, [Problem(rel, "(file)", "is a symlink; memories must be regular files inside the vault (replace the link with the file)")], {}
    try:
        data = read_inside(vault.root, rel)
    except LinkRefused as e:
        return None, list(e.problems), {}
    except OSError as e:
        return None, [Problem(rel, "(file)", f"cannot be read: {e.strerror}")], {}
    memory, problems = check_bytes(rel, data)
    if memory is None or not isinstance(memory.meta.get("id"), str):
        return None, problems, {}
    problems += check_scope(memory, owner=vault.owner, agent=None)
    return Row.of(memory), problems, dict(memory.meta)


def validate_tree(vault: Vault) -> list[Problem]:
    """Every problem in the working tree's memory files, per file and across files, and every
    active high-risk memory that became active on main without review (see :mod:`gate`)."""
    return validate_vault(vault).problems


def validate_vault(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
                   require_signed: bool = False) -> GateReport:
    """:func:`validate_tree`'s problems plus the deliberate overrides of the review gate;
    ``progress(done, total)`` follows the reading of the files. With ``require_signed`` every
    commit that made a high-risk memory active or changed the review policy must carry a good
    signature (git's own check, ``%G?`` = G): what a person with push access can forge
    otherwise (a whole memrepo commit and its record) needs their key then."""
    from memrepo.errors import UnsafeChange
    try:
        vault.ensure_trusted()
    except UnsafeChange as e:  # what a plain pull or clone brought: reported, and nothing of it is read
        return GateReport(sorted(set(e.problems)), [])
    high: dict[str, str] = {}
    rows, problems = _read_all(vault, vault.tree_paths(), high_risk=high, progress=progress)
    problems += check_rows(rows, RowSet(rows))
    report = gate.audit(vault, high)
    from memrepo.review import policy
    problems += [p.problem() for p in policy.pending(vault)]  # the review policy is audited like memories
    if require_signed:
        problems += _unsigned(vault, {high[i]: c for i, c in report.activations.items() if i in high})
    problems += check_audit.tree_problems(vault, rows)
    return GateReport(sorted(set(problems + report.problems)),
                      [*report.overrides, *check_audit.accepted_regressions(vault), *policy.acceptances(vault)],
                      report.activations)


_SIGNATURE = {"N": "no signature", "B": "a bad signature", "U": "a signature by a key not in the allowed signers",
              "E": "a signature git cannot check (missing key or program)", "X": "an expired signature",
              "Y": "a signature by an expired key", "R": "a signature by a revoked key"}


def _unsigned(vault: Vault, activated: dict[str, str]) -> list[Problem]:
    """The activations (path -> commit) and the review-policy changes whose commit lacks a good signature."""
    from memrepo.store import policy as store_policy
    changes = [commit for commit, _blob in store_policy.history(vault.root, vault.main_ref)][1:]  # after the vault's creation
    records = list(git.refs(vault.root, store_policy.RECORDS).values())
    found = git.signatures(vault.root, [*activated.values(), *changes, *records])
    problems = [Problem(path, "signature", (
        f"became active in {commit[:12]}, a commit with {_SIGNATURE.get(found.get(commit, 'N'), 'no good signature')}; "
        "sign your commits (git config commit.gpgSign true; memrepo then signs its own) and list the keys in "
        "gpg.ssh.allowedSignersFile or your GnuPG keyring"))
        for path, commit in activated.items() if found.get(commit) != "G"]
    problems += [Problem(CONFIG_PATH, "signature", (
        f"changed in {commit[:12]}, a commit with {_SIGNATURE.get(found.get(commit, 'N'), 'no good signature')}; "
        "the review policy is signed like every activation"))
        for commit in [*changes, *records] if found.get(commit) != "G"]
    return problems


def _read_all(vault: Vault, rels: Iterable[str], *, high_risk: dict[str, str] | None = None,
              progress: Callable[[int, int], None] | None = None) -> tuple[list[Row], list[Problem]]:
    """Rows of the readable memory files among ``rels`` and the problems of every file;
    ``high_risk`` collects the active high-risk ones (id -> path)."""
    rows, problems = [], []
    rels = list(rels)
    step = max(len(rels) // 50, 1)
    for i, rel in enumerate(rels):
        if progress and i % step == 0:
            progress(i, len(rels))
        if not (vault.root / rel).exists() and not (vault.root / rel).is_symlink():
            problems.append(Problem(rel, "(file)", "does not exist"))
            continue
        if not rel.endswith(".md"):
            problems.append(Problem(rel, "(file)", "only <id>.md memory files belong here; move it out of memories/ and archive/"))
            continue
        row, found, meta = _read_disk(vault, rel)
        problems += found
        if row is not None:
            rows.append(row)
            if high_risk is not None and not found and row.status == "active" and gate.high_risk_reason(meta, vault.config):
                high_risk[row.id] = rel
    if progress:
        progress(len(rels), len(rels))
    return rows, problems


def validate_paths(vault: Vault, paths: Iterable[str | Path]) -> list[Problem]:
    """Problems of the given files, checked against the rest of the vault as committed."""
    problems, seen, checks = [], [], []
    for given in paths:
        p = Path(given)
        absolute = p if p.is_absolute() else Path.cwd() / p
        try:
            rel = Path(os.path.normpath(absolute)).relative_to(vault.root).as_posix()
        except ValueError:
            problems.append(Problem(str(given), "(file)", f"is outside the vault {vault.root}"))
            continue
        if check_audit.is_checks_path(rel):
            checks.append(rel)
        elif (vault.root / rel).is_dir():
            seen += [q for q in vault.tree_paths() if q.startswith(rel.rstrip("/") + "/") or rel == "."]
        else:
            seen.append(rel)
    rows, found = _read_all(vault, sorted(set(seen)))
    problems += found
    problems += check_rows(rows, Overlay(vault.catalog(), rows))
    problems += check_audit.path_problems(vault, checks) if checks else []
    return sorted(set(problems))


def check_staged(vault: Vault, *, index_file: str | None = None, merge_head: str | None = None,
                 agent: str | None = None) -> list[Problem]:
    """What the pre-commit hook checks: the staged memory files and every invariant they touch
    (``agent``: the one committing, who may write only its own private memories)."""
    head = git.rev_parse(vault.root, "HEAD")
    if head is None:
        return []
    catalog = vault.catalog(sync=False)
    catalog.sync(head)
    changes = git.diff_index(vault.root, "HEAD", cached=True, paths=[*MEMORY_ROOTS, CONFIG_PATH], index_file=index_file)
    rows, problems, deleted_paths = [], [], []
    with git.BlobReader(vault.root) as reader:
        for ch in changes:
            if ch.path == CONFIG_PATH:
                problems += _check_policy_change(vault, reader.read(ch.sha) if ch.status != "D" else b"")
                continue
            if ch.status == "D":
                deleted_paths.append(ch.path)
                continue
            if ch.mode == "120000":
                problems.append(Problem(ch.path, "(file)", "is a symlink; memories must be regular files inside the vault"))
                continue
            if ch.path.rsplit("/", 1)[-1].startswith("."):
                continue
            if not is_memory_path(ch.path):
                problems.append(Problem(ch.path, "(file)", "only <id>.md memory files belong under memories/ and archive/"))
                continue
            memory, found = check_bytes(ch.path, reader.read(ch.sha))
            problems += found
            if memory is not None:
                problems += check_scope(memory, owner=vault.owner, agent=agent)
            if memory is not None and isinstance(memory.meta.get("id"), str):
                rows.append((Row.of(memory), replace(memory, blob=ch.sha)))
    deleted = [r for p in deleted_paths for r in catalog._rows("path=?", (p,))]
    overlay = Overlay(catalog, [r for r, _ in rows], deleted_paths)
    problems += check_rows([r for r, _ in rows], overlay, deleted=deleted)
    problems += _check_review_gate(vault, catalog, rows, merge_head)
    problems += check_audit.staged_problems(vault, catalog, [r for r, _ in rows], deleted_paths, index_file=index_file)
    return sorted(set(problems))


def _check_policy_change(vault: Vault, staged: bytes) -> list[Problem]:
    """A staged config.toml that lowers the review policy is a high-risk change: refused unless
    a person accepted that very file (``memrepo policy accept`` commits and records it)."""
    from memrepo.config import parse_policy_text, policy_weakenings
    from memrepo.store import policy
    if policy.blob_id(staged) in policy.accepted(vault.root):
        return []
    return [Problem(CONFIG_PATH, key, (
        f"lowering the review policy is a high-risk change ({what}): accept it with "
        "'memrepo policy accept --why TEXT' (it commits the file and records who accepted it), or leave it out"))
        for key, what in policy_weakenings(vault.config, parse_policy_text(staged.decode("utf-8", "replace")))]


def _check_review_gate(vault: Vault, catalog, rows, merge_head: str | None) -> list[Problem]:
    """Invariant 4: a high-risk memory becomes active on main only through a proposal."""
    if git.head_ref(vault.root) != vault.main_ref:
        return []
    candidates = [(row, memory) for row, memory in rows if row.status == "active"]
    # A merge that brings the other side's version unchanged activates nothing itself (validate
    # audits that side's history); a file an activation memrepo recorded holds was reviewed.
    brought = _as_merged(vault, merge_head, [(row, memory.blob) for row, memory in candidates]) if merge_head else {}
    passed: set[str] = set()
    if brought:  # ... when that side's own history passes the audit
        skipped = gate.audit(vault, brought, rev=merge_head).problems
        passed = set(brought.values()) - {p.path for p in skipped}
    activated = _as_activated(vault, [(row, memory.blob) for row, memory in candidates])
    candidates = [(row, memory) for row, memory in candidates if row.path not in activated | passed]
    befores = {row.id: catalog.with_id(row.id) for row, _memory in candidates}
    high = _were_high(vault, [b[0].path for b in befores.values() if b and b[0].status == "active"])
    problems = []
    for row, memory in candidates:
        before = befores[row.id]
        if before and before[0].status == "active" and before[0].path in high:
            continue  # an edit of an applied high-risk memory, not a new activation
        view = Overlay(catalog, [], [r.path for r in catalog.with_id(row.id)])
        decision = risk.assess(memory.meta, view, vault.config)
        if not decision.high and before and before[0].status == "active":
            reason = gate.high_risk_reason(memory.meta, vault.config)
            decision = risk.Decision("high", reason, None) if reason else decision
        if decision.high:
            problems.append(Problem(row.path, "status", (
                f"high-risk memory ({decision.reason}) cannot become active by a plain commit; "
                + (f"send it to review with 'memrepo add --file {row.path}' (it opens a proposal), " if not before else
                   "write the new version as a new memory (a new id) and send it to review with "
                   "'memrepo add --file PATH', ") +
                "or override deliberately with git commit --no-verify --trailer 'Memrepo-Override: <reason>'")))
    return problems


def _were_high(vault: Vault, paths: list[str]) -> set[str]:
    """Those ``paths`` whose committed version is already high risk (it went through review)."""
    names = {path: f"HEAD:{path}" for path in paths}
    blobs = git.read_blobs(vault.root, names.values())
    high = set()
    for path, name in names.items():
        memory, _ = check_bytes(path, blobs[name])
        if memory is not None and gate.high_risk_reason(memory.meta, vault.config) is not None:
            high.add(path)
    return high


def _as_activated(vault: Vault, staged: list[tuple[Row, str | None]]) -> set[str]:
    """Paths of staged files that are, byte for byte, what an activation memrepo made and
    recorded holds (``refs/memrepo/proposed/<id>``, written by ``memrepo proposals push``).

    ``git merge`` runs pre-merge-commit before it writes MERGE_HEAD, so a person merging a
    pushed proposal branch cannot be recognised by the merge head; the recorded activation can
    (its trailers prove nothing: a hand commit can copy them)."""
    from memrepo.review.records import PROPOSED_PREFIX as PROPOSED
    from memrepo.review.records import record_patterns
    staged = [(row, blob) for row, blob in staged if blob]
    recorded = list(set(git.refs(vault.root, *record_patterns(PROPOSED)).values())) if staged else []
    if not recorded:
        return set()
    ids = git.object_ids(vault.root, [f"{tip}:{row.path}" for row, _blob in staged for tip in recorded])
    return {row.path for row, blob in staged if any(ids[f"{tip}:{row.path}"] == blob for tip in recorded)}


def _as_merged(vault: Vault, merge_head: str, staged: list[tuple[Row, str | None]]) -> dict[str, str]:
    """id -> path of the staged files the merged commit holds byte for byte (the merge brings them)."""
    staged = [(row, blob) for row, blob in staged if blob]
    ids = git.object_ids(vault.root, [f"{merge_head}:{row.path}" for row, _blob in staged])
    return {row.id: row.path for row, blob in staged if ids[f"{merge_head}:{row.path}"] == blob}

