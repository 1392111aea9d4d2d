"""The look at the working tree: which memory files have uncommitted edits, and when to look.

Commits are seen by comparing HEAD with the commit the index reflects (:mod:`memrepo.retrieval.sync`);
an edit not yet committed needs a look at the working tree, a stat of every memory file by git.
:func:`due` decides when a search looks again; the last look is kept in ``<index_dir>/dirty.json``
(what the next process starts from) and, per process and vault, in :class:`Looks`.
"""
from __future__ import annotations

import json
import os
import time
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from memrepo.model import MEMORY_ROOTS, is_memory_path
from memrepo.store import git
from memrepo.store.vault import Vault

DIRTY_FILE = "dirty.json"
SCAN_ALWAYS_FILES = 2000  # vaults of up to 2,000 memory files look on every search;
SCAN_MIN_INTERVAL = 1.0   # a larger one when its tree stamp moved, else at most once a second,
SCAN_COST_FACTOR = 10.0   # ten times the look's cost apart,
SCAN_MAX_INTERVAL = 5.0   # and at least every 5 s


@dataclass(frozen=True)
class Scan:
    """The last look at the working tree: the dirty memory files, when, what it cost, how many
    memory files there were, and the tree's stamp taken just before (see :func:`tree_stamp`)."""

    paths: frozenset[str] = frozenset()
    at: float = 0.0
    cost: float = 0.0
    files: int = 0
    dirs: tuple[str, ...] = ()
    stamp: tuple = ()


class Looks:
    """What a process keeps of its looks at one vault's tree between searches (the MCP server,
    batch runs, benchmarks): the last look as read from its file, and a watch on the memory
    folders once the vault is searched again."""

    def __init__(self) -> None:
        self.scan_stamp: tuple | None = None   # the stat of the scan file when it was read
        self.scan = Scan()
        self.watch: Any = None                 # a FolderWatch on the memory folders (a large vault, searched again)
        self.synced = False                    # a search has run here before
        self.watched_look = False              # the last look at the working tree began under ``watch``
        self.unwatchable: tuple[str, ...] = ()  # folders a watch could not be set up for


_LOOKS: weakref.WeakKeyDictionary[Vault, Looks] = weakref.WeakKeyDictionary()


def forget(vault: Vault) -> None:
    """Stop watching ``vault``'s memory folders and forget its last look (this process)."""
    found = _LOOKS.pop(vault, None)
    if found is not None and found.watch is not None:
        found.watch.close()


def looks(vault: Vault) -> Looks:
    """This process's :class:`Looks` of ``vault``."""
    found = _LOOKS.get(vault)
    if found is None:
        found = _LOOKS[vault] = Looks()
    return found


def dirty_paths(vault: Vault) -> set[str]:
    """Memory files that differ from HEAD in the working tree (edited, staged, new, deleted)."""
    return {p for p in git.worktree_changes(vault.root, MEMORY_ROOTS) if is_memory_path(p)}


def load(vault: Vault) -> Scan:
    """The last look, as recorded (an empty one when there is none or it is unreadable)."""
    path = vault.index_dir / DIRTY_FILE
    state = looks(vault)
    try:
        st = path.stat()
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        return Scan()
    if stamp == state.scan_stamp:
        return state.scan
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        scan = Scan(frozenset(data["paths"]), float(data["at"]), float(data["cost"]), int(data.get("files", 0)),
                    tuple(data.get("dirs", ())), _tuple(data.get("stamp", ())))
    except (OSError, ValueError, KeyError, TypeError):
        return Scan()
    state.scan_stamp, state.scan = stamp, scan
    return scan


def _tuple(value):
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value


def save(vault: Vault, scan: Scan) -> None:
    """Record ``scan`` as the last look."""
    from memrepo.store.vault import atomic_write
    payload = {"paths": sorted(scan.paths), "at": scan.at, "cost": scan.cost, "files": scan.files,
               "dirs": list(scan.dirs), "stamp": scan.stamp}
    path = vault.index_dir / DIRTY_FILE
    atomic_write(path, json.dumps(payload).encode())
    st = path.stat()
    state = looks(vault)
    state.scan_stamp, state.scan = (st.st_ino, st.st_size, st.st_mtime_ns), scan


