"""What a proposal would change, field by field: the reviewer's diff.

A memory is front matter plus a markdown body, so a line diff of its file mixes a changed
summary with re-quoted YAML and shows a one-word edit as a whole changed paragraph. This diff
compares the front matter field by field (old -> new; for a list, the items added and
removed) and the body word by word, with Chinese, Japanese and Korean text compared character
by character (a CJK sentence has no spaces to split it into words). Long unchanged stretches
of the body are folded to a line count. Each proposed memory is compared with the version it
replaces as the proposal's base held it: what the reviewer approves is exactly that change.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from difflib import SequenceMatcher
from typing import Any, Iterable, Mapping

from memrepo.model import MEMORY_ROOTS, Memory
from memrepo.store import git
from memrepo.store.vault import Vault

# Fields that record the write itself rather than what the memory says: shown apart.
BOOKKEEPING = ("id", "status", "created", "updated", "proposal", "rollback_point", "supersedes", "superseded_by")
CONTEXT_LINES = 2          # unchanged lines kept around a change; longer stretches are folded
TOKEN_LIMIT = 20_000       # tokens (of the longer side) a body's changed blocks are compared word by word in, in all;
                           # a block past that is shown removed + added
# difflib's exact search takes about one step per pair of equal elements (per level of its
# recursion): past this many pairs, its popular-element heuristic (autojunk) keeps it near linear.
EXACT_PAIRS = 250_000
_CJK = "\u3000-\u303f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef"
_TOKEN = re.compile(rf"\s+|[{_CJK}]\s*|[^\W{_CJK}]+\s*|[^\w\s{_CJK}]\s*", re.UNICODE)


@dataclass(frozen=True)
class FieldChange:
    """One front-matter field that differs: ``change`` is added, removed or changed."""
    name: str
    change: str
    old: Any
    new: Any
    added: tuple[str, ...] = ()      # list fields: items only the new version has
    removed: tuple[str, ...] = ()    # list fields: items only the old version had
    bookkeeping: bool = False


@dataclass(frozen=True)
class Segment:
    """A stretch of the body: ``same``, ``del`` (only in the old), ``ins`` (only in the new),
    or ``fold`` (``text`` says how many unchanged lines are not shown)."""
    op: str
    text: str


@dataclass(frozen=True)
class MemoryDiff:
    """One memory's change: ``kind`` is new, supersedes (a new version of a fact), edit (the
    same id changed) or delete."""
    id: str
    old_id: str | None
    kind: str
    summary: str
    fields: tuple[FieldChange, ...]
    body: tuple[Segment, ...]

    @property
    def body_changed(self) -> bool:
        return any(s.op in ("del", "ins") for s in self.body)

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "body_changed": self.body_changed}


# ------------------------------------------------------------------ comparing two versions

def field_diff(old: Memory | None, new: Memory | None) -> MemoryDiff:
    """The change from ``old`` to ``new`` (either may be None: a memory added or deleted)."""
    if old is None and new is None:
        raise ValueError("field_diff needs at least one version")
    ref = new if new is not None else old
    assert ref is not None
    if new is None:
        kind = "delete"
    elif old is None:
        kind = "new"
    else:
        kind = "edit" if old.id == new.id else "supersedes"
    return MemoryDiff(id=ref.id, old_id=old.id if old is not None else None, kind=kind,
                      summary=str(ref.meta.get("summary", "")),
                      fields=tuple(field_changes(old.meta if old else {}, new.meta if new else {})),
                      body=tuple(body_diff(old.body if old else "", new.body if new else "")))


def field_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldChange]:
    """Every field that differs, in the schema's order (extension fields after, sorted)."""
    from memrepo.store.schema import field_order
    order = field_order()
    names = [k for k in order if k in old or k in new]
    names += sorted(k for k in {*old, *new} if k not in order)
    out = []
    for name in names:
        a, b = old.get(name), new.get(name)
        if a == b:
            continue
        change = "added" if name not in old else "removed" if name not in new else "changed"
        added: tuple[str, ...] = ()
        removed: tuple[str, ...] = ()
        if isinstance(a, list | tuple) or isinstance(b, list | tuple):
            before, after = [str(v) for v in a or ()], [str(v) for v in b or ()]
            added = tuple(v for v in after if v not in before)
            removed = tuple(v for v in before if v not in after)
        out.append(FieldChange(name, change, a, b, added, removed, name in BOOKKEEPING))
    return out


def tokens(text: str) -> list[str]:
    """Words and punctuation marks, each with the whitespace after it; every CJK character is a
    token of its own. (A space on its own would be the commonest token of any text, and the
    exact search's cost grows with the square of a token's count.)"""
    return _TOKEN.findall(text)


def _matcher(a: list[str], b: list[str]) -> SequenceMatcher:
    """difflib's matcher for two sequences: its exact search while the pairs of equal elements
    are few enough for a page to wait for, its autojunk heuristic past that (a paragraph of
    thousands of words, thousands of repeated lines), where the exact search takes minutes."""
    counts = Counter(b)
    pairs = sum(counts[x] for x in a)
    return SequenceMatcher(None, a, b, autojunk=pairs > EXACT_PAIRS)


