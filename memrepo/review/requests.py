"""Idempotency keys for writes (``--request-id``): a write retried with the same key returns the
first write's result instead of writing a duplicate.

A script or an agent that lost the answer of a write (a timeout, a killed background server, a
dropped connection) cannot tell whether it was committed. With a key it need not: the write
records ``refs/memrepo/requests/<key>`` pointing at its commit (a memory on main or a proposal)
in the same ref transaction as the write itself, and names the key in a ``Memrepo-Request``
trailer; a second call with the key, checked under the vault lock, finds that commit and
answers from it. The record is this clone's own (sync does not carry it).
"""
from __future__ import annotations

import re

from memrepo.errors import UsageError
from memrepo.store import git
from memrepo.store.vault import Vault

PREFIX = "refs/memrepo/requests/"
TRAILER = "Memrepo-Request"
_KEY = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,127}")


def checked(key: str | None) -> str | None:
    """The key as given, or a UsageError saying what a key may hold."""
    if key is None:
        return None
    if not isinstance(key, str) or not _KEY.fullmatch(key) or ".." in key or key.endswith((".", ".lock")):
        raise UsageError(f"--request-id {key!r}: a request id is 1-128 letters, digits and . _ @ - "
                         "(starting with a letter or digit), e.g. a job or turn id")
    return key


CALL_TRAILER = "Memrepo-Call"  # a call id the background server's client gives an add (no ref)


def trailers(request_id: str | None, call_id: str | None = None) -> dict[str, str]:
    """The trailers that name a write's request id and call id in its commit message."""
    return {k: v for k, v in ((TRAILER, request_id), (CALL_TRAILER, call_id)) if v}


def find_call(vault: Vault, call_id: str) -> str | None:
    """The commit (on main or a proposal branch, among the newest) an add with ``call_id`` made:
    how the client of a background server killed during an add learns whether it was written."""
    needle = f"{CALL_TRAILER}: {call_id}"
    with vault.lock():  # finishes a write the killed server left half done
        for rev in (vault.main_ref, "--branches=proposal/*"):
            for entry in git.log(vault.root, rev, extra=["-n", "50"]):
                if needle in entry.body.splitlines():
                    return entry.commit
    return None


def ref(key: str) -> str:
    return PREFIX + key


def record(key: str | None) -> list[git.RefChange]:
    """The ref change that records a write under ``key`` (for the write's own ref transaction)."""
    return [git.RefChange(ref(key), git.NEW_COMMIT, None)] if key else []


def recorded(vault: Vault, key: str | None) -> str | None:
    """The commit a write with ``key`` made, if one was made (caller holds the vault lock)."""
    return git.rev_parse(vault.root, ref(key)) if key else None
