"""Memories people already have elsewhere, imported by a person in one commit each, re-runnable
without duplicates (a stable id per item; an item whose text changed is updated in place, its
earlier text kept in git):

* ``import --from claude-code [DIR]``: a project's ``CLAUDE.md``, ``.claude/CLAUDE.md`` and
  ``CLAUDE.local.md`` (one memory per section), ``.claude/rules/**.md`` (one per file), and
  Claude Code's auto memory for the project (``~/.claude/projects/<project>/memory/``: one memory
  per topic file, its ``type`` and ``modified`` kept; the ``MEMORY.md`` index is not a memory
  itself, its lines that point nowhere are). DIR may also be an auto-memory folder itself.
* ``import --from mcp-memory FILE``: the MCP reference memory server's ``memory.jsonl``
  knowledge graph: each entity a memory (its observations the body's lines), each relation a
  body line and a link to the other entity's memory.

Files are read as a workspace is (:mod:`memrepo.agents.openclaw`): never through a symlink,
bytes that are not UTF-8 named by file and line.
"""
from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memrepo.agents.openclaw import front_matter, read_text
from memrepo.errors import InvalidData, InvalidMemory, NotFound, Problem, UsageError
from memrepo.model import Memory, normalise_timestamp, now_iso, parse_time
from memrepo.store.vault import Vault

FORMATS = ("openclaw", "claude-code", "mcp-memory")  # memrepo import --from
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_LINK = re.compile(r"\]\(([^)#\s]+\.md)\)")
# Claude Code's auto-memory types -> (subject, kind, layer); None: the project is the subject.
AUTO_TYPES = {"user": ("user", "preference", "L2"), "feedback": ("user", "preference", "L2"),
              "project": (None, "state", "L2"), "reference": (None, "knowledge", "L2")}


@dataclass(frozen=True)
class Item:
    """One memory to import: a stable id, its front matter and body."""

    id: str
    fields: dict[str, Any]
    body: str


