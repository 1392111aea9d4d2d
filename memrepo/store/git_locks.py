"""git's lock files and memrepo's scratch refs, named and waited on without starting git.

A write records, before it starts, the lock files git will take for it (so the next writer can
tell its own killed writer's locks from a person's git's) and waits while another git process
holds ``index.lock`` (so it never commits and then finds it cannot bring the index along).
"""
from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path

from memrepo.errors import GitLocked

SCRATCH_PREFIX = "refs/memrepo/tmp/"


def new_scratch_ref() -> str:
    """A ref name no other process uses, for a commit not yet on any branch."""
    return f"{SCRATCH_PREFIX}{os.getpid()}-{time.monotonic_ns()}"


def lock_files(common: Path, refs: Iterable[str], *, deleting: bool, head_and_index: tuple[Path, Path] | None) -> list[str]:
    """The lock files git takes to change ``refs`` (``common``: where refs live), the packed
    refs when ``deleting``, and HEAD's and the index's (``head_and_index``: their lock paths)."""
    found = [str(common / f"{ref}.lock") for ref in refs]
    if deleting:
        found.append(str(common / "packed-refs.lock"))
    return found + [str(p) for p in head_and_index or ()]


def wait_unlocked(lock: Path, *, attempts: int = 50) -> None:
    """Wait (about 5 s) while another git process holds ``lock`` (git's ``index.lock``);
    :class:`GitLocked` when it stays."""
    for _ in range(attempts):
        if not lock.exists():
            return
        time.sleep(0.1)
    raise GitLocked(f"git's index is locked ({lock}): another git process is running, or one was killed; "
                    "retry when it has finished, or remove the file if no git process is running (nothing was written)")
