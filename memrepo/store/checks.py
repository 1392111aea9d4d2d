"""The vault's invariants, as checks that collect every problem.

Per file: it parses strictly, matches the schema, its ``id`` is its file name, it sits where
its layer/status/date put it, it carries no credential and no pointer out of the vault.
Across files (on a :class:`Rows` view, so a commit touching one file never re-reads the vault):
ids are unique, at most one ``active`` memory per (subject, fact), and ``supersedes`` /
``superseded_by`` agree in both directions.
"""
from __future__ import annotations

import math
import posixpath
import re
from dataclasses import dataclass
from typing import Iterable, Protocol

from memrepo.errors import Problem
from memrepo.model import LAYERS, STATUSES, Memory, canonical_path, is_memory_path
from memrepo.store import document, schema, secretscan


@dataclass(frozen=True)
class Row:
    """What the cross-file invariants need to know about one memory file."""

    id: str
    path: str
    subject: str | None = None
    fact: str | None = None
    status: str | None = None
    supersedes: str | None = None
    superseded_by: str | None = None
    layer: str | None = None
    risk: str | None = None
    source: str | None = None
    proposal: str | None = None

    @classmethod
    def of(cls, memory: Memory) -> Row:
        m = {k: v for k, v in memory.meta.items() if isinstance(v, str)}  # a wrong type: the schema says so
        return cls(id=str(memory.meta.get("id")), path=memory.path, subject=m.get("subject"), fact=m.get("fact"),
                   status=m.get("status"), supersedes=m.get("supersedes"),
                   superseded_by=m.get("superseded_by"), layer=m.get("layer"), risk=m.get("risk"),
                   source=m.get("source"), proposal=m.get("proposal"))


class Rows(Protocol):
    """A read view of the vault's rows (the catalog, possibly with staged changes on top)."""

    def with_id(self, memory_id: str) -> list[Row]: ...

    def active_for(self, subject: str, fact: str) -> list[Row]: ...

    def referencing(self, memory_id: str) -> list[Row]: ...


class RowSet:
    """An in-memory :class:`Rows` (whole-vault validation, tests, batches)."""

    def __init__(self, rows: Iterable[Row] = ()):
        self.by_path: dict[str, Row] = {}
        for row in rows:
            self.by_path[row.path] = row
        self._reindex()

    def _reindex(self) -> None:
        self._ids: dict[str, list[Row]] = {}
        self._active: dict[tuple[str, str], list[Row]] = {}
        self._refs: dict[str, list[Row]] = {}
        for row in self.by_path.values():
            self._ids.setdefault(row.id, []).append(row)
            if row.status == "active" and row.fact:
                self._active.setdefault((row.subject or "", row.fact), []).append(row)
            for target in (row.supersedes, row.superseded_by):
                if target is not None:
                    self._refs.setdefault(target, []).append(row)

    def with_id(self, memory_id: str) -> list[Row]:
        return list(self._ids.get(memory_id, ()))

    def active_for(self, subject: str, fact: str) -> list[Row]:
        return list(self._active.get((subject, fact), ()))

    def referencing(self, memory_id: str) -> list[Row]:
        return list(self._refs.get(memory_id, ()))


# --------------------------------------------------------------- one file

def check_bytes(path: str, data: bytes) -> tuple[Memory | None, list[Problem]]:
    """Parse and check one memory file's bytes; the memory is None when it cannot be read."""
    try:
        parsed = document.load_bytes(data, path)
    except document.DocumentError as e:
        return None, [e.problem]
    memory = Memory(parsed.meta, parsed.body, path)
    return memory, check_memory(memory, text=data.decode("utf-8"))


def check_memory(memory: Memory, *, text: str | None = None) -> list[Problem]:
    """Every per-file problem of a parsed memory (schema, name, place, secrets, escapes)."""
    path, meta = memory.path, memory.meta
    problems = text_problems(memory)
    if problems:
        return problems  # not text that can be written at all: nothing else can be judged
    problems = schema.check_front_matter(dict(meta), path)
    problems += _check_values(memory)
    problems += _check_location(memory)
    problems += _check_pointers(memory)
    if text is None:
        text = document.render(dict(meta), memory.body, schema.field_order())
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > document.MAX_FILE_BYTES:
        problems.append(Problem(path, "(file)", (
            f"{size} bytes is over the {document.MAX_FILE_BYTES}-byte cap; keep raw logs and transcripts "
            "outside the vault and point at them with 'evidence'")))
    else:
        problems += [Problem(path, _secret_field(text, f.line), f.message()) for f in secretscan.scan(text)]
    return sorted(set(problems))


