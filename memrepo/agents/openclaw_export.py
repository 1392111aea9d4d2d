"""OpenClaw workspaces out: ``MEMORY.md``, ``USER.md`` and ``memory/YYYY-MM-DD.md`` from the
active memories (the reading side and the format are in :mod:`memrepo.agents.openclaw`).

Each file stays within OpenClaw's budget: the most important entries are kept, shown in their
workspace order (``x-openclaw-position``; memrepo's own memories after, oldest first), each
with its memrepo id so a re-import finds the same memory; what does not fit is named on a
pointer line. A daily note gets back the front matter it came with, and a USER.md directive
its ``observed`` date only when one is known. An export into an existing workspace checks
every target before anything is written (a symlink or a folder in the way stops it whole) and
keeps each file it replaces under ``.memrepo-export-backup/<time>/``.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from memrepo.agents.openclaw import DAILY_RE, FILE_BUDGET, USER_BUDGET, front_matter, tags_of
from memrepo.errors import Conflict, Problem
from memrepo.model import Memory
from memrepo.store.vault import Vault, atomic_write


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


def _place(m: Memory) -> tuple:
    """Where an entry stands in its workspace file: its position there, then time, then id
    (memrepo's own memories, which have no position, follow in the order they were made)."""
    pos = m.meta.get("x-openclaw-position")
    return (0, pos, "", "") if isinstance(pos, int) and not isinstance(pos, bool) else \
        (1, 0, str(m.meta.get("created", "")), m.id)


def _file_tags(m: Memory) -> set[str]:
    raw = m.meta.get("x-openclaw-front-matter")
    return set(tags_of(front_matter(f"---\n{raw}---\n", "")[1])) if isinstance(raw, str) else set()


def _bullet(m: Memory, extra: str = "") -> str:
    text = (m.body.strip() if m.meta.get("x-openclaw-file") and m.body.strip() else m.meta["summary"]).replace("\n", "\n  ")
    notes = []
    w = m.meta.get("weight")
    if isinstance(w, int | float):
        notes.append(f"<!-- importance: {round(w * 10)} -->")
    tags = [t for t in m.meta.get("tags") or () if t not in _file_tags(m)]
    if tags:
        notes.append(f"<!-- trigger: {', '.join(tags)} -->")
    if m.meta.get("x-openclaw-project"):
        notes.append(f"<!-- project: {m.meta['x-openclaw-project']} -->")
    if extra:
        notes.append(extra)
    notes.append(f"<!-- memrepo: {m.id} -->")
    return f"- {text}" + (" " + " ".join(notes) if notes else "")


_POINTER = "\n- … {n} more {what} in memrepo (not shown within OpenClaw's budget): `memrepo list` / `memrepo search`\n"


def _within(title: str, groups: dict[str, list[tuple[Memory, str]]], budget: int, what: str,
            head: str = "") -> tuple[str, int]:
    """A file of ``## group`` sections within ``budget`` characters: the most important entries
    are kept, shown in their workspace order; the rest are counted on a pointer line."""
    text = (f"---\n{head}---\n" if head else "") + f"# {title}\n"
    reserve = len(_POINTER) + 10
    used, kept, started = len(text), set(), set()
    ranked = sorted(((m, b, name) for name, items in groups.items() for m, b in items), key=lambda t: _importance(t[0]))
    for m, bullet, name in ranked:
        cost = len(bullet) + 1 + (0 if name in started else len(f"\n## {name}\n" if name else "\n"))
        if used + cost + reserve > budget:
            continue
        used += cost
        kept.add(id(m))
        started.add(name)
    order = sorted(groups, key=lambda name: min(_place(m) for m, _ in groups[name]))
    for name in order:
        items = sorted((t for t in groups[name] if id(t[0]) in kept), key=lambda t: _place(t[0]))
        if items:
            text += (f"\n## {name}\n" if name else "\n") + "".join(b + "\n" for _, b in items)
    left = sum(len(items) for items in groups.values()) - len(kept)
    if left:
        text += _POINTER.format(n=left, what=what)
    return text, left


@dataclass(frozen=True)
class ExportResult:
    files: tuple[str, ...]
    written: int
    left_out: int
    backup: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"files": list(self.files), "written": self.written, "left_out": self.left_out, "backup": self.backup}


EXPORT_FORMATS = ("openclaw", "jsonl")  # memrepo export --to
BACKUP_DIR = ".memrepo-export-backup"


