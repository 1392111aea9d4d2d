"""What a process keeps per open vault between searches (the MCP server, the resident
server, batch runs, benchmarks): the index object with its open searcher and the statistics
connection. Each is checked for staleness on every use."""
from __future__ import annotations

import weakref
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo.store.vault import Vault

if TYPE_CHECKING:  # pragma: no cover
    from memrepo.retrieval.index import MemoryIndex
    from memrepo.retrieval.stats import Stats


def stats(vault: Vault) -> Stats:
    """The vault's recall statistics (a new connection)."""
    from memrepo.retrieval.stats import Stats
    vault.state_dir.mkdir(parents=True, exist_ok=True)
    return Stats(vault.state_dir / "stats.sqlite")


class Warm:
    """The index and the statistics of one vault in this process."""

    def __init__(self, vault: Vault):
        from memrepo.retrieval.index import MemoryIndex
        self.stats = stats(vault)
        self.index = MemoryIndex(vault.index_dir, stats=self.stats)
        self.stats_file: int | None = None    # the statistics file's inode after the last search

    def live_stats(self, vault: Vault) -> Stats:
        """The statistics, reopened when their file was removed or replaced meanwhile."""
        if self.stats_file is not None and inode(self.stats.path) != self.stats_file:
            self.stats.close()
            self.stats = self.index.stats = stats(vault)
        return self.stats


def inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


_WARM: weakref.WeakKeyDictionary[Vault, Warm] = weakref.WeakKeyDictionary()


def warm(vault: Vault) -> Warm:
    """This process's :class:`Warm` of ``vault``."""
    found = _WARM.get(vault)
    if found is None:
        found = _WARM[vault] = Warm(vault)
    return found


def forget(vault: Vault) -> None:
    """Close what this process keeps of ``vault`` (its searcher, its statistics connection)."""
    found = _WARM.pop(vault, None)
    if found is not None:
        found.index.close()
        found.stats.close()


def index(vault: Vault) -> MemoryIndex:
    """This process's search index of ``vault``."""
    return warm(vault).index