def body_diff(old: str, new: str) -> list[Segment]:
    """The body as unchanged, removed and added stretches: lines first, then the words (and
    CJK characters) inside each changed block; unchanged stretches folded around changes."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    out: list[Segment] = []
    room = TOKEN_LIMIT
    opcodes = _matcher(a, b).get_opcodes()
    for n, (op, i1, i2, j1, j2) in enumerate(opcodes):
        if op == "equal":
            out += _unchanged(a[i1:i2], first=n == 0, last=n == len(opcodes) - 1)
        elif op == "delete":
            out.append(Segment("del", "".join(a[i1:i2])))
        elif op == "insert":
            out.append(Segment("ins", "".join(b[j1:j2])))
        else:
            words, used = _words("".join(a[i1:i2]), "".join(b[j1:j2]), room)
            out += words
            room -= used
    return _merged(out)


def _unchanged(lines: list[str], *, first: bool, last: bool) -> list[Segment]:
    """An unchanged stretch, folded to its edges when it is long (all of it when nothing changed)."""
    if first and last:
        return [Segment("same", "".join(lines))] if lines else []
    head = 0 if first else CONTEXT_LINES
    tail = 0 if last else CONTEXT_LINES
    if len(lines) <= head + tail + 1:
        return [Segment("same", "".join(lines))]
    out = [Segment("same", "".join(lines[:head]))] if head else []
    out.append(Segment("fold", str(len(lines) - head - tail)))
    if tail:
        out.append(Segment("same", "".join(lines[-tail:])))
    return out


def _words(old: str, new: str, room: int) -> tuple[list[Segment], int]:
    """A changed block word by word, and how many tokens that took of the body's ``room``
    (a block that does not fit is shown removed and added whole)."""
    a, b = tokens(old), tokens(new)
    size = max(len(a), len(b))
    if size > room:
        return [Segment("del", old), Segment("ins", new)], 0
    out: list[Segment] = []
    for op, i1, i2, j1, j2 in _matcher(a, b).get_opcodes():
        if op == "equal":
            out.append(Segment("same", "".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(Segment("del", "".join(a[i1:i2])))
        if j2 > j1:
            out.append(Segment("ins", "".join(b[j1:j2])))
    return _merged(_spaces_kept(_merged(_grouped(out)))), size


def _spaces_kept(segments: list[Segment]) -> list[Segment]:
    """A replacement whose two sides end in the same whitespace keeps it unchanged: tokens
    carry the space after them, yet "is 10 after" -> "is 20 after" reads as 10 -> 20."""
    out: list[Segment] = []
    for n, s in enumerate(segments):
        out.append(s)
        follows = segments[n + 1].op if n + 1 < len(segments) else "same"
        if s.op != "ins" or follows != "same" or len(out) < 2 or out[-2].op != "del":
            continue
        removed, added = out[-2].text, s.text
        space = len(added) - len(added.rstrip())
        space = min(space, len(removed) - len(removed.rstrip()))
        while space and removed[-space:] != added[-space:]:
            space -= 1
        if space and removed[:-space] and added[:-space]:
            out[-2:] = [Segment("del", removed[:-space]), Segment("ins", added[:-space]), Segment("same", added[-space:])]
    return out


def _grouped(segments: list[Segment]) -> list[Segment]:
    """Within each run of changes, every removal first, then every addition."""
    out: list[Segment] = []
    run: list[Segment] = []
    for s in segments + [Segment("same", "")]:
        if s.op in ("del", "ins"):
            run.append(s)
            continue
        out += [r for r in run if r.op == "del"] + [r for r in run if r.op == "ins"]
        run = []
        if s.text:
            out.append(s)
    return out


def _merged(segments: Iterable[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for s in segments:
        if not s.text:
            continue
        if out and out[-1].op == s.op and s.op != "fold":
            out[-1] = Segment(s.op, out[-1].text + s.text)
        else:
            out.append(s)
    return out


# ------------------------------------------------------------------ a proposal's diff

def proposal_diffs(vault: Vault, ref: str) -> list[MemoryDiff]:
    """Each memory a proposal writes or deletes, compared with the version it replaces as the
    proposal's base held it (the version it supersedes, or the same id edited)."""
    from memrepo.review import proposals
    proposal = proposals.get(vault, ref)
    base = proposal.base or None
    out = []
    for memory in proposals.memories_of(vault, proposal):
        out.append(field_diff(_replaced(vault, base, memory), memory))
    for change in git.diff_tree(vault.root, base, proposal.commit, MEMORY_ROOTS):
        if change.status == "D" and base:
            out.append(field_diff(vault.read_at(base, change.path), None))
    return out


def _replaced(vault: Vault, base: str | None, memory: Memory) -> Memory | None:
    if base is None:
        return None
    for target in (memory.meta.get("supersedes"), memory.id):
        path = vault.find_path(target, base) if target else None
        if path:
            return vault.read_at(base, path)
    return None


def branch_diff(vault: Vault, ref: str) -> str:
    """The proposal branch's raw ``git diff`` against its base (what a forge shows)."""
    from memrepo.review import proposals
    proposal = proposals.get(vault, ref)
    return git.diff_text(vault.root, proposal.base or None, proposal.tip, MEMORY_ROOTS)