def _workspace_files(vault: Vault) -> tuple[dict[str, bytes], int, int]:
    """Every file of the workspace export as (path -> bytes), the memories shown, those left out."""
    memories = sorted(_active(vault), key=_importance)
    user = [m for m in memories if m.meta["subject"] == "user" and (m.meta["layer"] != "L1" or m.meta["kind"] == "preference")]
    curated = [m for m in memories if m.meta["layer"] != "L1" and m not in user]
    daily = [m for m in memories if m.meta["layer"] == "L1" and m not in user]
    files: dict[str, bytes] = {}
    left = 0
    groups: dict[str, list[tuple[Memory, str]]] = {}
    for m in curated:
        groups.setdefault(str(m.meta.get("x-openclaw-section") or m.meta["kind"].capitalize()), []).append((m, _bullet(m)))
    text, n = _within("Memory", groups, FILE_BUDGET, "memories")
    files["MEMORY.md"], left = text.encode("utf-8"), left + n
    ugroups: dict[str, list[tuple[Memory, str]]] = {}
    for m in user:
        ugroups.setdefault(str(m.meta.get("x-openclaw-section") or "Preferences"), []).append((m, _bullet(m, _observed(m))))
    text, n = _within("User", ugroups, USER_BUDGET, "user directives")
    files["USER.md"], left = text.encode("utf-8"), left + n
    by_file: dict[str, list[Memory]] = {}
    for m in daily:
        origin = str(m.meta.get("x-openclaw-file") or "")
        name = origin if DAILY_RE.match(origin.removeprefix("memory/")) else f"memory/{str(m.meta.get('created', ''))[:10]}.md"
        by_file.setdefault(name, []).append(m)
    for name, items in sorted(by_file.items()):
        sections: dict[str, list[tuple[Memory, str]]] = {}
        for m in items:
            section = m.meta.get("x-openclaw-section") or ("" if m.meta.get("x-openclaw-file") else "Log")
            sections.setdefault(str(section), []).append((m, _bullet(m)))
        head = next((str(m.meta["x-openclaw-front-matter"]) for m in sorted(items, key=_place)
                     if isinstance(m.meta.get("x-openclaw-front-matter"), str)), "")
        text, n = _within(Path(name).stem[:10], sections, FILE_BUDGET, "entries of this day", head)
        files[name], left = text.encode("utf-8"), left + n
    return files, len(memories) - left, left


def _observed(m: Memory) -> str:
    """USER.md's ``observed`` note: the date the workspace gave, or for memrepo's own memories
    the day they were made; an imported directive without a date gets none (no invented date)."""
    if m.meta.get("x-openclaw-observed"):
        return f"<!-- observed: {m.meta['x-openclaw-observed']} | status: active -->"
    if m.meta.get("x-openclaw-file"):
        return ""
    return f"<!-- observed: {str(m.meta.get('created', ''))[:10]} | status: active -->"


def _check_targets(root: Path, paths: list[str]) -> None:
    """Every problem that would stop the export part-way, found before anything is written."""
    problems = []
    if root.exists() and not root.is_dir():
        problems.append(Problem(str(root), "(file)", "is a file, not a workspace folder"))
    for rel in paths:
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            here = root / "/".join(parts[:i])
            if here.is_symlink():
                problems.append(Problem("/".join(parts[:i]), "(file)", "is a symlink; memrepo never writes through "
                                        "links (the file would land outside the workspace): replace it with a real file"))
                break
            if i < len(parts) and here.exists() and not here.is_dir():
                problems.append(Problem("/".join(parts[:i]), "(file)", "is a file where a folder is needed"))
                break
            if i == len(parts) and here.is_dir():
                problems.append(Problem(rel, "(file)", "is a folder where the export writes a file"))
    if problems:
        raise Conflict("\n".join(map(str, sorted(set(problems)))) + "\nnothing was written to the workspace")


def export_openclaw(vault: Vault, workspace: Path) -> ExportResult:
    """Write MEMORY.md, USER.md and memory/YYYY-MM-DD.md for an OpenClaw agent from the active
    memories: all targets checked first, the files replaced kept under ``.memrepo-export-backup/``."""
    root = Path(workspace).expanduser()
    files, written, left = _workspace_files(vault)
    _check_targets(root, list(files))
    existed = {rel: (root / rel).read_bytes() for rel in files if (root / rel).is_file()}
    replaced = {rel: data for rel, data in existed.items() if data != files[rel]}
    backup = None
    if replaced:
        stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        backup = root / BACKUP_DIR / stamp
        _check_targets(root, [f"{BACKUP_DIR}/{stamp}/{rel}" for rel in replaced])
        for rel, data in replaced.items():
            atomic_write(backup / rel, data)
    done: list[str] = []
    try:
        for rel, data in files.items():
            atomic_write(root / rel, data)
            done.append(rel)
    except BaseException:
        for rel in done:  # put back what this export replaced; remove what it created
            if rel in existed:
                atomic_write(root / rel, existed[rel])
            else:
                (root / rel).unlink(missing_ok=True)
        raise
    return ExportResult(tuple(files), written, left, str(backup) if backup else None)


def export_jsonl(vault: Vault) -> Iterator[str]:
    """Every memory on main as a line of the import format (front-matter fields plus ``body``)."""
    from memrepo.store.document import DocumentError, load_bytes
    for row in vault.list():
        try:
            parsed = load_bytes((vault.root / row["path"]).read_bytes(), row["path"])
        except (OSError, DocumentError):
            continue
        yield json.dumps({**parsed.meta, "body": parsed.body}, ensure_ascii=False)


