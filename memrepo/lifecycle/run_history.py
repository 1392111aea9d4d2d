"""What the last lifecycle runs did, read back from their logs (for a person's morning look).

The nightly job appends one JSON line per run to ``.memrepo/state/nightly.log``; every distill
run writes its whole report (candidates with why each was kept, near misses when asked for,
capped and skipped entries) to ``.memrepo/state/runs/distill-<time>.json``. Both are derived,
git-ignored state: a missing or damaged log means "no run recorded", never an error.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memrepo.store.vault import Vault


def last_nightly(vault: Vault) -> dict[str, Any] | None:
    """The last nightly run's record (``now``, ``changed`` and one summary per step), or None."""
    path = vault.state_dir / "nightly.log"
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    for line in reversed(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue   # a torn last line: the run before it is the last one recorded
        if isinstance(record, dict):
            return record
    return None


def last_distill(vault: Vault, *, promote: bool = False) -> dict[str, Any] | None:
    """The newest distill (or promote) run's report, with the log file it came from; None when
    no run was recorded."""
    runs = vault.state_dir / "runs"
    kind = "promote" if promote else "distill"
    for path in sorted(runs.glob(f"{kind}-*.json"), reverse=True) if runs.is_dir() else ():
        report = _read(path)
        if report is not None:
            return {**report, "log": str(path)}
    return None


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
