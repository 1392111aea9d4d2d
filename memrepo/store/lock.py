"""The vault's write lock: one writer at a time, a bounded wait, then a clear "busy".

git's own ``index.lock`` makes a second concurrent writer fail loudly at random points; a
``fcntl.flock`` held around every write makes writers queue instead. The lock file lives in
the git directory, so it is never committed, and the kernel releases it if the process dies.
"""
from __future__ import annotations

import fcntl
import os
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from memrepo.errors import Busy

TIMEOUT_ENV = "MEMREPO_LOCK_TIMEOUT"


@contextmanager
def locked(path: Path, *, timeout: float | None = None, what: str = "the vault",
           busy: Callable[[], Exception] | None = None) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` for the block; after ``timeout`` s raise ``busy()``
    (default: Busy naming ``what``). The one wait-and-retry loop for every lock memrepo takes:
    the vault's, the search index's and the vectors' writers."""
    timeout = float(os.environ.get(TIMEOUT_ENV, "30")) if timeout is None else timeout  # read per call: a resident process serves many
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    if busy is not None:
                        raise busy() from None
                    raise Busy(f"{what} is busy: another memrepo process is writing "
                               f"(lock {path}); retry in a moment") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.1)
        yield
    finally:
        os.close(fd)


def is_locked(path: Path) -> bool:
    """True when another process holds the lock on ``path`` now."""
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
