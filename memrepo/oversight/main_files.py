"""Main's memory files, kept in memory by a long-running reader and caught up from git's diff.

A memory page asks "which memories mention this one?" (links, ``[[wikilinks]]``, ``cites``,
``supersedes``). Asking git (``git grep`` over main) inflates every blob of the vault on every
page: about 60-140 ms at 10,000 memories on a busy two-core machine. A process that stays up
(``memrepo ui``) reads main's memory files once and afterwards only the files each new commit
changed (``git diff-tree`` from the commit it last saw), as the catalog does; a search is then a
scan of bytes in memory. The price is the files' size in memory (about 5 MB at 10,000 memories).
"""
from __future__ import annotations

import threading

from memrepo.model import MEMORY_ROOTS
from memrepo.store import git
from memrepo.store.vault import Vault

_CACHE: dict[str, tuple[str, dict[str, bytes]]] = {}
_LOCK = threading.Lock()


def main_files(vault: Vault) -> dict[str, bytes]:
    """Path -> bytes of every memory file on main, as of main's tip now (do not modify it)."""
    head = vault.head()
    if head is None:
        return {}
    root = str(vault.root)
    with _LOCK:
        cached = _CACHE.get(root)
        if cached is not None and cached[0] == head:
            return cached[1]
        files = dict(cached[1]) if cached is not None else {}
        try:
            changes = git.diff_tree(vault.root, cached[0], head, MEMORY_ROOTS) if cached is not None else None
        except Exception:   # the commit it last saw is gone (history rewritten elsewhere): read all again
            changes = None
        if changes is None:
            entries = [e for e in git.ls_tree(vault.root, head, MEMORY_ROOTS) if e.path.endswith(".md")]
            files = dict(zip([e.path for e in entries], _read(vault, [e.sha for e in entries])))
        else:
            for change in changes:
                files.pop(change.path, None)
            kept = [c for c in changes if c.status != "D" and c.path.endswith(".md")]
            files.update(zip([c.path for c in kept], _read(vault, [c.sha for c in kept])))
        _CACHE[root] = (head, files)
        return files


def _read(vault: Vault, shas: list[str]) -> list[bytes]:
    blobs = git.read_blobs(vault.root, shas)
    return [blobs[sha] for sha in shas]
