"""A vector build's input on disk, so that a build in another process reads no memory file.

The process that has just read the memory files (an import or a reindex building the keyword
index) writes what the vectors need of them — each memory's id, the text its vector encodes and
its facets — to ``build-plan.jsonl`` beside the vectors, then starts the build in the
background (:mod:`memrepo.retrieval.vectors_build`), which reads this one file instead of
every memory file again (≈ 0.5 ms of CPU a file: ~50 s at 100,000). A plan also lets a build
that was killed resume without reading them: it stays until a build of it is done.

A plan is made on one state of the vectors (:meth:`~memrepo.retrieval.vectors.VectorStore.state`)
and is of use on that state only: ``rebuild`` (every memory: a first build, a reindex) or
``apply`` (the memories changed since: a bulk import into a vault that has vectors). Layout:
a header line ``{"plan", "kind", "model", "commit", "dirty", "base", "items", "deletes"}``,
then one line per memory ``{"id", "text", facets...}``. Written whole (temp file and rename);
a file that does not read back whole (another version, a disk error) is no plan.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from memrepo.retrieval.filters import Facets
from memrepo.retrieval.vectors import Item
from memrepo.store.files import atomic_file

FILE = "build-plan.jsonl"
VERSION = 1


@dataclass(frozen=True)
class Plan:
    """A build to run: ``kind`` "rebuild" or "apply", for ``model``, bringing the vectors from
    ``base`` (their state when planned, None: no vectors) to ``commit`` and the uncommitted
    files ``dirty``; ``items``: every memory (rebuild) or the changed ones (apply)."""
    kind: str
    model: str
    commit: str | None
    dirty: tuple[str, ...]
    base: tuple | None
    items: tuple[Item, ...]
    deletes: tuple[str, ...] = ()

    def write(self, folder: Path) -> None:
        """Write the plan whole, a line at a time (100,000 memories' texts are tens of MB:
        not joined in memory first)."""
        header = {"plan": VERSION, "kind": self.kind, "model": self.model, "commit": self.commit,
                  "dirty": list(self.dirty), "base": None if self.base is None else list(self.base),
                  "items": len(self.items), "deletes": list(self.deletes)}
        with atomic_file(Path(folder) / FILE) as fh:
            fh.write(_line(header))
            for i in self.items:
                fh.write(_line({"id": i.id, "text": i.text, **i.facets.as_json()}))


def _line(data: dict) -> bytes:
    return (json.dumps(data, ensure_ascii=False) + "\n").encode("utf-8", "surrogatepass")


def read(folder: Path) -> Plan | None:
    """The plan in ``folder`` (None: none, or not one this memrepo wrote whole)."""
    try:
        with open(Path(folder) / FILE, encoding="utf-8", errors="surrogatepass") as fh:
            head = json.loads(fh.readline())
            if not isinstance(head, dict) or head.get("plan") != VERSION or head.get("kind") not in ("rebuild", "apply"):
                return None
            items = tuple(Item(str(r["id"]), str(r["text"]), Facets.from_json(r)) for r in map(json.loads, fh))
        if len(items) != head["items"]:
            return None
        base = head["base"]
        return Plan(head["kind"], str(head["model"]), head["commit"], tuple(head["dirty"]),
                    None if base is None else _state(base), items, tuple(head["deletes"]))
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError):
        return None


def _state(base: list) -> tuple:
    """A state as :meth:`~memrepo.retrieval.vectors.VectorStore.state` gives it (JSON has no tuples)."""
    snapshot, commit, dirty = base
    return snapshot, commit, dirty


def remove(folder: Path) -> None:
    (Path(folder) / FILE).unlink(missing_ok=True)
