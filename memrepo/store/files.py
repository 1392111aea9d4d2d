"""Writing a file so that readers see the old version or the new one, never a half-written one."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from memrepo.errors import Conflict


def atomic_write(target: Path, payload: bytes, *, mode: int = 0o644) -> None:
    """Write via a temp file and ``os.replace``: readers see the old file or the new one
    (``mode``: the new file's permissions, set before it takes the target's place)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        raise Conflict(f"{target} is a symlink; memrepo never writes through links")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
