"""The refs memrepo writes to know its own work, and the trailers its commit messages carry.

Trailers (``Memrepo-Action: apply``) say what a commit is for a reader; anyone can copy them,
so the review audit never takes them as proof. What it takes is a record under
``refs/memrepo/`` that a memrepo command wrote (or ``sync`` brought from a clone where one did),
checked against what that kind of commit can do (:mod:`memrepo.review.gate`).
"""
from __future__ import annotations

import re

BRANCH_PREFIX = "proposal/"
APPLIED_PREFIX = "refs/memrepo/applied/"      # memrepo apply: the merge commit
REJECTED_PREFIX = "refs/memrepo/rejected/"    # memrepo reject: the record of who and why
PROPOSED_PREFIX = "refs/memrepo/proposed/"    # memrepo proposals push: the "activate on merge" commit
IMPORTED_PREFIX = "refs/memrepo/imported/"    # memrepo import (and the imports from other tools): the commit
ARBITRATED_PREFIX = "refs/memrepo/arbitrated/"  # memrepo propose settling a conflict by policy: the commit

_TRAILER_RE = re.compile(r"^(Memrepo-[A-Za-z-]+): ?(.*)$", re.MULTILINE)


def trailers(message: str) -> dict[str, str]:
    """The ``Memrepo-*`` trailers of a commit message (what it says, not a proof)."""
    return {k: v.strip() for k, v in _TRAILER_RE.findall(message)}


def record_patterns(*prefixes: str) -> list[str]:
    """for-each-ref patterns of memrepo's records here and as fetched from each remote (a plain
    ``git fetch`` brings them there once ``hooks install`` added the refspecs)."""
    return [p for prefix in prefixes
            for p in (prefix, f"refs/memrepo/remote/*/{prefix.removeprefix('refs/memrepo/')}*")]
