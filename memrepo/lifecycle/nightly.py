"""The nightly run: distill, promote, decay, clean-up and index maintenance, one run at a time.

Each step is its own runner (:mod:`memrepo.lifecycle.distill_run`,
:mod:`memrepo.lifecycle.decay_run`); this module runs them in order under a run lock and appends
what they did to ``.memrepo/state/nightly.log``. :mod:`memrepo.lifecycle.schedule` installs it.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict
from typing import Any

from memrepo.errors import Busy, Conflict
from memrepo.lifecycle.decay_run import cleanup, decay
from memrepo.lifecycle.distill_run import distill
from memrepo.lifecycle.runs import resolve_now
from memrepo.store import git
from memrepo.store.lock import locked
from memrepo.store.vault import Vault


def nightly(vault: Vault, *, now: str | dt.datetime | None = None) -> dict[str, Any]:
    """Distill, promote, decay, clean-up and index maintenance, never two runs at once."""
    from memrepo.retrieval import search
    lock_path = git.git_path(vault.root, "memrepo-nightly.lock")
    try:
        with locked(lock_path, timeout=0, what="the nightly run"):
            result: dict[str, Any] = {"now": resolve_now(now).isoformat(),
                                      "distill": _summary(distill(vault, now=now)),
                                      "promote": _summary(distill(vault, now=now, promote=True))}
            try:
                vault.require_main_checkout()
                result["decay"] = _summary(decay(vault, now=now))
                result["cleanup"] = _summary(cleanup(vault, now=now))
            except Conflict as e:  # proposals never need the checkout; main's commits do
                result["decay"] = result["cleanup"] = {"skipped": str(e), "changed": False}
            result["index"] = asdict(search.sync(vault))
    except Busy:
        raise Busy("another nightly run is still in progress on this vault; this one did nothing") from None
    result["changed"] = any(v.get("changed") for v in result.values() if isinstance(v, dict))
    with (vault.state_dir / "nightly.log").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
    return result


def _summary(report) -> dict[str, Any]:
    d = report.as_dict()
    out = {k: d[k] for k in ("proposal", "commit", "check_proposal") if d.get(k)}
    for key in ("candidates", "reinforcements", "archived", "deletion_candidates", "actions", "skipped", "check_candidates"):
        if d.get(key):
            out[key] = len(d[key])
    out["changed"] = bool(d.get("proposal") or d.get("commit") or d.get("check_proposal"))
    return out
