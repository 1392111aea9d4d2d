"""Where a vault's search stands now: the keyword index and the semantic vectors (``memrepo status``).

Read-only and quick: nothing is synced, built or started, so it can be asked while an import's
vectors are building in the background — "building: 51,200 of 100,000 memories, about 4 min
left" (:mod:`memrepo.retrieval.vector_progress`), "interrupted" (a build was killed: the next
search or ``memrepo reindex --wait`` resumes it, from the vectors it kept), "hybrid" (built;
``current`` says whether they reflect HEAD or the next search catches up), "none" (not built
yet: the next search builds them), "off" or "unavailable".
"""
from __future__ import annotations

from typing import Any

from memrepo.retrieval import semantic, vector_progress
from memrepo.store import git
from memrepo.store.vault import Vault


def status(vault: Vault) -> dict[str, Any]:
    """The vault's search state as data: ``{"vault", "head", "index", "semantic", "vectors"}``
    (``index``: its commit, whether that is HEAD, its memories; ``vectors``: see
    :func:`vector_status`)."""
    head = git.resolve(vault.root, "HEAD")
    state, vectors = vector_status(vault, head)
    return {"vault": str(vault.root), "head": head, "index": index_status(vault, head),
            "semantic": state, "vectors": vectors}


def index_status(vault: Vault, head: str | None) -> dict[str, Any]:
    """The keyword index: the commit it reflects (None: none yet), whether that is HEAD, and
    how many memories it holds (None: none, or unreadable: the next search rebuilds it)."""
    from memrepo.retrieval.index import IndexError_, MemoryIndex
    index = MemoryIndex(vault.index_dir)
    commit = index.indexed_commit() if index.exists() else None
    try:
        count = index.doc_count() if commit is not None else None
    except IndexError_:
        count = None
    return {"commit": commit, "current": commit is not None and commit == head, "memories": count}


def vector_status(vault: Vault, head: str | None) -> tuple[str, dict[str, Any]]:
    """(state, details): the state as the module says; details hold the build's progress
    (building, interrupted: ``ready`` of ``total`` memories, ``eta_s``, ...) or the built
    vectors' ``count``, ``commit`` and ``current``."""
    state = semantic.vector_state(vault)
    if state == "unavailable":
        return state, {"reason": semantic.unavailable_notice()}
    if state == "off":
        return state, {}
    failed = semantic.model_failure(vault)
    if failed:
        return "unavailable", {"reason": failed}
    store = semantic.vector_store(vault)
    progress = vector_progress.read(store.dir)
    shown = progress.as_dict() if progress is not None else {}
    if store.building() or semantic.build_starting(vault):
        return "building", shown if progress is not None and progress.state != "done" else {}
    if progress is not None and progress.state != "done":
        return "interrupted", shown
    if not store.ready():
        return "none", {}
    from memrepo.retrieval.vectors import VectorsCorrupt
    try:
        count: int | None = store.load().count()
    except VectorsCorrupt:
        count = None
    commit = store.commit()
    return "hybrid", {"count": count, "commit": commit, "current": commit == head,
                      "last_build": shown or None}
