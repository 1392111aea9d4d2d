"""OpenClaw workspaces in and out (the format is described in the README's OpenClaw section).

Import: ``MEMORY.md`` bullets (or ``##`` sections without bullets) become L2/L3 memories,
``USER.md`` directives memories about ``user``, ``memory/YYYY-MM-DD*.md`` entries L1 memories
dated by their file, and the markdown files OpenClaw imported from other assistants
(``memory/imports/<assistant>/``) memories like ``MEMORY.md``'s, marked ``x-openclaw-import``. OpenClaw's inline comments are kept (``importance`` -> ``weight``,
``trigger`` -> tags, ``project`` -> ``x-openclaw-project``, ``observed``/``status``). Ids are
derived from the entry's file, section and text, so importing the same workspace twice adds
nothing; curated entries also carry a positional fact key, so an entry edited in place
supersedes its old version.

Export writes ``MEMORY.md``, ``USER.md`` and ``memory/YYYY-MM-DD.md`` from the active
memories, most important first, within OpenClaw's per-file budgets; what does not fit is
named on a pointer line.
"""
from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from memrepo.errors import UsageError
from memrepo.model import Memory, now_iso
from memrepo.store.vault import Vault, atomic_write

FILE_BUDGET = 20000
USER_BUDGET = 4000
IMPORTS_DIR = "memory/imports"   # memory/imports/<assistant>/: what OpenClaw imported from others
_DAILY_RE = re.compile(r"^(\d{4}-\d{2}-\d{2})(?:-(.+))?\.md$")
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
    from memrepo.review.writes import summary_from
    c = entry.comments
    fields: dict[str, Any] = {"id": _derived_id(entry), "layer": layer, "kind": kind, "subject": subject,
                              "summary": summary_from(entry.text), "created": created or now_iso(),
                              "x-openclaw-file": entry.file}
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
    if c.get("memrepo"):
        fields["x-memrepo-origin"] = c["memrepo"]
    if c.get("status") == "superseded":
        fields["x-openclaw-status"] = "superseded"
    if layer != "L1":
        name = entry.file.removeprefix("memory/imports/").removesuffix(".md") if entry.file.startswith(IMPORTS_DIR) \
            else Path(entry.file).stem
        fields["fact"] = f"openclaw.{_slug(name)}.{_slug(entry.section)}.{entry.position}"
    return fields, entry.text + "\n"


def _curated(path: Path, file: str, subject: str = "general") -> Iterator[tuple[dict[str, Any], str]]:
    """MEMORY.md-like entries: L3 for principles, else L2, ``kind`` guessed from the words."""
    for e in entries(path.read_text(encoding="utf-8"), file):
        kind = _guess_kind(e.text)
        yield _record(e, layer="L3" if kind == "principle" else "L2", kind=kind, subject=subject, created=None)


def read_workspace(workspace: Path) -> list[tuple[dict[str, Any], str]]:
    """Every memory of an OpenClaw workspace as (fields, body), oldest daily logs first."""
    root = Path(workspace).expanduser()
    if not root.is_dir():
        raise UsageError(f"{root}: not a directory; give an OpenClaw workspace (it holds MEMORY.md and memory/)")
    out: list[tuple[dict[str, Any], str]] = []
    curated = root / "MEMORY.md" if (root / "MEMORY.md").is_file() else root / "memory.md"
    if curated.is_file():
        out += _curated(curated, "MEMORY.md")
    if (root / "USER.md").is_file():
        for e in entries((root / "USER.md").read_text(encoding="utf-8"), "USER.md"):
            out.append(_record(e, layer="L2", kind="preference", subject="user", created=None))
    daily = sorted(p for p in (root / "memory").glob("*.md") if _DAILY_RE.match(p.name)) if (root / "memory").is_dir() else []
    for path in daily:
        m = _DAILY_RE.match(path.name)
        assert m is not None
        day, tail = m.group(1), m.group(2) or ""
        time = f"{tail[:2]}:{tail[2:4]}:00" if re.fullmatch(r"\d{4}", tail) else "12:00:00"
        created = f"{day}T{time}+00:00" if _day(day) else None
        for e in entries(path.read_text(encoding="utf-8"), f"memory/{path.name}"):
            fields, body = _record(e, layer="L1", kind="event", subject="general", created=created)
            if tail and not re.fullmatch(r"\d{4}", tail):
                fields["session"] = tail
            out.append((fields, body))
    imports = root / IMPORTS_DIR
    for path in sorted(imports.glob("*/**/*.md")) if imports.is_dir() else []:
        rel = path.relative_to(root).as_posix()
        for fields, body in _curated(path, rel):
            out.append(({**fields, "x-openclaw-import": path.relative_to(imports).parts[0]}, body))
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
    entry edited in place supersedes its previous version (``agent``: the default author)."""
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
        memories.append(build(fields, body, author=who, source="import"))
    with vault.lock():
        vault.require_main_checkout()
        catalog = vault.catalog()
        writes, new, replaced, unchanged = [], [], [], 0
        seen: set[str] = set()
        for m in memories:
            origin = m.meta.get("x-memrepo-origin")
            if catalog.with_id(m.id) or m.id in seen or (origin and catalog.with_id(str(origin))):
                unchanged += 1
                continue
            seen.add(m.id)
            old = catalog.active_for(m.meta["subject"], m.meta["fact"]) if m.meta.get("fact") else []
            if old:
                previous = vault.read_at(vault.main_ref, old[0].path)
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


# ------------------------------------------------------------------ export

def _active(vault: Vault) -> list[Memory]:
    from memrepo.store.document import DocumentError, load_bytes
    out = []
    for row in vault.list(status="active"):
        try:
            parsed = load_bytes((vault.root / row["path"]).read_bytes(), row["path"])
        except (OSError, DocumentError):
            continue
        out.append(Memory(parsed.meta, parsed.body, row["path"]))
    return out


def _importance(m: Memory) -> tuple:
    w = m.meta.get("weight")
    return (-(w if isinstance(w, int | float) else 0.5), {"L4": 0, "L3": 1, "L2": 2}.get(m.meta["layer"], 3),
            str(m.meta.get("created", "")), m.id)


def _bullet(m: Memory, extra: str = "") -> str:
    text = (m.body.strip() if m.meta.get("x-openclaw-file") and m.body.strip() else m.meta["summary"]).replace("\n", "\n  ")
    notes = []
    w = m.meta.get("weight")
    if isinstance(w, int | float):
        notes.append(f"<!-- importance: {round(w * 10)} -->")
    if m.meta.get("tags"):
        notes.append(f"<!-- trigger: {', '.join(m.meta['tags'])} -->")
    if m.meta.get("x-openclaw-project"):
        notes.append(f"<!-- project: {m.meta['x-openclaw-project']} -->")
    if extra:
        notes.append(extra)
    notes.append(f"<!-- memrepo: {m.id} -->")
    return f"- {text}" + (" " + " ".join(notes) if notes else "")


def _within(title: str, groups: dict[str, list[str]], budget: int, what: str) -> tuple[str, int]:
    """A file of ``## group`` sections within ``budget`` characters; the rest as a pointer line."""
    text, left = f"# {title}\n", 0
    pointer = "\n- … {n} more {what} in memrepo (not shown within OpenClaw's budget): `memrepo list` / `memrepo search`\n"
    reserve = len(pointer) + 10
    for name, bullets in groups.items():
        head = f"\n## {name}\n" if name else "\n"
        for b in bullets:
            piece = (head if head else "") + b + "\n"
            if len(text) + len(piece) + reserve > budget:
                left += 1
                continue
            text += piece
            head = ""
    if left:
        text += pointer.format(n=left, what=what)
    return text, left


