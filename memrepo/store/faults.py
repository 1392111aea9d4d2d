"""Named crash points for proving the write path: inert unless ``MEMREPO_FAULT`` names one.

``MEMREPO_FAULT=commit-after-refs-moved memrepo add …`` makes the process end abruptly
(``os._exit``: no ``finally``, no flush, as ``kill -9`` would) at that step, so a test can
check that whatever the next memrepo command finds is either nothing done or everything
recorded. ``POINTS`` names every step; the fault test kills a real process at each one.

``MEMREPO_FAULT_WAIT=<point>`` makes the process wait at that step instead, until a signal
ends it: a test can interrupt (Ctrl-C) a command exactly there, however loaded the machine.
Either may name the N-th time the process reaches a step that repeats, as ``<point>:N``
(``vectors-checkpointed:3``: after the third unit of vectors kept).
"""
from __future__ import annotations

import os
import time
from typing import Callable

ENV = "MEMREPO_FAULT"
WAIT_ENV = "MEMREPO_FAULT_WAIT"
EXIT_CODE = 137  # what a shell reports for a process killed by SIGKILL

POINTS = {
    # every commit memrepo writes (add, import, apply, reject, rollback, distill, proposals)
    "commit-before-objects": "journal written, no git object yet",
    "commit-after-objects": "commit object written under a scratch ref, no branch moved",
    "commit-in-ref-transaction": "git holds the ref locks of the one transaction; git is killed too",
    "commit-after-refs-moved": "every ref moved in one transaction, checkout not yet updated",
    "commit-mid-checkout": "files of the checkout written, git's index not yet updated",
    "commit-after-checkout": "checkout and index updated, journal and catalog not yet",
    # command steps before their commit
    "add-checked": "add: memory built, checked and routed, nothing written",
    "import-checked": "import: every line checked, nothing written",
    "apply-checked": "apply: proposal checked and planned, nothing written",
    "reject-checked": "reject: proposal found open, nothing written",
    "rollback-checked": "rollback: revert planned, nothing written",
    "distill-proposed": "distill: candidates found, proposal not yet made",
    "reindex-built": "reindex: new index generation written, not yet made live",
    "vectors-checkpointed": "vector build: a unit of texts encoded and kept aside (its progress written), the build not finished",
    "vectors-snapshot-written": "vector build: the new snapshot's files written, meta.json not yet flipped to them",
    "vectors-planned": "import or reindex: the keyword index ready and the vector build planned, none started",
    "check-clone-made": "check run: the throw-away clone made, no check answered yet",
}


def point(name: str, before_exit: Callable[[], None] | None = None) -> None:
    """End the process here when ``MEMREPO_FAULT`` names this point, wait here for a signal
    when ``MEMREPO_FAULT_WAIT`` does (otherwise nothing)."""
    wait, end = os.environ.get(WAIT_ENV), os.environ.get(ENV)
    if not (wait or end):
        return
    _passed[name] = _passed.get(name, 0) + 1
    if _named(wait, name):
        while True:   # a signal's handler (Ctrl-C: KeyboardInterrupt) ends the wait
            time.sleep(3600)
    if not _named(end, name):
        return
    if before_exit is not None:
        before_exit()
    os._exit(EXIT_CODE)


_passed: dict[str, int] = {}   # how many times this process reached each point (while one is armed)


def _named(value: str | None, name: str) -> bool:
    """Whether ``value`` (``point`` or ``point:N``) names this passage of ``name``."""
    if not value:
        return False
    point, _, nth = value.partition(":")
    if point != name:
        return False
    assert name in POINTS, f"unknown fault point {name!r}"
    return _passed[name] == (int(nth) if nth else 1)


def armed(name: str) -> bool:
    return (os.environ.get(ENV) or "").partition(":")[0] == name
