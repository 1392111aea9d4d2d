"""OpenClaw workspaces in (export: :mod:`memrepo.agents.openclaw_export`; the format is
described in docs/agents.md).

Import: ``MEMORY.md`` bullets (or ``##`` sections without bullets) become L2/L3 memories,
``USER.md`` directives memories about ``user``, ``memory/YYYY-MM-DD*.md`` entries L1 memories
dated by their file, and the markdown files OpenClaw imported from other assistants
(``memory/imports/<assistant>/``) memories like ``MEMORY.md``'s, marked ``x-openclaw-import``.
OpenClaw's inline comments are kept (``importance`` -> ``weight``, ``trigger`` -> tags,
``project`` -> ``x-openclaw-project``, ``observed``/``status``). Ids are derived from the
entry's file, section and text (or taken from the ``<!-- memrepo: ID -->`` note an export
wrote), so importing the same workspace twice adds nothing; an entry edited in place
supersedes its old version (curated entries carry a positional fact key for that).

A workspace comes from outside: files are read without following symlinks (a link is
refused by name, as bytes that are not UTF-8 are), and nothing is imported unless every file
could be read. An entry keeps its place in its file (``x-openclaw-position``), a daily note's
YAML front matter is read as front matter (its tags apply to the note's entries, the text is
kept to be written back), and a date is recorded only where the workspace gives one.
"""
from __future__ import annotations

import datetime as dt
import errno
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from memrepo.errors import InvalidData, Problem, UsageError
from memrepo.model import Memory, now_iso
from memrepo.store.vault import Vault

FILE_BUDGET = 20000
USER_BUDGET = 4000
MAX_FILE_BYTES = 16 << 20  # one workspace file read whole: a curated file or a day's log is far smaller
IMPORTS_DIR = "memory/imports"   # memory/imports/<assistant>/: what OpenClaw imported from others
DAILY_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:-(.+))?\.md$")
_COMMENT_RE = re.compile(r"<!--\s*(.*?)\s*-->", re.S)
_BULLET_RE = re.compile(r"^(\s*)[-*+]\s+(.*)$")
_HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_PRINCIPLE_WORDS = ("always", "never", "must", "principle", "rule", "should", "原则", "必须", "总是", "永远", "务必")
_PREFERENCE_WORDS = ("prefer", "likes", "like ", "wants", "favou", "偏好", "喜欢", "倾向", "希望")
_KNOWLEDGE_WORDS = ("is ", "are ", "uses", "located", "version", "地址", "位于", "版本", "使用")


@dataclass
class Entry:
    """One OpenClaw memory entry as read from a workspace file."""
    file: str
    section: str
    text: str
    comments: dict[str, str] = field(default_factory=dict)
    position: int = 0


# ------------------------------------------------------------------ reading

def _comments(text: str) -> tuple[str, dict[str, str]]:
    found: dict[str, str] = {}
    for raw in _COMMENT_RE.findall(text):
        for part in raw.split("|"):
            if ":" in part:
                key, value = part.split(":", 1)
                found[key.strip().lower()] = value.strip()
    return _COMMENT_RE.sub("", text).strip(), found


def entries(text: str, file: str) -> Iterator[Entry]:
    """Entries of one markdown file: each bullet (with its continuation lines) is one entry;
    a heading's text that is not bullets is one entry too."""
    section, bullet = "", None
    loose: list[str] = []
    position = 0

    def flush_bullet():
        nonlocal bullet, position
        if bullet:
            body, comments = _comments("\n".join(bullet).strip())
            if body:
                position += 1
                yield Entry(file, section, body, comments, position)
        bullet = None

    def flush_loose():
        nonlocal loose, position
        body, comments = _comments("\n".join(loose).strip())
        if body:
            position += 1
            yield Entry(file, section, body, comments, position)
        loose = []

    for line in text.splitlines():
        heading = _HEADING_RE.match(line)
        m = _BULLET_RE.match(line)
        if heading and len(heading.group(1)) >= 2:
            yield from flush_bullet()
            yield from flush_loose()
            section = heading.group(2).strip()
        elif heading:  # a "# Title" line: not memory
            yield from flush_bullet()
            yield from flush_loose()
        elif m and not m.group(1):
            yield from flush_bullet()
            bullet = [m.group(2)]
        elif bullet is not None and (line.startswith((" ", "\t")) or (line.strip() and line.lstrip().startswith("<!--"))):
            bullet.append(line.strip())
        elif not line.strip():
            yield from flush_bullet()
        else:
            yield from flush_bullet()
            loose.append(line)
    yield from flush_bullet()
    yield from flush_loose()


