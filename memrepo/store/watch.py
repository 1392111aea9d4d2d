"""Folder watches for a long-lived process: has a file been added, removed or renamed in
these folders since the last look?

Search asks that on every call in a large vault (``retrieval/search.py``, the tree stamp):
answering it with a ``stat`` of every memory folder costs ~5 ms at 100,000 memories in 737
folders. A process that searches again and again (the MCP server, the background server,
batch runs) watches the folders instead, through Linux's inotify (ctypes over the C
library), and one non-blocking ``read`` answers. The events watched are exactly what moves a
folder's mtime (a file created, deleted or renamed in it — most editors save by renaming —
or the folder itself removed or renamed), so the answers are the stamp's. Where inotify is
not there (not Linux, no C library, the per-user watch limit reached, a folder gone), there is
no watch and search keeps the stamp.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence

IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_ONLYDIR = 0x1000000
MASK = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR

_LIBC: list = []


def _libc():
    if not _LIBC:
        lib = None
        if sys.platform.startswith("linux"):
            try:
                import ctypes
                lib = ctypes.CDLL(None, use_errno=True)
                lib.inotify_init1.argtypes = [ctypes.c_int]
                lib.inotify_add_watch.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32]
            except (OSError, AttributeError):
                lib = None
        _LIBC.append(lib)
    return _LIBC[0]


class FolderWatch:
    """Watches ``dirs`` (relative to ``root``) from its creation on: :meth:`moved` says whether
    anything happened in them since the last call (or since the watch began)."""

    def __init__(self, fd: int, dirs: tuple[str, ...]) -> None:
        self.fd, self.dirs = fd, dirs

    @classmethod
    def start(cls, root: str | os.PathLike, dirs: Sequence[str]) -> FolderWatch | None:
        """A watch on every folder, or None when one cannot be set up (then nothing is watched)."""
        lib = _libc()
        if lib is None or not dirs:
            return None
        fd = lib.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            return None
        base = os.path.join(os.fsencode(root), b"")
        for d in dirs:
            if lib.inotify_add_watch(fd, base + os.fsencode(d), MASK) < 0:
                os.close(fd)
                return None
        return cls(fd, tuple(dirs))

    def moved(self) -> bool:
        """True when a watched folder gained, lost or renamed an entry, or went away, since the
        last call. The queue is emptied, so each event is reported once; an overflowed queue
        (too many events to keep) reads as an event too."""
        if self.fd < 0:
            return True
        seen = False
        while True:
            try:
                data = os.read(self.fd, 65536)
            except BlockingIOError:
                return seen
            except OSError:
                self.close()
                return True
            if not data:
                return seen
            seen = True

    def close(self) -> None:
        if self.fd >= 0:
            fd, self.fd = self.fd, -1
            os.close(fd)

    def __del__(self) -> None:
        self.close()
