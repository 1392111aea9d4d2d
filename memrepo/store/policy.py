"""The review policy in force: what ``config.toml`` says, less every unreviewed weakening.

The ``[risk]`` and ``[arbitration]`` keys decide what goes to review (and ``[decay]``'s
protected layers and keystone bars what decay archives unreviewed), so a commit that lowers
them (a teammate's push, a plain commit past the hook, an edit left in the working tree) must
not switch review off by itself. The policy in force is folded over the history of
``.memrepo/config.toml`` on main (first parents, as main saw each change): the vault's first
version, then each next version as it stands when a person accepted it (a record
``refs/memrepo/policy/<blob>`` for that exact file, written by ``memrepo policy accept``), or
else only as far as it is stricter (:func:`memrepo.config.strictest`). The working tree's file
goes last, the same way.

The fold is kept in ``.git/memrepo-policy.json`` with the main commit it reflects and carried
forward by memrepo's own commits (which never touch the file), so a command pays nothing
when nothing moved, and a walk of the new commits only when main moved otherwise.
"""
from __future__ import annotations

import glob
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path

from memrepo.config import CONFIG_PATH, Config, parse_policy_text, strictest
from memrepo.store import git

RECORDS = "refs/memrepo/policy/"
CACHE = "memrepo-policy.json"


@dataclass(frozen=True)
class Change:
    """One version of config.toml on main: the commit that wrote it and whether a person
    accepted that exact file."""
    commit: str
    blob: str
    accepted: bool


def blob_id(data: bytes) -> str:
    """git's object id of a file's bytes (what ``git hash-object`` prints)."""
    import hashlib  # only when the file differs from main's (hashlib costs ~2 ms to import)
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _fingerprint(data: bytes) -> list[int]:
    """A cheap fingerprint of a file's bytes: is the working tree's config.toml main's?"""
    return [len(data), zlib.crc32(data)]


def accepted(root: Path) -> set[str]:
    """The config.toml blobs a person accepted (the names of the records, here or as fetched)."""
    return {ref.rsplit("/", 1)[-1] for ref in git.refs(root, RECORDS, "refs/memrepo/remote/*/policy/*")}


def history(root: Path, main_ref: str, since: str | None = None) -> list[tuple[str, str]]:
    """(commit, new blob) of every change to config.toml on main's first-parent line, oldest
    first (after ``since`` when given); a deletion has git's zero id."""
    rev = f"{since}..{main_ref}" if since else main_ref
    return [(entry.commit, changes[0].new_sha)
            for entry, changes in git.log_raw(root, rev, paths=[CONFIG_PATH], reverse=True) if changes]


def fold(root: Path, main_ref: str, start: Config | None, changes: list[tuple[str, str]],
         records: set[str]) -> Config:
    """The policy in force after ``changes`` (from ``start``; None: from the first version)."""
    texts = git.read_blobs(root, [b for _, b in changes if b != git.ZERO])
    current = start
    for _commit, blob in changes:
        version = parse_policy_text(texts[blob].decode("utf-8", "replace")) if blob != git.ZERO else Config()
        current = version if current is None or blob in records else strictest(version, current)
    return current if current is not None else Config()


def in_force(root: Path, main_ref: str, head: str | None, worktree: Config, worktree_bytes: bytes | None) -> Config:
    """The policy in force for a vault whose main is ``head`` and whose working tree holds
    ``worktree`` (the parsed config.toml, ``worktree_bytes`` its bytes or None when absent)."""
    if head is None:
        return worktree
    records_stamp = _records_stamp(root)
    cache = _read_cache(root)
    if cache and cache.get("main") == head and cache.get("records") == records_stamp:
        main_policy = Config(cache["policy"])
        main_blob = cache.get("blob")
    else:
        records = accepted(root)
        if cache and cache.get("records") == records_stamp and cache.get("main") and \
                git.is_ancestor(root, cache["main"], head):
            changes = history(root, main_ref, since=cache["main"])
            main_policy = fold(root, main_ref, Config(cache["policy"]), changes, records)
            main_blob = changes[-1][1] if changes else cache.get("blob")
        else:
            changes = history(root, main_ref)
            main_policy = fold(root, main_ref, None, changes, records)
            main_blob = changes[-1][1] if changes else None
        cache = {"main": head, "records": records_stamp, "policy": main_policy.data, "blob": main_blob,
                 "print": _fingerprint(git.read_blobs(root, [main_blob])[main_blob]) if main_blob not in (None, git.ZERO)
                 else None}
        _write_cache(root, cache)
    same = worktree_bytes is None or (cache is not None and cache.get("print") == _fingerprint(worktree_bytes))
    if not same and worktree_bytes is not None and blob_id(worktree_bytes) in accepted(root):
        return worktree  # an accepted version not committed yet
    return strictest(worktree, main_policy)


def carry_forward(root: Path, old: str | None, new: str) -> None:
    """main moved from ``old`` to ``new`` by a memrepo commit that did not touch config.toml:
    the policy in force is the same (spares the next command a walk of history)."""
    cache = _read_cache(root)
    if cache and old is not None and cache.get("main") == old:
        cache["main"] = new
        _write_cache(root, cache)


def _records_stamp(root: Path) -> list:
    """A fingerprint of the records (their folder and packed-refs), read without running git."""
    gitdir = os.path.join(root, ".git")
    stamp: list[list[int] | None] = []
    remotes = sorted(glob.glob(os.path.join(gitdir, "refs", "memrepo", "remote", "*", "policy")))
    for name in (os.path.join(gitdir, "refs", "memrepo", "policy"), os.path.join(gitdir, "packed-refs"), *remotes):
        try:
            st = os.stat(name)
            stamp.append([st.st_ino, st.st_size, st.st_mtime_ns])
        except OSError:
            stamp.append(None)
    return stamp


def _read_cache(root: Path) -> dict | None:
    try:
        data = json.loads(git.git_path(root, CACHE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("policy"), dict) else None


def _write_cache(root: Path, data: dict) -> None:
    try:
        git.git_path(root, CACHE).write_text(json.dumps(data), encoding="utf-8")
    except OSError:
        pass  # only costs a walk again next time
