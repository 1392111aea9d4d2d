"""The one exception tree of memrepo. The library raises these; only the CLI prints or exits.

Every message says what is wrong and how to fix it. Each family carries the exit code the CLI
exits with and the ``code`` word a ``--json`` error carries, so a script can tell "retry" (75)
from "fix your input" (2, 5) from "it is not there" (3) from "the state moved" (4):

====  ===========  ==========================================================================
exit  code         meaning
====  ===========  ==========================================================================
0                  success
1     failed       a check ran and found problems (``validate``, hooks), a recall check regressed
                   (``check run``: it passes on the base and fails on the version checked); git
                   or the disk failed before anything was committed (a committed write never exits 1)
2     usage        a malformed command line or option value (unknown enum value, bad date)
3     not_found    no such memory, proposal, commit, file or vault
4     conflict     the state contradicts the request (stale proposal, already applied)
5     invalid      invalid data: a memory, an import line or a file breaks the schema, the size
                   cap or the secret rule; a bad ``config.toml``
75    busy         nothing was written: the vault's lock, git's index.lock or main moved under
                   the write; retry later (EX_TEMPFAIL), with the same ``--request-id``
====  ===========  ==========================================================================
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

EXIT_CODES: dict[str, int] = {"failed": 1, "usage": 2, "not_found": 3, "conflict": 4, "invalid": 5, "busy": 75}


class MemrepoError(Exception):
    """Base of every error memrepo raises on purpose."""

    exit_code = 1
    code = "failed"


class UsageError(MemrepoError):
    """The caller asked for something malformed (bad option values, unknown names)."""

    exit_code = 2
    code = "usage"


class NotFound(MemrepoError):
    """A memory, proposal, commit or file that does not exist."""

    exit_code = 3
    code = "not_found"


class VaultNotFound(NotFound):
    """No vault at or above the given directory."""


class Conflict(MemrepoError):
    """The change would contradict the current state (stale target, dirty checkout, ...)."""

    exit_code = 4
    code = "conflict"


class VaultExists(Conflict):
    """``init`` was pointed at a directory that already holds something."""


class Busy(MemrepoError):
    """Another process holds the vault's write lock for longer than the bounded wait."""

    exit_code = 75
    code = "busy"


class GitError(MemrepoError):
    """A git command failed; the message carries git's own words."""


_LINE_IN_PATH = re.compile(r"^(?P<path>.*):line (?P<line>\d+)$")
_LINE_FIELD = re.compile(r"^line (?P<line>\d+)$")


@dataclass(frozen=True, order=True)
class Problem:
    """One finding of a check: ``path:field: message`` (``line`` when a line is known)."""

    path: str
    field: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.path}:{self.field}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        """``{path, field, line, message}``; the line is also read from ``file:line N`` paths
        and ``line N`` fields, the forms the import and the front-matter loader use."""
        path, line = self.path, self.line
        in_path = _LINE_IN_PATH.match(path)
        if in_path:
            path, line = in_path["path"], line or int(in_path["line"])
        in_field = _LINE_FIELD.match(self.field)
        if line is None and in_field:
            line = int(in_field["line"])
        return {"path": path, "field": self.field, "line": line, "message": self.message}


class InvalidData(MemrepoError):
    """Data (a memory, an import line, a file, the configuration) breaks the rules.

    ``problems`` lists every finding; the message is one ``path:field: message`` line each."""

    exit_code = 5
    code = "invalid"

    def __init__(self, problems: list[Problem] | tuple[Problem, ...] | str, hint: str = ""):
        if isinstance(problems, str):   # a message alone: no problem list
            hint = problems
        self.problems: tuple[Problem, ...] = () if isinstance(problems, str) else tuple(problems)
        lines = [str(p) for p in self.problems]
        if hint:
            lines.append(hint)
        super().__init__("\n".join(lines))


class RefMoved(Busy):
    """A branch moved between reading it and writing it (compare-and-swap failed): retry."""


class GitLocked(Busy):
    """git's own lock file (``index.lock``, ``packed-refs.lock``, ...) is taken."""


class InvalidMemory(InvalidData):
    """One or more memories failed validation; ``problems`` lists every finding."""


class ConfigError(InvalidData):
    """``.memrepo/config.toml`` breaks its schema (wrong type, out of range, bad TOML)."""


class MemrepoWarning(UserWarning):
    """Something worth telling a person that does not stop the command; the CLI prints each once."""


class ConfigWarning(MemrepoWarning):
    """Something in ``config.toml`` is ignored (an unknown table or key)."""


class SkippedMemory(MemrepoWarning):
    """A memory file on main that readers skip (it breaks the schema); the message names it."""


class CheckoutBehind(MemrepoWarning):
    """A write was committed but the checkout could not follow yet (git's index was taken)."""


class IdentityWarning(MemrepoWarning):
    """No git identity is configured: commits carry memrepo's fallback name."""


class UnsafeChange(InvalidData):
    """A change holds a path memrepo never writes: a ``.git`` component, ``..``, a symlink, a
    submodule, unversioned ``.memrepo/`` state (what a hostile remote or tree could send)."""
