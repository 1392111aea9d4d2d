"""Markdown notes from other tools (owner of python-frontmatter), for ``memrepo import DIR``.

Notes written by other memory stores and editors (basic-memory, Obsidian, a folder of
``.md`` files) have front matter in their own shape. python-frontmatter's lenient reader is
right for that: these files are read once and turned into records, which then pass through
memrepo's own strict checks like any import line. memrepo's stored files never go through it.
"""
from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any, Iterator

import frontmatter

from memrepo.model import FIELDS

# Common field names in other tools, mapped to memrepo's.
_ALIASES = {"title": "summary", "date": "created", "created_at": "created", "modified": "updated",
            "updated_at": "updated", "type": "x-original-type", "permalink": "x-permalink"}
_KNOWN = {f.name for f in FIELDS if f.foreign}  # the rest is memrepo's own bookkeeping: kept as x-<name>


def note_paths(root: Path) -> list[Path]:
    """Every ``.md`` file under ``root`` (or ``root`` itself), sorted, hidden folders skipped."""
    if root.is_file():
        return [root]
    return sorted(p for p in root.rglob("*.md")
                  if not any(part.startswith(".") for part in p.relative_to(root).parts))


def read_notes(root: Path) -> Iterator[tuple[str, dict[str, Any] | None, str]]:
    """(where, import record or None, problem) for each note under ``root``."""
    for path in note_paths(root):
        where = str(path)
        try:
            post = frontmatter.load(path)
        except Exception as e:  # a foreign file may be anything: report it, keep going
            yield where, None, f"cannot read front matter: {e}"
            continue
        yield where, _record(post.metadata, post.content, path), ""


def _record(meta: dict[str, Any], body: str, path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in meta.items():
        key = _ALIASES.get(str(key), str(key))
        if isinstance(value, dt.date | dt.datetime):
            value = value.isoformat() if isinstance(value, dt.datetime) else f"{value.isoformat()}T00:00:00+00:00"
            if "T" in value and value[-6] not in "+-" and not value.endswith("Z"):
                value += "+00:00"
        if key in _KNOWN or key.startswith("x-"):
            out[key] = value
        else:
            out[f"x-{key}"] = value if isinstance(value, str | int | float | bool | list) else str(value)
    if isinstance(out.get("tags"), str):
        out["tags"] = [t.strip() for t in out["tags"].replace(",", " ").split() if t.strip()]
    out.setdefault("summary", path.stem.replace("-", " ").replace("_", " "))
    out["body"] = body
    return out