def reader_problem(path: str, meta: dict) -> Problem | None:
    """Why readers skip this memory file, or None: its front matter breaks the schema, or its
    ``id`` is not its file name. A file on main can hold anything (a hand commit with
    ``--no-verify``, a pull): ``list``, ``show``, ``context``, search and the catalog read only
    what passes, and name the first problem of the rest (``validate`` lists them all)."""
    found = schema.check_front_matter(dict(meta), path)
    if found:
        return found[0]
    id_problems = [p for p in _check_location(Memory(meta, "", path)) if p.field == "id"]
    return id_problems[0] if id_problems else None


def _field_name(key) -> str:
    """A field's name as a message shows it: escaped when it holds a line break or another
    character that cannot be printed (a problem is one line)."""
    name = str(key)
    return name if name.isprintable() else repr(name)


_SURROGATE = re.compile("[\ud800-\udfff]")


def text_problems(memory: Memory) -> list[Problem]:
    """Strings that are not Unicode text (lone surrogates, from JSON's "\\ud800" or a bad
    decoder), in values and in field names at any depth, and NUL bytes in the body (git would
    then treat the file as binary)."""
    problems = []

    def surrogate(field: str, text: str, what: str = "") -> None:
        found = _SURROGATE.search(text)
        if found is not None:
            bad = found.group()
            problems.append(Problem(memory.path, field, (
                f"{what}contains {bad.encode('utf-8', 'surrogatepass').hex()!r} (a lone surrogate, U+{ord(bad):04X}), "
                "which is not Unicode text; fix the encoding of the input")))

    def walk(field: str, value) -> None:
        if isinstance(value, str):
            surrogate(field, value)
        elif isinstance(value, list):
            for item in value:
                walk(field, item)
        elif isinstance(value, dict):
            for k, v in value.items():
                if isinstance(k, str):
                    surrogate(f"{field}.{_field_name(k)}", k, "the field name ")
                walk(f"{field}.{_field_name(k)}" if isinstance(k, str) else field, v)

    for key, value in memory.meta.items():
        if isinstance(key, str):
            surrogate(_field_name(key), key, "the field name ")
        walk(_field_name(key), value)
    walk("body", memory.body)
    if "\x00" in memory.body:
        line = memory.body.count("\n", 0, memory.body.index("\x00")) + 1
        problems.append(Problem(memory.path, f"body (line {line})", (
            "contains a NUL byte; git would treat the file as binary and hide its diff. Remove it")))
    return problems


def _check_values(memory: Memory) -> list[Problem]:
    """What the schema cannot say: numbers are finite, a memory never supersedes itself."""
    meta, problems = memory.meta, []
    for key, value in meta.items():
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(Problem(memory.path, str(key), f"must be a finite number between 0 and 1, not {value}"))
    for key in ("supersedes", "superseded_by"):
        if isinstance(meta.get(key), str) and meta.get(key) == meta.get("id"):
            problems.append(Problem(memory.path, key, f"names the memory itself ({meta['id']}); a memory cannot replace itself"))
    return problems


def _secret_field(text: str, line: int) -> str:
    lines = text.split("\n")
    closing = next((i for i, ln in enumerate(lines[1:], start=2) if ln.rstrip() == "---"), None)
    if closing and line < closing:
        key = lines[line - 1].split(":", 1)[0].strip(" -")
        return f"{key} (line {line})" if key else f"line {line}"
    return f"body (line {line})"


