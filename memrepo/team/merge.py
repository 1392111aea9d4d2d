"""Merging memory files by meaning, not by lines (sync and the git merge driver).

Two clones that changed the same memory merge field by field, as the field table says
(``memrepo.model.FIELDS``, ``merge``): the lists (``links``, ``evidence``, ``tags``, ``cites``,
``affects``, ``reinforced_by``) are unioned, ``weight`` keeps the larger value, a field only one
side changed takes that side, and a field both changed takes the side updated last (a retired status, superseded or archived, wins over ``active``: the
memory that replaced it exists on the other side). The result is always one valid file:
never conflict markers.
"""
from __future__ import annotations

from typing import Any

from memrepo.model import FIELDS, Memory

UNION = tuple(f.name for f in FIELDS if f.merge == "union")
LARGER = tuple(f.name for f in FIELDS if f.merge == "larger")
_RETIRED_WITH = {"superseded": ("superseded_by",), "archived": (), "rolled_back": (), "rejected": ()}


def _stamp(memory: Memory) -> str:
    return str(memory.meta.get("updated") or memory.meta.get("created") or "")


def merge_memory(base: Memory | None, ours: Memory, theirs: Memory) -> Memory:
    """One memory from two edits of the same memory (``base``: their common version)."""
    b = dict(base.meta) if base is not None else {}
    o, t = dict(ours.meta), dict(theirs.meta)
    newer_is_theirs = (_stamp(theirs), theirs.body) > (_stamp(ours), ours.body)
    meta: dict[str, Any] = {}
    for key in list(dict.fromkeys([*o, *t])):
        ov, tv, bv = o.get(key), t.get(key), b.get(key)
        if key in UNION:
            merged = list(dict.fromkeys([*(ov or ()), *(tv or ())]))
            if merged:
                meta[key] = merged
            continue
        if key in LARGER and ov is not None and tv is not None:
            meta[key] = max(ov, tv)
            continue
        if ov == tv or tv == bv:
            value = ov
        elif ov == bv:
            value = tv
        else:
            value = tv if newer_is_theirs else ov
        if value is not None:
            meta[key] = value
    _status(meta, o, t, b, newer_is_theirs)
    if ours.body == theirs.body or theirs.body == (base.body if base else None):
        body = ours.body
    elif base is not None and ours.body == base.body:
        body = theirs.body
    else:
        body = theirs.body if newer_is_theirs else ours.body
    return Memory(meta, body)


def _status(meta: dict[str, Any], o: dict, t: dict, b: dict, newer_is_theirs: bool) -> None:
    """Both sides changed the status: a retired status wins over active, with its own links."""
    os_, ts = o.get("status"), t.get("status")
    if os_ == ts or os_ == b.get("status") or ts == b.get("status"):
        return
    retired = [side for side in (o, t) if side.get("status") in _RETIRED_WITH]
    if len(retired) == 1:
        winner = retired[0]
    else:
        winner = t if newer_is_theirs else o
    meta["status"] = winner["status"]
    for key in ("superseded_by",):
        if winner.get(key):
            meta[key] = winner[key]
        else:
            meta.pop(key, None)


def merge_files(base_path: str, ours_path: str, theirs_path: str, name: str = "") -> int:
    """The git merge driver: merge %O %A %B into %A; 0 when merged, 1 when it cannot be
    (a file that does not parse is left to git, which then reports a conflict)."""
    from pathlib import Path

    from memrepo.store.checks import check_bytes
    from memrepo.store.vault import render_bytes

    def load(path: str) -> Memory | None:
        data = Path(path).read_bytes()
        if not data:
            return None
        memory, _problems = check_bytes(name or "memory.md", data)
        return memory

    try:
        base, ours, theirs = load(base_path), load(ours_path), load(theirs_path)
    except (OSError, ValueError):
        return 1
    if ours is None or theirs is None:
        return 1
    merged = merge_memory(base, ours, theirs)
    Path(ours_path).write_bytes(render_bytes(Memory(merged.meta, merged.body, ours.path)))
    return 0
