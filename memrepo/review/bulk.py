"""Closing several proposals at once: each one applied or rejected on its own.

A person reviewing an inbox ticks a few proposals and approves (or rejects) them together. Each
is still its own merge commit (or rejection record), checked as ``apply`` and ``reject`` check
one: a proposal that conflicts is reported and left open, and the others go ahead. The branch a
closed proposal had pushed to a remote is tidied as the CLI does after ``apply``/``reject``.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable

from memrepo.errors import MemrepoError, UsageError
from memrepo.review import proposals
from memrepo.store.vault import Vault


@dataclass(frozen=True)
class Outcome:
    """What happened to one proposal: the commit made, or the error that left it open."""
    proposal: str
    action: str                  # apply or reject
    commit: str | None = None
    error: str | None = None
    code: int = 0                # the error's exit code (4 conflict, 3 not found, ...)
    remote_branches: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.commit is not None

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def get_proposal(vault: Vault, ref: str) -> proposals.Proposal:
    """An open or closed proposal by its id or the id of a memory it carries."""
    return proposals.get(vault, ref)


def apply_many(vault: Vault, ids: Iterable[str], *, mode: str = "overwrite", reviewer: str | None = None,
               only: Iterable[str] | None = None, why: str = "", apply: Callable[..., str] | None = None) -> list[Outcome]:
    """Apply each proposal in turn (one merge commit each); a refusal leaves that one open.
    ``only`` applies just those memory ids (of a multi-memory proposal), as ``apply --only``;
    ``why`` (optional) is recorded in each merge commit, as ``apply --why``.
    ``apply`` applies one (default :func:`proposals.apply`; ``memrepo.api.apply_many`` passes
    the apply that runs the recall checks first, so a regression is a refusal here too)."""
    act = apply or proposals.apply
    return [_close(vault, pid, "apply", lambda p: act(vault, p, mode=mode, reviewer=reviewer, only=only, why=why))
            for pid in _ids(ids)]


def reject_many(vault: Vault, ids: Iterable[str], *, why: str, reviewer: str | None = None) -> list[Outcome]:
    """Reject each proposal with the same reason (required, as for one)."""
    if not why.strip():
        raise UsageError("say why the proposals are rejected: the authors and later reviewers read it")
    return [_close(vault, pid, "reject", lambda p: proposals.reject(vault, p, why=why, reviewer=reviewer))
            for pid in _ids(ids)]


def reviewer_name(vault: Vault) -> str:
    """The name apply and reject record as the reviewer (the vault's git identity)."""
    from memrepo.store import git
    return git.identity(vault.root)[0]


def rollback_with_reason(vault: Vault, memory_id: str, *, reason: str) -> str:
    """A person's rollback of a memory: the reason is required (it is recorded in the commit)."""
    from memrepo.review import provenance
    if not reason.strip():
        raise UsageError(f"say why {memory_id} is rolled back: the reason is recorded in the commit")
    return provenance.rollback(vault, memory_id, reason=reason)


def _ids(ids: Iterable[str]) -> list[str]:
    found = list(dict.fromkeys(i.strip() for i in ids if i and i.strip()))
    if not found:
        raise UsageError("choose at least one proposal")
    return found


def _close(vault: Vault, pid: str, action: str, act) -> Outcome:
    try:
        commit = act(pid)
    except MemrepoError as e:
        return Outcome(pid, action, error=str(e), code=e.exit_code)
    closed = proposals.get(vault, pid).id
    try:
        remote = proposals.delete_pushed_branches(vault, ids=[closed])
    except MemrepoError as e:   # the proposal is closed; only the tidying of a remote failed
        remote = {"(remotes)": f"kept: {e}"}
    return Outcome(closed, action, commit=commit, remote_branches=remote)
