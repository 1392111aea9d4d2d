"""The files a proposal branch carries, checked before apply: its memory files, and new recall
checks (``checks/*.yaml``: a distill run proposes the questions that recalled a memory
usefully as checks, for review like any candidate).

A proposal adds a check file as a new file, so it never conflicts with the checks a person
keeps in ``checks/recall.yaml``; applying writes it to main as the proposal holds it.
"""
from __future__ import annotations

from typing import Mapping, Protocol

from memrepo.errors import Conflict, InvalidMemory, Problem, UsageError
from memrepo.store import git, recall_checks
from memrepo.store.vault import Vault


class Branch(Protocol):
    """What of a proposal this module reads (a :class:`memrepo.review.proposals.Proposal`)."""

    @property
    def id(self) -> str: ...

    @property
    def base(self) -> str: ...

    @property
    def commit(self) -> str: ...

    @property
    def tip(self) -> str: ...


def check_new(vault: Vault, files: Mapping[str, bytes]) -> None:
    """Refuse files a proposal cannot add: anything but a new, valid check file."""
    problems = []
    for path, data in files.items():
        if not recall_checks.is_check_file(path):
            raise UsageError(f"{path}: a proposal adds only recall-check files (checks/*.yaml) besides memories")
        if git.exists(vault.root, f"{vault.main_ref}:{path}"):
            raise Conflict(f"{path} already exists on {vault.main_branch}; a proposal adds check files under a new name")
        problems += recall_checks.parse(path, data)[1]
    if problems:
        raise InvalidMemory(problems, "no proposal was created")


def card_lines(files: Mapping[str, bytes]) -> list[str]:
    """What the review card says about the check files a proposal adds."""
    lines = []
    for path, data in sorted(files.items()):
        checks = recall_checks.parse(path, data)[0]
        lines.append(f"Recall checks: adds {path} ({len(checks)} check{'' if len(checks) == 1 else 's'})")
        lines += [f"  - {c.question!r} must find {c.expect_label()} in the top {c.top}"
                  + (f" ({c.why})" if c.why else "") for c in checks]
    return lines


def planned(vault: Vault, proposal: Branch) -> dict[str, bytes | None]:
    """The check files applying the proposal writes on main (path -> bytes); Conflict when
    main has meanwhile put something else at one of those paths."""
    changes = [ch for ch in git.diff_tree(vault.root, proposal.base or None, proposal.commit, (recall_checks.CHECKS_DIR,))
               if ch.status != "D" and recall_checks.is_check_file(ch.path)]
    if not changes:
        return {}
    names = [f"{vault.main_ref}:{ch.path}" for ch in changes]
    on_main = git.object_ids(vault.root, names)
    for ch in changes:
        held = on_main[f"{vault.main_ref}:{ch.path}"]
        if held is not None and held != ch.sha:
            raise Conflict(f"{ch.path}, which proposal {proposal.id} adds, was written on {vault.main_branch} since; "
                           f"review again: 'memrepo reject {proposal.id} --why stale'")
    blobs = git.read_blobs(vault.root, [ch.sha for ch in changes])
    return {ch.path: blobs[ch.sha] for ch in changes}


def check_branch(vault: Vault, proposal: Branch) -> None:
    """A proposal branch edited by hand must still hold valid memory and check files."""
    from memrepo.store.checks import check_bytes
    problems = []
    roots = ("memories", "archive", recall_checks.CHECKS_DIR)
    changes = [ch for ch in git.diff_tree(vault.root, proposal.base or None, proposal.tip, roots) if ch.status != "D"
               and (not ch.path.startswith(recall_checks.CHECKS_DIR + "/") or recall_checks.is_check_file(ch.path))]
    blobs = git.read_blobs(vault.root, [ch.sha for ch in changes if ch.mode != "120000"])
    for ch in changes:
        if ch.mode == "120000":
            problems.append(Problem(ch.path, "(file)", "is a symlink; memories and checks must be regular files"))
        elif recall_checks.is_check_file(ch.path):
            problems += recall_checks.parse(ch.path, blobs[ch.sha])[1]
        else:
            problems += check_bytes(ch.path, blobs[ch.sha])[1]
    if problems:
        raise InvalidMemory(problems, f"proposal {proposal.id} holds invalid files; fix the branch or reject it (nothing was applied)")
