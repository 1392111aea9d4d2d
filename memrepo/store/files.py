"""Writing a file so that readers see the old version or the new one, never a half-written one."""
from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from memrepo.errors import Conflict


def atomic_write(target: Path, payload: bytes, *, mode: int = 0o644) -> None:
    """Write via a temp file and ``os.replace``: readers see the old file or the new one
    (``mode``: the new file's permissions, set before it takes the target's place)."""
    with atomic_file(target, mode=mode) as fh:
        fh.write(payload)


@contextmanager
def atomic_file(target: Path, *, mode: int = 0o644) -> Iterator[BinaryIO]:
    """:func:`atomic_write` a piece at a time: the block writes the temp file it is given,
    which takes ``target``'s place when the block ends (and is removed if it raises) — for
    a file too large to build in memory first."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        raise Conflict(f"{target} is a symlink; memrepo never writes through links")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
