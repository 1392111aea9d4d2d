"""Writing a file so that readers see the old version or the new one, never a half-written one."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from memrepo.errors import Conflict


def atomic_write(target: Path, payload: bytes) -> None:
    """Write via a temp file and ``os.replace``: readers see the old file or the new one."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        raise Conflict(f"{target} is a symlink; memrepo never writes through links")
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
