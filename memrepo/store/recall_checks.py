"""Recall checks as files: the format of ``checks/*.yaml`` (read, check, write).

A recall check is a question the agent must still be able to answer from memory: the memory
it must find (by id, or by subject and fact key so that it survives a supersede), the rank it
must reach (top 5 unless told), optional search filters and intent, and ids that must *not*
come back (a rolled-back or rejected fact). They live in the vault, beside the memories, so a
change to memory can be judged by its effect: :mod:`memrepo.lifecycle.memory_ci` runs them.

``schema/checks.schema.json`` is the definition; the reader is as strict as the memory reader
(no YAML aliases, tags or duplicate keys) and every problem names the file and the line.
Writing appends to a file's text, so the comments a person wrote around the checks stay.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Protocol

from memrepo.errors import Problem, UsageError
from memrepo.model import DATE_FORMS, parse_when
from memrepo.store import document, git, schema

CHECKS_DIR = "checks"
DEFAULT_FILE = "checks/recall.yaml"
SCHEMA_FILE = "checks.schema.json"
DEFAULT_TOP = 5
MAX_FILE_BYTES = 1024 * 1024
_KEY_ORDER = ("id", "question", "expect", "top", "must_not", "intent", "filters", "why")
HEADER = ("# Recall checks: questions the agent must still answer from memory after any change\n"
          "# (memrepo check add / check list / check run; the format: schema/checks.schema.json).\n")


@dataclass(frozen=True)
class RecallCheck:
    """One check as a file holds it, with the file and the line of its entry."""

    question: str
    expect_id: str | None = None
    expect_fact: tuple[str, str] | None = None   # (subject, fact): the active version counts
    top: int = DEFAULT_TOP
    must_not: tuple[str, ...] = ()
    intent: str | None = None
    filters: tuple[tuple[str, Any], ...] = ()
    id: str | None = None
    why: str | None = None
    file: str = DEFAULT_FILE
    line: int | None = None

    @property
    def name(self) -> str:
        """How tables and the apply commit name it: its id, else its place."""
        return self.id or f"{self.file}:{self.line}"

    @property
    def key(self) -> tuple:
        """What makes two versions of a file hold the same check."""
        return ("id", self.id) if self.id else ("question", self.question, self.expect_id, self.expect_fact)

    def expect_label(self) -> str:
        if self.expect_id:
            return self.expect_id
        if self.expect_fact:
            return f"{self.expect_fact[0]} {self.expect_fact[1]}"
        return "-"

    def entry(self) -> dict[str, Any]:
        """The check as its file writes it (keys in the schema's order, defaults left out)."""
        out: dict[str, Any] = {}
        if self.id:
            out["id"] = self.id
        out["question"] = self.question
        if self.expect_id:
            out["expect"] = self.expect_id
        elif self.expect_fact:
            out["expect"] = {"subject": self.expect_fact[0], "fact": self.expect_fact[1]}
        if self.top != DEFAULT_TOP:
            out["top"] = self.top
        if self.must_not:
            out["must_not"] = list(self.must_not)
        if self.intent:
            out["intent"] = self.intent
        if self.filters:
            out["filters"] = dict(self.filters)
        if self.why:
            out["why"] = self.why
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, **self.entry(), "top": self.top, "file": self.file, "line": self.line}

    @classmethod
    def from_entry(cls, entry: dict[str, Any], *, file: str = DEFAULT_FILE, line: int | None = None) -> RecallCheck:
        expect = entry.get("expect")
        return cls(question=entry["question"], expect_id=expect if isinstance(expect, str) else None,
                   expect_fact=(expect["subject"], expect["fact"]) if isinstance(expect, dict) else None,
                   top=int(entry.get("top", DEFAULT_TOP)), must_not=tuple(entry.get("must_not") or ()),
                   intent=entry.get("intent"), filters=tuple(sorted((entry.get("filters") or {}).items())),
                   id=entry.get("id"), why=entry.get("why"), file=file, line=line)


class KnownMemories(Protocol):
    """What a check may name: the memories of one version of the vault."""

    def has_id(self, memory_id: str) -> bool: ...

    def has_fact(self, subject: str, fact: str) -> bool: ...