def _guess_kind(text: str) -> str:
    low = text.lower()
    if any(w in low for w in _PREFERENCE_WORDS):
        return "preference"
    if any(w in low for w in _PRINCIPLE_WORDS):
        return "principle"
    return "pattern"


def _slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text.strip().lower()).strip("-")[:60] or "top"


def _derived_id(entry: Entry) -> str:
    import hashlib  # here: every command line imports this module through memrepo.api
    digest = hashlib.sha256(f"{entry.file}\0{entry.section}\0{entry.text}".encode()).hexdigest()
    return f"oc_{digest[:16]}"


def _day(value: str) -> str | None:
    try:
        return dt.date.fromisoformat(value.strip()[:10]).isoformat()
    except ValueError:
        return None


def _record(entry: Entry, *, layer: str, kind: str, subject: str, created: str | None) -> tuple[dict[str, Any], str]:
    from memrepo.model import is_valid_id
    from memrepo.review.writes import summary_from
    c = entry.comments
    origin = c.get("memrepo", "")
    fields: dict[str, Any] = {"id": origin if is_valid_id(origin) else _derived_id(entry), "layer": layer,
                              "kind": kind, "subject": subject, "summary": summary_from(entry.text),
                              "created": created or now_iso(), "x-openclaw-file": entry.file,
                              "x-openclaw-position": entry.position}
    if entry.section:
        fields["x-openclaw-section"] = entry.section
    if "importance" in c:
        try:
            fields["weight"] = max(0.0, min(1.0, float(c["importance"]) / 10))
        except ValueError:
            pass
    if c.get("trigger"):
        fields["tags"] = [t.strip() for t in c["trigger"].split(",") if t.strip()]
    if c.get("project"):
        fields["x-openclaw-project"] = c["project"]
    if c.get("observed") and _day(c["observed"]):
        fields["created"] = f"{_day(c['observed'])}T00:00:00+00:00"
        fields["x-openclaw-observed"] = _day(c["observed"])
    if c.get("status") == "superseded":
        fields["x-openclaw-status"] = "superseded"
    if layer != "L1":
        name = entry.file.removeprefix("memory/imports/").removesuffix(".md") if entry.file.startswith(IMPORTS_DIR) \
            else Path(entry.file).stem
        fields["fact"] = f"openclaw.{_slug(name)}.{_slug(entry.section)}.{entry.position}"
    return fields, entry.text + "\n"


# ------------------------------------------------------------------ reading files safely

def _refused(rel: str, why: str) -> InvalidData:
    return InvalidData([Problem(rel, "(file)", why)], "nothing was imported")


def _no_links(root: Path, rel: str) -> None:
    """Refuse ``rel`` when it, or a folder on its way below ``root``, is a symlink: the
    workspace is someone else's folder, and a link can lead anywhere (``/etc/passwd``)."""
    parts = rel.split("/")
    for i in range(1, len(parts) + 1):
        if (root / "/".join(parts[:i])).is_symlink():
            where = "/".join(parts[:i])
            raise _refused(where, "is a symlink; memrepo never follows links out of a workspace: "
                                  "replace it with the file or folder itself")


