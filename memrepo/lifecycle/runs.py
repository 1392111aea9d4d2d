"""What the lifecycle runners share: the ``--now`` date, main's memories, run logs, proposal ids.

The runners (:mod:`memrepo.lifecycle.distill_run`, :mod:`memrepo.lifecycle.decay_run`,
:mod:`memrepo.lifecycle.nightly`) feed the pure algorithms from the vault and turn their results
into git changes; the helpers here are the parts they have in common.
"""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any, Callable, Iterable

from memrepo.errors import UsageError
from memrepo.model import Memory, parse_timestamp
from memrepo.store import git
from memrepo.store.vault import Vault


def resolve_now(now: str | dt.datetime | None) -> dt.datetime:
    """``--now YYYY-MM-DD`` (end of that day, UTC) or a datetime; default: the current time."""
    if now is None:
        return dt.datetime.now(dt.UTC).replace(microsecond=0)
    if isinstance(now, dt.datetime):
        return now if now.tzinfo else now.replace(tzinfo=dt.UTC)
    try:
        if len(now) == 10:
            day = dt.date.fromisoformat(now)
            return dt.datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=dt.UTC)
        return parse_timestamp(now)
    except ValueError:
        raise UsageError(f"--now {now!r} is not a date: use YYYY-MM-DD or an ISO-8601 date-time") from None


def read_main(vault: Vault, rows: list[dict], *, progress: Callable[[int, int], None] | None = None
              ) -> tuple[list[Memory], list[tuple[str, str]]]:
    """Memories of the given catalog rows as main holds them; unreadable ones with a reason.
    ``progress(done, total)`` is called about every 2 % and once at the end."""
    from memrepo.store.checks import check_bytes
    out, bad = [], []
    step = max(len(rows) // 50, 1)
    with git.BlobReader(vault.root) as reader:
        for i, row in enumerate(rows):
            if progress and i % step == 0:
                progress(i, len(rows))
            try:
                memory, problems = check_bytes(row["path"], reader.read(f"{vault.main_ref}:{row['path']}"))
                reason = "; ".join(map(str, problems))
            except Exception as e:  # a damaged file must not stop the nightly run
                memory, reason = None, str(e)
            if memory is None:
                bad.append((row["id"], reason or "unreadable"))
            else:
                out.append(memory)
    if progress:
        progress(len(rows), len(rows))
    return out, bad


def run_log(vault: Vault, kind: str, data: dict[str, Any]) -> Path:
    """Write one run's report to the git-ignored ``.memrepo/state/runs/``."""
    runs = vault.state_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    path = runs / f"{kind}-{stamp}.json"
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return path


def free_proposal_id(vault: Vault, base: str) -> str:
    """``base``, or ``base_2``, ``base_3`` …: the first id no proposal branch or marker uses."""
    from memrepo.review.proposals import APPLIED_PREFIX, BRANCH_PREFIX, REJECTED_PREFIX
    n = 1
    while True:
        pid = base if n == 1 else f"{base}_{n}"
        refs = (f"refs/heads/{BRANCH_PREFIX}{pid}", APPLIED_PREFIX + pid, REJECTED_PREFIX + pid)
        if not any(git.rev_parse(vault.root, r) for r in refs):
            return pid
        n += 1


def removed_rows(memories: Iterable[Memory]) -> list:
    """Check rows of files a commit removes (moves to ``archive/`` or another layer)."""
    from memrepo.store.checks import Row
    return [Row.of(m) for m in memories]