def _check_location(memory: Memory) -> list[Problem]:
    path, meta = memory.path, memory.meta
    memory_id = meta.get("id")
    if not isinstance(memory_id, str):
        return []
    problems = []
    stem = posixpath.basename(path)[:-3] if path.endswith(".md") else posixpath.basename(path)
    if stem != memory_id:
        problems.append(Problem(path, "id", f"{memory_id!r} does not match the file name {stem!r}.md; rename the file or fix the id"))
    elif meta.get("layer") in LAYERS and meta.get("status") in STATUSES and "created" in meta and is_memory_path(path):
        # Only for a valid layer and status: otherwise the schema error says it, and the
        # suggested place (memories/L9/...) would send the person the wrong way.
        expected = canonical_path(meta)
        if path != expected and schema.is_timestamp(meta.get("created")):
            problems.append(Problem(path, "layer", f"a {meta.get('layer')} memory with status {meta.get('status')} belongs at {expected}; move the file there (git mv)"))
    return problems


def _check_pointers(memory: Memory) -> list[Problem]:
    """Evidence pointers are data: absolute paths and '..' would lead out of the vault."""
    problems = []
    evidence = memory.meta.get("evidence")
    for value in evidence if isinstance(evidence, list) else ():
        if not isinstance(value, str) or "://" in value:
            continue
        target = value.split("#", 1)[0]
        if target.startswith(("/", "\\", "~")) or ".." in target.replace("\\", "/").split("/"):
            problems.append(Problem(memory.path, "evidence", f"{value!r} points outside the vault; use a vault-relative path, a memory id, a commit id or a URL"))
    return problems


def check_scope(memory: Memory, *, owner: str | None, agent: str | None) -> list[Problem]:
    """Who may hold and write a memory of this scope (team memory).

    The shared vault (no ``owner``) never holds a private memory: those live in their agent's
    own private vault, which sync never pushes. A private vault (``[vault] owner``) holds only
    ``private:<owner>``, and only that agent (``agent``, when one is named) writes or edits it.
    """
    scope = memory.meta.get("scope") or "shared"
    path = memory.path or "(new memory)"
    if not isinstance(scope, str):
        return []
    if owner is None:
        if scope.startswith("private:"):
            return [Problem(path, "scope", f"{scope!r} is a private scope; private memories live only in their agent's "
                                           "private vault, never in the shared one: write it with "
                                           "'memrepo --agent NAME add --scope private'")]
        return []
    problems = []
    if scope != f"private:{owner}":
        problems.append(Problem(path, "scope", f"this is the private vault of agent {owner}; it holds only scope "
                                               f"'private:{owner}', not {scope!r}"))
    if agent and agent != owner:
        problems.append(Problem(path, "scope", f"private:{owner} belongs to agent {owner}; agent {agent} may not write or edit it"))
    return problems


# -------------------------------------------------------------- across files

RECORD_STATUSES = ("rolled_back", "rejected")
"""Statuses of a change that never took effect or was undone: its ``supersedes`` is a record of
what it once meant to replace, so that memory may be gone (``git revert`` of its ``add``)."""


def check_rows(touched: Iterable[Row], view: Rows, *, deleted: Iterable[Row] = ()) -> list[Problem]:
    """Cross-file invariants for the touched rows (and for rows left pointing at deleted ones)."""
    problems: list[Problem] = []
    for row in touched:
        problems += _check_unique(row, view)
        problems += _check_single_active(row, view)
        problems += _check_supersedes(row, view)
        problems += _check_cycle(row, view)
    for gone in deleted:
        if view.with_id(gone.id):
            continue
        for ref in view.referencing(gone.id):
            field = "supersedes" if ref.supersedes == gone.id else "superseded_by"
            if field == "supersedes" and ref.status in RECORD_STATUSES:
                continue
            problems.append(Problem(ref.path, field, f"points at {gone.id}, which {gone.path} no longer holds; old versions stay as 'superseded', never deleted"))
    return sorted(set(problems))


def check_new_ids(rows: Iterable[Row], view: Rows) -> list[Problem]:
    """A memory written as new (add, import) must not reuse an id the vault already holds, in
    any layer, the archive or any status: it would replace a memory that may have been reviewed."""
    problems = []
    for row in rows:
        for other in view.with_id(row.id):
            problems.append(Problem(row.path, "id", (
                f"{row.id!r} already exists ({other.path}, status {other.status}); a new memory needs a new id: "
                "leave the id out to get a fresh one, or edit that memory and commit")))
    return problems


