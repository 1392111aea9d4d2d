"""Whether git's state moved, read from git's own files without starting git.

A search asks before every query whether HEAD moved and whether the index was rewritten: a
git process costs milliseconds, a stat of git's files microseconds. Where the files cannot
tell (a linked worktree, the reftable format), the answer is None and the caller asks git
(:func:`memrepo.store.git.resolve`).
"""
from __future__ import annotations

import os
from pathlib import Path


def file_stat(path: Path | str) -> tuple[int, int, int, int] | None:
    """(inode, size, mtime, ctime) of a file git rewrites by rename, or None when absent."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def small_file(path: Path | str) -> bytes | None:
    """The first bytes of a small file of git's (HEAD, a loose ref), or None when absent."""
    try:
        with open(path, "rb") as fh:
            return fh.read(256)
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def ref_stamp(root: Path, ref: str = "HEAD") -> tuple | None:
    """A fingerprint of the files git keeps ``ref`` in, read without running git: HEAD's text
    (for HEAD), the loose ref's text and the stat of ``packed-refs``. Git rewrites each of them
    (lock file + rename) whenever the ref moves, so an equal stamp means the ref has not moved.
    None when this cannot be told cheaply (a linked worktree, the reftable format, a symbolic
    ref of a symbolic ref): then ask git. (Plain string paths: this runs twice per search.)"""
    gitdir = os.path.join(root, ".git", "")
    if not os.path.isdir(gitdir) or os.path.exists(gitdir + "reftable"):
        return None
    parts: list = [file_stat(gitdir + "packed-refs")]
    name = ref
    if ref == "HEAD":
        head = small_file(gitdir + "HEAD")
        if head is None:
            return None
        parts.append(head)
        if not head.startswith(b"ref: "):
            return tuple(parts)  # detached: HEAD holds the commit itself
        name = head[5:].strip().decode("utf-8", "replace")
    if not name.startswith("refs/") or ".." in name:
        return None
    loose = small_file(gitdir + name)
    if loose is not None and loose.startswith(b"ref:"):
        return None
    parts.append(loose)
    return tuple(parts)


def index_stamp(root: Path) -> tuple[int, int, int, int] | None:
    """The stat of git's index file (rewritten by add, commit, checkout, reset, merge...)."""
    gitdir = os.path.join(root, ".git")
    return file_stat(os.path.join(gitdir, "index")) if os.path.isdir(gitdir) else None
