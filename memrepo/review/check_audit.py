"""What ``memrepo validate`` and the pre-commit hook say about the recall checks (``checks/``):
every check file matches ``schema/checks.schema.json`` and names memories the vault holds
(a problem names the file and the line), and every recall regression a person accepted at
apply (``apply --accept-regression``) is listed beside the review gate's overrides.
"""
from __future__ import annotations

from typing import Iterable

from memrepo.errors import Problem
from memrepo.review.gate import Override
from memrepo.store import git
from memrepo.store.checks import Overlay, Row
from memrepo.store.recall_checks import CHECKS_DIR, KnownSet, RecallCheck, is_check_file, load_dir, missing_memories, parse
from memrepo.store.vault import Vault

ACCEPT_TRAILER = "Memrepo-Accept-Regression"
REGRESSED_TRAILER = "Memrepo-Regressed"


def tree_problems(vault: Vault, rows: Iterable[Row]) -> list[Problem]:
    """The working tree's check files, against the memories ``rows`` (the whole tree's)."""
    checks, problems = load_dir(vault.root)
    return problems + missing_memories(checks, KnownSet(rows))


def is_checks_path(rel: str) -> bool:
    return rel == CHECKS_DIR or rel.startswith(CHECKS_DIR + "/")


def path_problems(vault: Vault, rels: Iterable[str]) -> list[Problem]:
    """``memrepo validate checks/...``: those files (a folder: its check files), against the
    memories main holds."""
    checks, problems = [], []
    for rel in rels:
        target = vault.root / rel
        files = sorted(p for p in target.rglob("*") if p.is_file()) if target.is_dir() else [target]
        for path in files:
            name = path.relative_to(vault.root).as_posix()
            if not is_check_file(name):
                if not target.is_dir():
                    problems.append(Problem(name, "(file)", "is not a check file: checks live in checks/*.yaml"))
                continue
            try:
                found, bad = parse(name, path.read_bytes())
            except OSError as e:
                found, bad = [], [Problem(name, "(file)", f"cannot be read: {e.strerror}")]
            checks += found
            problems += bad
    return problems + missing_memories(checks, _CatalogKnown(vault.catalog()))


def staged_problems(vault: Vault, catalog, staged: Iterable[Row], deleted_paths: Iterable[str], *,
                    index_file: str | None = None) -> list[Problem]:
    """The pre-commit hook's part: staged check files, and every check when memory files are
    deleted, against the memories the commit leaves (``catalog``: HEAD's, the staged rows on top)."""
    deleted_paths = list(deleted_paths)
    changes = git.diff_index(vault.root, "HEAD", cached=True, paths=(CHECKS_DIR,), index_file=index_file)
    changes = [ch for ch in changes if is_check_file(ch.path)]
    if not changes and not deleted_paths:
        return []
    staged = list(staged)
    problems: list[Problem] = []
    checks: list[RecallCheck] = []
    touched = {ch.path for ch in changes}
    entries = [] if not deleted_paths else [e for e in git.ls_tree(vault.root, "HEAD", [CHECKS_DIR])
                                            if is_check_file(e.path) and e.path not in touched]
    blobs = git.read_blobs(vault.root, [ch.sha for ch in changes if ch.status != "D" and ch.mode != "120000"]
                           + [e.sha for e in entries])
    for ch in changes:
        if ch.status == "D":
            continue
        if ch.mode == "120000":
            problems.append(Problem(ch.path, "(file)", "is a symlink; check files must be regular files"))
            continue
        found, bad = parse(ch.path, blobs[ch.sha])
        checks, problems = checks + found, problems + bad
    for e in entries:
        checks += parse(e.path, blobs[e.sha])[0]
    return problems + missing_memories(checks, _StagedKnown(catalog, staged, deleted_paths))


class _CatalogKnown:
    """The memories main holds, asked one at a time (a few hundred checks in a huge vault)."""

    def __init__(self, catalog):
        self.catalog = catalog

    def has_id(self, memory_id: str) -> bool:
        return bool(self.catalog.with_id(memory_id))

    def has_fact(self, subject: str, fact: str) -> bool:
        return bool(self.catalog.query(subject=subject, fact=fact))


class _StagedKnown(_CatalogKnown):
    """HEAD's memories with a commit's staged files on top and its deleted files gone."""

    def __init__(self, catalog, staged: list[Row], deleted_paths: list[str]):
        self.catalog, self.staged, self.gone = catalog, staged, set(deleted_paths) | {r.path for r in staged}
        self.view = Overlay(catalog, staged, deleted_paths)

    def has_id(self, memory_id: str) -> bool:
        return bool(self.view.with_id(memory_id))

    def has_fact(self, subject: str, fact: str) -> bool:
        if any((r.subject, r.fact) == (subject, fact) for r in self.staged):
            return True
        return any(row["path"] not in self.gone for row in self.catalog.query(subject=subject, fact=fact))


def accepted_regressions(vault: Vault) -> list[Override]:
    """Every apply on main that let recall checks regress, with the reason the person gave
    (``memrepo apply --accept-regression``), listed by ``validate`` like an override."""
    from memrepo.review.proposals import trailers
    if vault.head() is None:
        return []
    found = []
    for entry in git.log(vault.root, vault.main_ref, extra=["--first-parent", f"--grep=^{ACCEPT_TRAILER}: "]):
        t = trailers(entry.body)
        if ACCEPT_TRAILER not in t:
            continue
        regressed = t.get(REGRESSED_TRAILER, "")
        first = regressed.split()[0].split("#")[0] if regressed else CHECKS_DIR
        found.append(Override(first, t.get("Memrepo-Proposal", ""), entry.commit, entry.author,
                              f"recall checks allowed to regress ({regressed or 'unnamed'}) when applying "
                              f"{t.get('Memrepo-Proposal', 'a proposal')}: {t[ACCEPT_TRAILER]}"))
    return found