def _check_unique(row: Row, view: Rows) -> list[Problem]:
    others = [r.path for r in view.with_id(row.id) if r.path != row.path]
    if others:
        return [Problem(row.path, "id", f"{row.id!r} is also used by {', '.join(sorted(others))}; ids must be unique")]
    return []


def _check_single_active(row: Row, view: Rows) -> list[Problem]:
    if row.status != "active" or not row.fact or not row.subject:
        return []
    others = [r for r in view.active_for(row.subject, row.fact) if r.path != row.path]
    if not others:
        return []
    names = ", ".join(sorted(f"{r.id} ({r.path})" for r in others))
    return [Problem(row.path, "status", (
        f"another memory is already active for ({row.subject}, {row.fact}): {names}; "
        "set the old one to 'superseded' with superseded_by, and this one's 'supersedes'"))]


def _check_supersedes(row: Row, view: Rows) -> list[Problem]:
    problems = []
    if row.supersedes:
        targets = view.with_id(row.supersedes)
        if not targets and row.status in RECORD_STATUSES:
            pass  # an undone change may name a memory whose own add was reverted since
        elif not targets:
            problems.append(Problem(row.path, "supersedes", f"{row.supersedes} does not exist"))
        elif row.status in ("active", "superseded", "archived"):
            old = targets[0]
            if old.superseded_by != row.id or old.status not in ("superseded", "archived"):
                problems.append(Problem(row.path, "supersedes", (
                    f"{old.id} must be status 'superseded' with superseded_by: {row.id} "
                    f"(it is {old.status}, superseded_by {old.superseded_by})")))
    if row.superseded_by:
        newer = view.with_id(row.superseded_by)
        if not newer:
            problems.append(Problem(row.path, "superseded_by", f"{row.superseded_by} does not exist"))
        elif newer[0].supersedes != row.id:
            problems.append(Problem(row.path, "superseded_by", f"{row.superseded_by} does not name {row.id} in its 'supersedes'"))
        if row.status == "active":
            problems.append(Problem(row.path, "status", f"is 'active' but superseded by {row.superseded_by}; set status: superseded"))
    return problems


_CHAIN_LIMIT = 10_000


def _check_cycle(row: Row, view: Rows) -> list[Problem]:
    """Following ``supersedes`` from a memory must never come back to it."""
    seen, current = {row.id}, row
    for _ in range(_CHAIN_LIMIT):
        if not current.supersedes or current.supersedes == row.id and current is row:
            return []
        if current.supersedes in seen:
            if current.supersedes != row.id:
                return []  # a cycle further down the chain: its own members report it
            chain = " -> ".join([*seen_order(row, view, len(seen)), row.id])
            return [Problem(row.path, "supersedes", f"forms a cycle ({chain}); the newest version supersedes the older, never back")]
        seen.add(current.supersedes)
        nxt = view.with_id(current.supersedes)
        if not nxt:
            return []
        current = nxt[0]
    return []


def seen_order(row: Row, view: Rows, n: int) -> list[str]:
    out, current = [], row
    for _ in range(n):
        out.append(current.id)
        nxt = view.with_id(current.supersedes) if current.supersedes else []
        if not nxt:
            break
        current = nxt[0]
    return out


class Overlay:
    """A :class:`Rows` view: ``base`` with some files replaced, added or deleted on top."""

    def __init__(self, base: Rows, rows: Iterable[Row] = (), deleted_paths: Iterable[str] = ()):
        self.base = base
        self.top = RowSet(rows)
        self.hidden = set(deleted_paths) | set(self.top.by_path)

    def _merge(self, below: list[Row], above: list[Row]) -> list[Row]:
        return [r for r in below if r.path not in self.hidden] + above

    def with_id(self, memory_id: str) -> list[Row]:
        return self._merge(self.base.with_id(memory_id), self.top.with_id(memory_id))

    def active_for(self, subject: str, fact: str) -> list[Row]:
        return self._merge(self.base.active_for(subject, fact), self.top.active_for(subject, fact))

    def referencing(self, memory_id: str) -> list[Row]:
        return self._merge(self.base.referencing(memory_id), self.top.referencing(memory_id))