@dataclass(frozen=True)
class ImportResult:
    imported: tuple[str, ...]
    updated: tuple[str, ...]
    unchanged: int
    commit: str | None
    skipped: tuple[Problem, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {"imported": len(self.imported), "ids": list(self.imported), "updated": list(self.updated),
                "unchanged": self.unchanged, "commit": self.commit, "skipped": [str(p) for p in self.skipped]}


def _stable_id(prefix: str, *parts: str) -> str:
    import hashlib  # here: every command line imports this module through memrepo.api
    return f"{prefix}_{hashlib.sha256(chr(0).join(parts).encode('utf-8')).hexdigest()[:16]}"


def _slug(text: str) -> str:
    return re.sub(r"[^\w.-]+", "-", text.strip().lower()).strip("-")[:60] or "top"


# ------------------------------------------------------------------ Claude Code

def _sections(text: str) -> list[tuple[str, str, tuple[str, ...]]]:
    """(heading, text, the headings it sits under) of each section of a markdown file; text
    before the first heading is the section "" (a file's ``# Title`` line alone is not a section)."""
    found: list[tuple[str, list[str], tuple[str, ...]]] = [("", [], ())]
    open_: list[tuple[int, str]] = []    # (level, heading) of the headings above the current line
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            level, title = len(heading.group(1)), heading.group(2).strip()
            open_ = [(n, h) for n, h in open_ if n < level]
            found.append((title, [], tuple(h for _, h in open_)))
            open_.append((level, title))
        else:
            found[-1][1].append(line)
    return [(h, "\n".join(lines).strip(), above) for h, lines, above in found if "\n".join(lines).strip()]


def _keyed(rel: str, sections: list[tuple[str, str, tuple[str, ...]]]) -> list[tuple[str, str, str, str]]:
    """(id, fact, summary, body) of each section. A heading found once keeps the id of its
    file and heading (so re-imports match what was imported before); a repeated one (``###
    Notes`` under two parents) is told apart by the headings above it, and any fact two
    headings share once slugged (``Build & Test``, ``Build Test``) gets a number, so no section
    is dropped or collides with another."""
    counts = Counter(h for h, _, _ in sections)
    ids: set[str] = set()
    facts: set[str] = set()
    out = []
    for heading, body, above in sections:
        repeated = counts[heading] > 1
        key = (rel, heading, *above) if repeated else (rel, heading)
        memory_id, n = _stable_id("cc", *key), 1
        while memory_id in ids:
            n += 1
            memory_id = _stable_id("cc", *key, str(n))
        slug = ".".join(_slug(h) for h in (above[-1:] if repeated else ()) + (heading,))
        fact, n = f"claude-code.{_slug(rel)}.{slug}", 1
        while fact in facts:
            n += 1
            fact = f"claude-code.{_slug(rel)}.{slug}-{n}"
        ids.add(memory_id)
        facts.add(fact)
        summary = (f"{above[-1]}: {heading}" if repeated and above else heading) or body.splitlines()[0]
        out.append((memory_id, fact, summary, body))
    return out


def project_memory_dir(project: Path) -> Path:
    """Claude Code's auto-memory folder for ``project``: ``<config>/projects/<path with every
    character but letters and digits as '-'>/memory``."""
    config = Path(os.environ.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude").expanduser()
    return config / "projects" / re.sub(r"[^A-Za-z0-9]", "-", str(project.resolve())) / "memory"


def _instruction_items(root: Path, project: str) -> list[Item]:
    items = []
    for rel, subject, kind, layer in ((".claude/CLAUDE.md", project, "policy", "L3"), ("CLAUDE.md", project, "policy", "L3"),
                                      ("CLAUDE.local.md", "user", "preference", "L2")):
        if not (root / rel).is_file() and not (root / rel).is_symlink():
            continue
        _raw, _meta, text = front_matter(read_text(root, rel), rel)
        for memory_id, fact, summary, body in _keyed(rel, _sections(text)):
            items.append(Item(memory_id, {
                "layer": layer, "kind": kind, "subject": subject, "summary": summary[:200],
                "fact": fact, "x-claude-code-file": rel}, body + "\n"))
    rules = root / ".claude" / "rules"
    if rules.is_dir() and not rules.is_symlink():
        for path in sorted(rules.rglob("*.md")):
            rel = path.relative_to(root).as_posix()
            _raw, meta, text = front_matter(read_text(root, rel), rel)
            if not text.strip():
                continue
            first = next((h for h, _, _ in _sections(text) if h), "") or path.stem.replace("-", " ").replace("_", " ")
            fields = {"layer": "L3", "kind": "policy", "subject": project, "summary": first[:200],
                      "fact": f"claude-code.rules.{_slug(rel)}", "x-claude-code-file": rel}
            if isinstance(meta.get("paths"), list | str):
                fields["x-claude-code-paths"] = ", ".join(meta["paths"]) if isinstance(meta["paths"], list) else meta["paths"]
            items.append(Item(_stable_id("cc", rel), fields, text.strip() + "\n"))
    return items


def _auto_memory_items(folder: Path, project: str) -> list[Item]:
    """Topic files of an auto-memory folder (and the index lines that point at no topic file)."""
    items, topics = [], set()
    for path in sorted(p for p in folder.iterdir() if p.suffix == ".md" and p.name != "MEMORY.md"):
        rel = path.name
        _raw, meta, text = front_matter(read_text(folder, rel), f"auto-memory/{rel}")
        if not text.strip():
            continue
        topics.add(rel)
        subject, kind, layer = AUTO_TYPES.get(str(meta.get("type")), (None, "knowledge", "L2"))
        summary = str(meta.get("description") or meta.get("name") or text.strip().splitlines()[0]).strip()
        fields: dict[str, Any] = {"layer": layer, "kind": kind, "subject": subject or project,
                                  "summary": " ".join(summary.split())[:200], "fact": f"claude-code.memory.{_slug(path.stem)}",
                                  "x-claude-code-file": f"auto-memory/{rel}"}
        if meta.get("type"):
            fields["x-claude-code-type"] = str(meta["type"])
        when = _when(meta.get("modified"))
        if when:
            fields["created"] = fields["updated"] = when
        items.append(Item(_stable_id("cc", "auto-memory", rel), fields, text.strip() + "\n"))
    if (folder / "MEMORY.md").is_file() or (folder / "MEMORY.md").is_symlink():
        _raw, _meta, index = front_matter(read_text(folder, "MEMORY.md"), "auto-memory/MEMORY.md")
        for line in index.splitlines():
            entry = line.strip().lstrip("-*+ ").strip()
            if not entry or _HEADING.match(line) or any(t in topics for t in _LINK.findall(line)):
                continue
            items.append(Item(_stable_id("cc", "auto-memory/MEMORY.md", entry), {
                "layer": "L2", "kind": "knowledge", "subject": project, "summary": entry[:200],
                "x-claude-code-file": "auto-memory/MEMORY.md"}, entry + "\n"))
    return items


def _when(value: Any) -> str | None:
    when = parse_time(normalise_timestamp(value), naive_as_utc=True) if value else None
    return when.replace(microsecond=0).isoformat() if when else None


def claude_code_items(path: Path | None = None) -> list[Item]:
    """Every memory ``import --from claude-code`` reads from ``path`` (default: the current folder)."""
    root = Path(path or Path.cwd()).expanduser()
    if not root.is_dir():
        raise UsageError(f"{root}: not a folder; give a project folder (with CLAUDE.md) or an auto-memory folder")
    auto_only = (root / "MEMORY.md").exists() and not (root / "CLAUDE.md").exists()
    if auto_only:  # ~/.claude/projects/-home-you-proj/memory: the project is the last part of its folder name
        return _auto_memory_items(root, root.resolve().parent.name.rsplit("-", 1)[-1] or "project")
    project = root.resolve().name
    items = _instruction_items(root, project)
    memory = project_memory_dir(root)
    if memory.is_dir() and not memory.is_symlink():
        items += _auto_memory_items(memory, project)
    if not items:
        raise NotFound(f"nothing to import in {root}: no CLAUDE.md, .claude/CLAUDE.md, CLAUDE.local.md, "
                       f".claude/rules/ or auto memory ({memory})")
    return items


# ------------------------------------------------------------------ MCP memory server

def mcp_memory_items(path: Path) -> list[Item]:
    """The entities of a ``memory.jsonl`` knowledge graph, each with its relations."""
    path = Path(path).expanduser()
    text = read_text(path.parent, path.name)
    entities: dict[str, dict[str, Any]] = {}
    relations: list[tuple[str, str, str]] = []
    problems = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            problems.append(Problem(f"{path}:line {n}", "(line)", f"not JSON ({e.msg})"))
            continue
        kind = record.get("type") if isinstance(record, dict) else None
        if kind == "entity" and isinstance(record.get("name"), str) and record["name"].strip():
            obs = [o for o in record.get("observations") or [] if isinstance(o, str) and o.strip()]
            known = entities.setdefault(record["name"], {"type": record.get("entityType"), "observations": []})
            known["observations"] += [o for o in obs if o not in known["observations"]]
        elif kind == "relation" and all(isinstance(record.get(k), str) and record[k] for k in ("from", "to", "relationType")):
            relations.append((record["from"], record["relationType"], record["to"]))
        else:
            problems.append(Problem(f"{path}:line {n}", "type", "neither an entity (name, entityType, observations) "
                                                                 "nor a relation (from, to, relationType)"))
    if problems:
        raise InvalidData(problems, "nothing was imported; fix these lines of the knowledge graph")
    ids = {name: _stable_id("mcpm", name) for name in entities}
    items = []
    for name, entity in entities.items():
        lines = [f"- {o}" for o in entity["observations"]]
        mine = [(r, to) for frm, r, to in relations if frm == name]
        lines += [f"- {r} → {to}" for r, to in mine]
        lines += [f"- {r} ← {frm}" for frm, r, to in relations if to == name]
        kind = f" ({entity['type']})" if isinstance(entity["type"], str) and entity["type"] else ""
        fields = {"layer": "L2", "kind": "knowledge", "subject": name[:200], "fact": "mcp-memory.entity",
                  "summary": f"{name}{kind}"[:200], "x-mcp-memory-entity-type": entity["type"] or None,
                  "links": sorted({ids[to] for _r, to in mine if to in ids and to != name}) or None}
        items.append(Item(ids[name], {k: v for k, v in fields.items() if v is not None}, "\n".join(lines) + "\n"))
    return items


# ------------------------------------------------------------------ writing

def import_items(vault: Vault, items: list[Item], *, origin: str, where: str, author: str | None = None,
                 skip_invalid: bool = False) -> ImportResult:
    """One commit: new items written, items whose text changed updated in place, the rest skipped."""
    from memrepo.review.writes import build, checked, default_author
    who = author or default_author(vault)
    problems: list[Problem] = []
    with vault.lock():
        vault.require_main_checkout()
        catalog = vault.catalog()
        writes, gone, new, updated, unchanged = [], [], [], [], 0
        for item in items:
            rows = catalog.with_id(item.id)
            if rows:
                old = vault.read_at(vault.main_ref, rows[0].path)
                changed = {k: v for k, v in item.fields.items() if k not in ("created", "updated") and old.meta.get(k) != v}
                if old.body == item.body and not changed:
                    unchanged += 1
                    continue
                memory = Memory(old.evolve(**changed, updated=now_iso()).meta, item.body)
                if memory.path != old.path:  # a new layer: the file moves
                    gone.append(old)
                updated.append(item.id)
            else:
                memory = build({"id": item.id, **item.fields, "source": "import", "risk": "low",
                                "risk_reason": f"import from {origin} by a person"}, item.body, author=who, source="import")
                new.append(item.id)
            found = checked(memory)[0]
            if found:
                problems += found
                (updated if rows else new).pop()
                continue
            writes.append(memory)
        if problems and not skip_invalid:
            raise InvalidMemory(problems, "nothing was imported; fix these or pass --skip-invalid")
        if not writes:
            return ImportResult((), (), unchanged, None, tuple(problems))
        from memrepo.store.checks import Row
        vault.check_new(writes, deleted=[Row.of(m) for m in gone])
        message = (f"memrepo: import {len(new)} new, {len(updated)} updated memories from {origin} ({where})\n\n"
                   f"Memrepo-Action: import\nMemrepo-Count: {len(writes)}\nMemrepo-Origin: {origin}\n")
        from memrepo.review.writes import import_record
        commit = vault.commit(writes=writes, deletes=[m.path for m in gone], message=message,
                              also=[import_record()]).commit  # the audit knows an import by its record
    return ImportResult(tuple(new), tuple(updated), unchanged, commit, tuple(problems))


def import_claude_code(vault: Vault, path: Path | None = None, *, author: str | None = None,
                       skip_invalid: bool = False) -> ImportResult:
    """``import --from claude-code``: CLAUDE.md sections, rules and auto memory of a project."""
    root = Path(path or Path.cwd())
    return import_items(vault, claude_code_items(root), origin="claude-code", where=root.name or str(root),
                        author=author, skip_invalid=skip_invalid)


def import_mcp_memory(vault: Vault, path: Path, *, author: str | None = None, skip_invalid: bool = False) -> ImportResult:
    """``import --from mcp-memory``: the MCP memory server's knowledge graph (memory.jsonl)."""
    return import_items(vault, mcp_memory_items(path), origin="mcp-memory", where=Path(path).name,
                        author=author, skip_invalid=skip_invalid)