class KnownSet:
    """:class:`KnownMemories` from rows (anything with ``id``, ``subject`` and ``fact``)."""

    def __init__(self, rows: Iterable[Any]):
        rows = list(rows)
        self.ids = {r.id for r in rows}
        self.facts = {(r.subject, r.fact) for r in rows if r.fact}

    def has_id(self, memory_id: str) -> bool:
        return memory_id in self.ids

    def has_fact(self, subject: str, fact: str) -> bool:
        return (subject, fact) in self.facts


def is_check_file(path: str) -> bool:
    """A file under ``checks/`` that holds checks (``*.yaml`` or ``*.yml``, not hidden)."""
    parts = path.split("/")
    return (len(parts) >= 2 and parts[0] == CHECKS_DIR and path.endswith((".yaml", ".yml"))
            and not any(p.startswith(".") for p in parts))


# ------------------------------------------------------------------ reading

def parse(path: str, data: bytes) -> tuple[list[RecallCheck], list[Problem]]:
    """The checks of one file and every problem in it (``path:line N: message``); an entry
    with a problem is left out, the others are returned."""
    if len(data) > MAX_FILE_BYTES:
        return [], [Problem(path, "(file)", f"{len(data)} bytes is over the {MAX_FILE_BYTES}-byte cap; split the checks into several files")]
    try:
        text = data.decode("utf-8")
        loaded, lines = document.load_yaml(text.removeprefix("\ufeff"), path)
    except UnicodeDecodeError as e:
        bad_line = data[:e.start].count(b"\n") + 1
        return [], [Problem(path, f"line {bad_line}", "not UTF-8; re-save the file as UTF-8")]
    except document.DocumentError as e:
        return [], [e.problem]
    if loaded is None:
        return [], []
    problems, bad = [], set()
    for where, message in schema.check_against(SCHEMA_FILE, loaded):
        at = _line_of(lines, where)
        field = ".".join(str(w) for w in where[2:]) or ("check" if len(where) == 2 else where[0] if where else "")
        problems.append(Problem(path, f"line {at}" if at else "(file)", f"{field}: {message}" if field else message))
        if len(where) >= 2 and where[0] == "checks":
            bad.add(where[1])
        elif where:
            bad.add("*")
    if "*" in bad or not isinstance(loaded, dict):
        return [], problems
    checks = [RecallCheck.from_entry(entry, file=path, line=lines.get(("checks", i)))
              for i, entry in enumerate(loaded.get("checks") or []) if i not in bad]
    for c in list(checks):
        since = dict(c.filters).get("since")
        try:
            parse_when("since", since)
        except UsageError:
            problems.append(Problem(path, f"line {c.line}", f"filters.since: {since!r} is not a date: use {DATE_FORMS}"))
            checks.remove(c)
    return checks, problems + duplicate_ids(checks)


def _line_of(lines: dict[tuple, int], where: tuple) -> int | None:
    while where and where not in lines:
        where = where[:-1]
    return lines.get(where)


def duplicate_ids(checks: Iterable[RecallCheck]) -> list[Problem]:
    """Two checks with one id (in one file or in two)."""
    seen: dict[str, RecallCheck] = {}
    problems = []
    for c in checks:
        if c.id is None:
            continue
        first = seen.setdefault(c.id, c)
        if first is not c:
            problems.append(Problem(c.file, f"line {c.line}", (
                f"id: {c.id!r} is already the id of the check at {first.file}:{first.line}; give each check its own id")))
    return problems


def missing_memories(checks: Iterable[RecallCheck], known: KnownMemories) -> list[Problem]:
    """Every check whose expected memory this version of the vault does not hold."""
    problems = []
    for c in checks:
        where = f"line {c.line}" if c.line else "(file)"
        if c.expect_id and not known.has_id(c.expect_id):
            problems.append(Problem(c.file, where, (
                f"expect: no memory {c.expect_id!r} in the vault; fix the id ('memrepo list' shows them) or remove the check")))
        if c.expect_fact and not known.has_fact(*c.expect_fact):
            problems.append(Problem(c.file, where, (
                f"expect: no memory has subject {c.expect_fact[0]!r} and fact {c.expect_fact[1]!r}; fix them or remove the check")))
    return problems


def load_rev(root: Path, rev: str) -> tuple[list[RecallCheck], list[Problem]]:
    """Every check of the commit ``rev`` (one listing and one read for all its files)."""
    entries = [e for e in git.ls_tree(root, rev, [CHECKS_DIR]) if is_check_file(e.path) and e.mode != "120000"]
    blobs = git.read_blobs(root, [e.sha for e in entries])
    return _parse_all((e.path, blobs[e.sha]) for e in entries)