def tree_stamp(vault: Vault, dirs: Iterable[str]) -> tuple:
    """What changes when a memory file is added, removed or replaced (most editors save by
    replacing), or git touches its index (add, commit, checkout, reset, merge): the stat of
    git's index file and the mtimes of the memory folders. Only an edit written in place
    into an existing file leaves it as it was."""
    root = os.path.join(vault.root, "")

    def mtime(d: str):
        try:
            return os.stat(root + d).st_mtime_ns
        except OSError:
            return None
    return (git.index_stamp(vault.root), tuple(mtime(d) for d in dirs))


def tree_moved(vault: Vault, last: Scan) -> bool:
    """Whether the tree stamp moved since ``last`` look. A process that searches this vault
    again watches its memory folders (:class:`memrepo.store.watch.FolderWatch`) instead of
    a stat of each one (~5 ms at 100,000 memories): the watch starts before the stamp is
    compared once more, so a change before it is the stamp's to see and one after it the
    watch's."""
    state = looks(vault)
    if state.watch is not None and state.watch.fd >= 0 and state.watch.dirs == last.dirs:
        return state.watch.moved() or (git.index_stamp(vault.root),) != last.stamp[:1]
    if state.watch is not None:  # the folders changed since it began (or it broke)
        state.watch.close()
        state.watch = None
    if state.synced and last.dirs and last.stamp and state.unwatchable != last.dirs:
        from memrepo.store.watch import FolderWatch
        state.watch = FolderWatch.start(vault.root, last.dirs)
        if state.watch is None:  # e.g. the per-user watch limit: not tried again for these folders
            state.unwatchable = last.dirs
    return tree_stamp(vault, last.dirs) != last.stamp


def memory_dirs(vault: Vault) -> tuple[tuple[str, ...], int]:
    """The folders under the memory roots (relative, sorted as a walk visits them) and how
    many memory files they hold."""
    root = os.path.join(vault.root, "")
    dirs, files = [], 0
    for top in MEMORY_ROOTS:
        stack = [top]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(root + folder) as entries:
                    subdirs = []
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            subdirs.append(f"{folder}/{entry.name}")
                        elif entry.name.endswith(".md"):
                            files += 1
            except OSError:  # not there (yet), or removed meanwhile
                continue
            dirs.append(folder)
            stack.extend(sorted(subdirs, reverse=True))
    return tuple(dirs), files


def look(vault: Vault) -> Scan:
    """Look at the working tree now."""
    start = time.monotonic()
    dirs, files = memory_dirs(vault)
    stamp = tree_stamp(vault, dirs)  # before git looks: a change after it moves the stamp
    paths = frozenset(dirty_paths(vault))
    return Scan(paths, time.time(), time.monotonic() - start, files, dirs, stamp)


def due(last: Scan, moved: Callable[[], bool] | None = None, *, watched: bool = False) -> bool:
    """Whether to look at the working tree again for uncommitted edits.

    Commits are always seen at once (HEAD is compared on every search). Looking for
    uncommitted edits means a stat of every memory file (a git process: ~10 ms at 1,000
    memories, ~270 ms at 100,000). Vaults of up to 2,000 memories look on every search. A
    larger one looks when its tree stamp moved (a file added, removed or replaced, git's
    index rewritten), and otherwise every 1-5 s (ten times the look's cost), which bounds how
    long an edit written in place into an existing file stays unseen. When ``watched`` (a
    folder watch on a local filesystem that began before the last look: every change since
    is reported, in-place edits included), it looks only when ``moved`` says so.
    """
    if last.files <= SCAN_ALWAYS_FILES:
        return True
    if watched and moved is not None:
        return moved()
    waited = time.time() - last.at
    if waited < 0 or waited >= min(SCAN_MAX_INTERVAL, max(SCAN_MIN_INTERVAL, SCAN_COST_FACTOR * last.cost)):
        return True
    return moved is not None and moved()


def catch_up(vault: Vault) -> tuple[Scan, Scan | None]:
    """(the last look, a new look or None): looks again when :func:`due` says so, records it,
    and tracks whether the folder watch saw every change since (then the next look waits
    for the watch). A file dirty at the last look and not in the new one changed back."""
    last = load(vault)
    state = looks(vault)
    watch = state.watch
    watched = state.watched_look and watch is not None and watch.local and watch.dirs == last.dirs
    scan = look(vault) if due(last, lambda: tree_moved(vault, last), watched=watched) else None
    if state.watch is not watch:  # a new watch (or none): it has not seen a look begin yet
        state.watched_look = False
    if scan is not None:  # every change after this look began is the watch's to report
        state.watched_look = state.watch is not None and state.watch.dirs == scan.dirs
        save(vault, scan)
    return last, scan
