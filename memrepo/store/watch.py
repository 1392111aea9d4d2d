"""Folder watches for a long-lived process: has anything changed in these folders since the
last look?

Search asks that on every call in a large vault (``retrieval/search.py``): answering it with a
``stat`` of every memory folder (the tree stamp) costs ~5 ms at 100,000 memories in 737
folders, and an edit written in place into an existing file moves no stamp, so a large vault
also runs ``git status`` every 1-5 s (0.3-3 s at 100,000 files). A process that searches
again and again (the MCP server, the background server, batch runs) watches the folders
instead, through Linux's inotify (ctypes over the C library): one non-blocking ``read``
answers, for files created, deleted, renamed (most editors save by renaming) or written in
place, and for a folder removed or renamed. On a local filesystem every change made on this
machine is reported (:attr:`FolderWatch.local`), so such a watch makes the periodic look
unneeded; on a network or FUSE filesystem a change made by another machine is not, and the
periodic look stays. Where inotify is not there (not Linux, no C library, the per-user watch
limit reached, a folder gone), there is no watch and search keeps the stamp.
"""
from __future__ import annotations

import os
import sys
from collections.abc import Sequence

IN_MODIFY = 0x2
IN_CLOSE_WRITE = 0x8
IN_MOVED_FROM = 0x40
IN_MOVED_TO = 0x80
IN_CREATE = 0x100
IN_DELETE = 0x200
IN_DELETE_SELF = 0x400
IN_MOVE_SELF = 0x800
IN_ONLYDIR = 0x1000000
MASK = (IN_MODIFY | IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_DELETE_SELF
        | IN_MOVE_SELF | IN_ONLYDIR)
# filesystems on which inotify reports every change (all are made through this kernel)
LOCAL_FILESYSTEMS = frozenset({"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "ramfs", "overlay", "zfs", "f2fs",
                               "reiserfs", "jfs", "bcachefs", "nilfs2"})

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

    def __init__(self, fd: int, dirs: tuple[str, ...], local: bool) -> None:
        self.fd, self.dirs = fd, dirs
        self.local = local  # every change to the folders is reported (see the module's text)

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
        return cls(fd, tuple(dirs), filesystem(root) in LOCAL_FILESYSTEMS)

    def moved(self) -> bool:
        """True when a file in a watched folder was created, deleted, renamed or written, or a
        folder went away, since the last call. The queue is emptied, so each event is reported once; an overflowed queue
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


def filesystem(path: str | os.PathLike) -> str:
    """The type of the filesystem ``path`` is on (from ``/proc/self/mountinfo``: the mount
    point that is the longest prefix of its real path), or "" when it cannot be told."""
    real = os.path.realpath(path)
    best, kind = -1, ""
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                head, sep, tail = line.partition(" - ")
                fields = head.split()
                if not sep or len(fields) < 5 or not tail.split():
                    continue
                point = fields[4].replace("\\040", " ")
                inside = real == point or real.startswith(point.rstrip("/") + "/")
                if inside and len(point) > best:
                    best, kind = len(point), tail.split()[0]
    except OSError:
        return ""
    return kind