def load_dir(root: Path) -> tuple[list[RecallCheck], list[Problem]]:
    """Every check of the working tree's ``checks/`` folder (a symlink is a problem, not followed)."""
    found, problems = [], []
    for path in sorted(Path(root, CHECKS_DIR).rglob("*")) if Path(root, CHECKS_DIR).is_dir() else []:
        rel = path.relative_to(root).as_posix()
        if not is_check_file(rel):
            continue
        if path.is_symlink():
            problems.append(Problem(rel, "(file)", "is a symlink; check files must be regular files inside the vault"))
        elif path.is_file():
            found.append((rel, path.read_bytes()))
    checks, more = _parse_all(found)
    return checks, problems + more


@lru_cache(maxsize=32)
def _parse_once(path: str, data: bytes) -> tuple[tuple[RecallCheck, ...], tuple[Problem, ...]]:
    """:func:`parse`, remembered: a run reads the same file for both versions it compares."""
    found, bad = parse(path, data)
    return tuple(found), tuple(bad)


def _parse_all(files: Iterable[tuple[str, bytes]]) -> tuple[list[RecallCheck], list[Problem]]:
    checks: list[RecallCheck] = []
    problems: list[Problem] = []
    for path, data in sorted(files):
        found, bad = _parse_once(path, data)
        checks += found
        problems += bad
    by_file = {c.file for c in checks}
    problems += [p for p in duplicate_ids(checks) if len(by_file) > 1 and p not in problems]
    return checks, sorted(set(problems))


def merge_texts(path: str, ours: str, theirs: str) -> str | None:
    """Two clones' versions of one checks file as one: ours, with every check only theirs has
    appended (a union by check: ids, else question and expectation). None when either side
    cannot be read (then a person merges it)."""
    mine, bad = parse(path, ours.encode("utf-8"))
    other, bad_other = parse(path, theirs.encode("utf-8"))
    if bad or bad_other:
        return None
    keys = {c.key for c in mine}
    ids = {c.id for c in mine if c.id}
    new = [c for c in other if c.key not in keys and c.id not in ids]
    return append(ours, path, new) if new else ours


# ------------------------------------------------------------------ writing

def render_entry(check: RecallCheck, indent: str = "  ") -> str:
    """One check as a block-style list item of a ``checks:`` list."""
    lines: list[str] = []
    for key in _KEY_ORDER:
        value = check.entry().get(key)
        if value is None:
            continue
        if isinstance(value, dict):
            lines.append(f"{key}:")
            lines += [f"  {k}: {document.scalar(v)}" for k, v in value.items()]
        elif isinstance(value, list):
            lines.append(f"{key}:")
            lines += [f"  - {document.scalar(v)}" for v in value]
        else:
            lines.append(f"{key}: {document.scalar(value)}")
    return "".join(f"{indent}{'- ' if i == 0 else '  '}{line}\n" for i, line in enumerate(lines))


def render_file(checks: Iterable[RecallCheck]) -> str:
    """A whole checks file (comments of an older version are not kept: see :func:`append`)."""
    return HEADER + "checks:\n" + "".join(render_entry(c) for c in checks)


def append(text: str | None, path: str, checks: Iterable[RecallCheck]) -> str:
    """``text`` (a checks file, or None for a new one) with ``checks`` added at the end of its
    list, keeping every comment; a file whose list cannot be extended in place (a flow-style
    ``[...]``, another key after it) is written anew."""
    checks = list(checks)
    if not text or not text.strip():
        return render_file(checks)
    old, problems = parse(path, text.encode("utf-8"))
    if problems:
        from memrepo.errors import InvalidData
        raise InvalidData(problems, f"fix {path} first (nothing was written)")
    clashes = duplicate_ids([*old, *(replace(c, file=path, line=None) for c in checks)])
    if clashes:
        from memrepo.errors import InvalidData
        raise InvalidData(clashes, "give each check its own id (nothing was written)")
    want = [c.entry() for c in old + checks]
    base = text if text.endswith("\n") else text + "\n"
    for indent in ("  ", ""):
        candidate = base + "".join(render_entry(c, indent) for c in checks)
        found, problems = parse(path, candidate.encode("utf-8"))
        if not problems and [c.entry() for c in found] == want:
            return candidate
    return render_file(old + checks)