@dataclass(frozen=True)
class ExportResult:
    files: tuple[str, ...]
    written: int
    left_out: int

    def as_dict(self) -> dict[str, Any]:
        return {"files": list(self.files), "written": self.written, "left_out": self.left_out}


EXPORT_FORMATS = ("openclaw", "jsonl")  # memrepo export --to


def export_openclaw(vault: Vault, workspace: Path) -> ExportResult:
    """Write MEMORY.md, USER.md and memory/YYYY-MM-DD.md for an OpenClaw agent from the active memories."""
    root = Path(workspace).expanduser()
    memories = sorted(_active(vault), key=_importance)
    user = [m for m in memories if m.meta["subject"] == "user" and (m.meta["layer"] != "L1" or m.meta["kind"] == "preference")]
    curated = [m for m in memories if m.meta["layer"] != "L1" and m not in user]
    daily = [m for m in memories if m.meta["layer"] == "L1" and m not in user]
    files, left = [], 0
    groups: dict[str, list[str]] = {}
    for m in curated:
        groups.setdefault(str(m.meta.get("x-openclaw-section") or m.meta["kind"].capitalize()), []).append(_bullet(m))
    text, n = _within("Memory", groups, FILE_BUDGET, "memories")
    atomic_write(root / "MEMORY.md", text.encode("utf-8"))
    files.append("MEMORY.md")
    left += n
    ugroups: dict[str, list[str]] = {}
    for m in user:
        observed = f"<!-- observed: {str(m.meta.get('created', ''))[:10]} | status: active -->"
        ugroups.setdefault(str(m.meta.get("x-openclaw-section") or "Preferences"), []).append(_bullet(m, observed))
    text, n = _within("User", ugroups, USER_BUDGET, "user directives")
    atomic_write(root / "USER.md", text.encode("utf-8"))
    files.append("USER.md")
    left += n
    by_file: dict[str, list[Memory]] = {}
    for m in sorted(daily, key=lambda m: str(m.meta.get("created", ""))):
        origin = str(m.meta.get("x-openclaw-file") or "")
        name = origin if _DAILY_RE.match(origin.removeprefix("memory/")) else f"memory/{str(m.meta.get('created', ''))[:10]}.md"
        by_file.setdefault(name, []).append(m)
    for name, items in sorted(by_file.items()):
        sections: dict[str, list[str]] = {}
        for m in sorted(items, key=_importance):
            section = m.meta.get("x-openclaw-section") or ("" if m.meta.get("x-openclaw-file") else "Log")
            sections.setdefault(str(section), []).append(_bullet(m))
        text, n = _within(Path(name).stem[:10], sections, FILE_BUDGET, "entries of this day")
        atomic_write(root / name, text.encode("utf-8"))
        files.append(name)
        left += n
    return ExportResult(tuple(files), len(memories) - left, left)


def export_jsonl(vault: Vault) -> Iterator[str]:
    """Every memory on main as a line of the import format (front-matter fields plus ``body``)."""
    from memrepo.store.document import DocumentError, load_bytes
    for row in vault.list():
        try:
            parsed = load_bytes((vault.root / row["path"]).read_bytes(), row["path"])
        except (OSError, DocumentError):
            continue
        yield json.dumps({**parsed.meta, "body": parsed.body}, ensure_ascii=False)


