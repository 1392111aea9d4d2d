"""The one exception tree of memrepo. The library raises these; only the CLI prints or exits.

Every message says what is wrong and how to fix it. ``exit_code`` is what the CLI exits with.
"""
from __future__ import annotations

from dataclasses import dataclass


class MemrepoError(Exception):
    """Base of every error memrepo raises on purpose."""

    exit_code = 1


class UsageError(MemrepoError):
    """The caller asked for something malformed (bad option values, unknown names)."""

    exit_code = 2


class VaultNotFound(MemrepoError):
    """No vault at or above the given directory."""


class VaultExists(MemrepoError):
    """``init`` was pointed at a directory that already holds something."""


class NotFound(MemrepoError):
    """A memory, proposal or commit that does not exist."""


class Busy(MemrepoError):
    """Another process holds the vault's write lock for longer than the bounded wait."""


class GitError(MemrepoError):
    """A git command failed; the message carries git's own words."""


class Conflict(MemrepoError):
    """The change would contradict the current state (stale target, dirty checkout, ...)."""


@dataclass(frozen=True, order=True)
class Problem:
    """One finding of a check: ``path:field: message``."""

    path: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.field}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"path": self.path, "field": self.field, "message": self.message}


class InvalidMemory(MemrepoError):
    """One or more memories failed validation; ``problems`` lists every finding."""

    def __init__(self, problems: list[Problem] | tuple[Problem, ...], hint: str = ""):
        self.problems = tuple(problems)
        lines = [str(p) for p in self.problems]
        if hint:
            lines.append(hint)
        super().__init__("\n".join(lines))


class RefMoved(Busy):
    """A branch moved between reading it and writing it (compare-and-swap failed): retry."""


class GitLocked(Busy):
    """git's own lock file (``index.lock``, ``packed-refs.lock``, ...) is taken."""