def read_text(root: Path, rel: str) -> str:
    """The UTF-8 text of the workspace file ``rel``, never through a symlink."""
    _no_links(root, rel)
    try:  # O_NONBLOCK: opening a named pipe would wait for a writer for ever
        fd = os.open(root / rel, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError as e:
        if e.errno == errno.ELOOP:  # made a link between the check and the open
            raise _refused(rel, "is a symlink; memrepo never follows links out of a workspace") from None
        raise _refused(rel, f"cannot be read: {e.strerror}") from None
    with os.fdopen(fd, "rb") as fh:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refused(rel, "is not a regular file (a named pipe, a device or a socket); memrepo reads only "
                                "plain files from a workspace: remove it")
        if info.st_size > MAX_FILE_BYTES:
            raise _refused(rel, f"is {info.st_size / 2**20:,.0f} MiB, over the {MAX_FILE_BYTES >> 20} MiB memrepo reads "
                                "from one workspace file; split it or move the raw text out of the workspace")
        data = fh.read(MAX_FILE_BYTES + 1)
    try:
        return data.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise InvalidData([Problem(rel, f"line {line}", f"byte {data[e.start]:#04x} is not UTF-8; re-save the file "
                                                         "as UTF-8")], "nothing was imported") from None


def front_matter(text: str, rel: str) -> tuple[str | None, dict[str, Any], str]:
    """(the raw front matter, its fields, the rest) of a workspace file: a leading ``---``
    block is the file's metadata, never an entry. Fields that cannot be read are left out."""
    from memrepo.store import document
    if not text.startswith("---\n"):
        return None, {}, text
    close = re.search(r"^---[ \t]*$", text[4:], re.MULTILINE)
    if close is None:
        return None, {}, text
    raw = text[4:4 + close.start()]
    rest = text[4 + close.end():].removeprefix("\n")
    try:
        meta = document.parse(f"---\n{raw}---\n", rel).meta
    except document.DocumentError:
        meta = {}
    return raw, meta, rest


def tags_of(meta: dict[str, Any]) -> list[str]:
    tags = meta.get("tags")
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.split(",")]
    return [str(t).strip() for t in tags if str(t).strip()] if isinstance(tags, list) else []


def _listing(root: Path, rel: str) -> list[str]:
    """The names in the workspace folder ``rel`` (none when it does not exist), never through a link."""
    _no_links(root, rel)
    folder = root / rel
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def _curated(root: Path, file: str, subject: str = "general") -> Iterator[tuple[dict[str, Any], str]]:
    """MEMORY.md-like entries: L3 for principles, else L2, ``kind`` guessed from the words."""
    _raw, _meta, text = front_matter(read_text(root, file), file)
    for e in entries(text, file):
        kind = _guess_kind(e.text)
        yield _record(e, layer="L3" if kind == "principle" else "L2", kind=kind, subject=subject, created=None)


def _daily(root: Path, name: str) -> Iterator[tuple[dict[str, Any], str]]:
    m = DAILY_RE.match(name)
    assert m is not None
    rel = f"memory/{name}"
    raw, meta, text = front_matter(read_text(root, rel), rel)
    day, tail = m.group(1), m.group(2) or ""
    time = f"{tail[:2]}:{tail[2:4]}:00" if re.fullmatch(r"\d{4}", tail) else "12:00:00"
    created = f"{day}T{time}+00:00" if _day(day) else None
    for e in entries(text, rel):
        fields, body = _record(e, layer="L1", kind="event", subject="general", created=created)
        if tail and not re.fullmatch(r"\d{4}", tail):
            fields["session"] = tail
        if raw is not None:
            fields["x-openclaw-front-matter"] = raw
            fields["tags"] = list(dict.fromkeys([*fields.get("tags", []), *tags_of(meta)]))
        yield fields, body


def _imported_files(root: Path) -> list[str]:
    """memory/imports/<assistant>/**.md, every folder on the way checked for links."""
    found = []
    for assistant in _listing(root, IMPORTS_DIR):
        if not (root / IMPORTS_DIR / assistant).is_dir() or (root / IMPORTS_DIR / assistant).is_symlink():
            _no_links(root, f"{IMPORTS_DIR}/{assistant}")
            continue
        pending = [f"{IMPORTS_DIR}/{assistant}"]
        while pending:
            folder = pending.pop()
            for name in _listing(root, folder):
                rel = f"{folder}/{name}"
                _no_links(root, rel)
                if (root / rel).is_dir():
                    pending.append(rel)
                elif name.endswith(".md"):
                    found.append(rel)
    return sorted(found)


def read_workspace(workspace: Path) -> list[tuple[dict[str, Any], str]]:
    """Every memory of an OpenClaw workspace as (fields, body), oldest daily logs first."""
    root = Path(workspace).expanduser()
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory; give an OpenClaw workspace (it holds MEMORY.md and memory/)")
    out: list[tuple[dict[str, Any], str]] = []
    names = {p.name for p in root.iterdir()}
    curated = "MEMORY.md" if "MEMORY.md" in names else "memory.md" if "memory.md" in names else None
    if curated:
        out += _curated(root, curated)
    if "USER.md" in names:
        _raw, _meta, text = front_matter(read_text(root, "USER.md"), "USER.md")
        for e in entries(text, "USER.md"):
            out.append(_record(e, layer="L2", kind="preference", subject="user", created=None))
    for name in _listing(root, "memory"):
        if DAILY_RE.match(name):
            out += _daily(root, name)
    for rel in _imported_files(root):
        for fields, body in _curated(root, rel):
            out.append(({**fields, "x-openclaw-import": rel.split("/")[2]}, body))
    return out


# ------------------------------------------------------------------ import

@dataclass(frozen=True)
class ImportResult:
    imported: tuple[str, ...]
    superseded: tuple[str, ...]
    unchanged: int
    commit: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"imported": len(self.imported), "ids": list(self.imported), "superseded": list(self.superseded),
                "unchanged": self.unchanged, "commit": self.commit}


def import_openclaw(vault: Vault, workspace: Path, *, author: str | None = None, agent: str | None = None) -> ImportResult:
    """Import an OpenClaw workspace as one commit; entries already imported are skipped, an
    entry edited in place supersedes its previous version."""
    from memrepo.review.writes import build, default_author
    records = read_workspace(workspace)
    who = author or default_author(vault, agent)
    memories = []
    for fields, body in records:
        status = "superseded" if fields.pop("x-openclaw-status", None) == "superseded" else "active"
        if status == "superseded":
            fields.pop("fact", None)
        fields.update(source="import", risk="low", risk_reason="import from an OpenClaw workspace by a person",
                      status=status)
        memories.append((build(fields, body, author=who, source="import"), body))
    with vault.lock():
        vault.require_main_checkout()
        catalog = vault.catalog()
        writes, new, replaced, unchanged = [], [], [], 0
        seen: set[str] = set()
        for m, body in memories:
            edited = None
            if catalog.with_id(m.id):
                edited = _edited(vault, m.id, body)
                if edited is None:
                    unchanged += 1
                    continue
                m = m.evolve(id=_derived_id(Entry(str(m.meta["x-openclaw-file"]), str(m.meta.get("x-openclaw-section", "")),
                                                  body.strip())))
                if catalog.with_id(m.id):
                    unchanged += 1
                    continue
            if m.id in seen:
                unchanged += 1
                continue
            seen.add(m.id)
            old = catalog.active_for(m.meta["subject"], m.meta["fact"]) if m.meta.get("fact") else []
            previous = vault.read_at(vault.main_ref, old[0].path) if old else edited
            if previous is not None and previous.meta.get("status") == "active" and m.meta["status"] == "active":
                writes.append(previous.evolve(status="superseded", superseded_by=m.id, updated=now_iso()))
                m = m.evolve(supersedes=previous.id)
                replaced.append(previous.id)
            writes.append(m)
            new.append(m.id)
        if not new:
            return ImportResult((), (), unchanged, None)
        vault.check_new(writes)
        message = (f"memrepo: import {len(new)} memories from an OpenClaw workspace ({Path(workspace).name})\n\n"
                   f"Memrepo-Action: import\nMemrepo-Count: {len(new)}\nMemrepo-Origin: openclaw\n")
        commit = vault.commit(writes=writes, message=message).commit
    return ImportResult(tuple(new), tuple(replaced), unchanged, commit)


def _edited(vault: Vault, memory_id: str, text: str) -> Memory | None:
    """The vault's memory ``memory_id`` when the workspace entry carrying its id now says
    something else (a person edited it there); None when it is the same entry."""
    known = vault.get(memory_id)
    said = text.strip()
    if said in (known.body.strip(), str(known.meta.get("summary", "")).strip()):
        return None
    return known
