"""Search service: the index and the vectors caught up, then asked.

The rooms behind it: :mod:`memrepo.retrieval.sync` keeps the keyword index at HEAD and the
working tree (:mod:`memrepo.retrieval.scan` looks at the tree), :mod:`memrepo.retrieval.semantic`
does the same for the vectors of the hybrid ranking, :mod:`memrepo.retrieval.queries` checks a
query and shapes a result, and :mod:`memrepo.retrieval.index` ranks. This module is what
:mod:`memrepo.api` names: search, reindex, catch up, mark a memory useful.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from memrepo.errors import UsageError
from memrepo.retrieval.queries import make_query, read_queries, result_dict
from memrepo.retrieval.semantic import (
    BUSY,
    INLINE_BUILD_MAX,
    SEMANTIC_ENV,
    build_in_background,
    build_progress,
    build_vectors,
    building_notice,
    catch_up_vectors,
    encode_ahead,
    memory_count,
    model_unavailable,
    note_model_failure,
    rebuild_vectors,
    semantic_sync,
    start_background_build,
    unavailable,
    unavailable_notice,
    vector_state,
    vector_store,
)
from memrepo.retrieval.sync import SyncReport, rebuild, sync
from memrepo.retrieval.warm import inode, stats, warm
from memrepo.store.vault import Vault

# names callers find here (the API, the CLI, the MCP server), whichever room owns them
__all__ = ["SEMANTIC_ENV", "building_notice", "catch_up", "make_query", "mark_useful", "read_queries", "rebuild", "reindex",
           "release", "result_dict", "search", "search_many", "sync", "unavailable_notice", "vector_state", "warm_up"]


def search(vault: Vault, text: str, *, session: str | None = None, log_recalls: bool = False, **filters: Any):
    """One query (``filters``: :data:`memrepo.retrieval.queries.QUERY_FILTERS`); (result, sync report)."""
    results, report = search_many(vault, [make_query(text, **filters)], session=session, log_recalls=log_recalls)
    return results[0], report


def search_many(vault: Vault, queries: list, *, session: str | None = None, log_recalls: bool = False) -> tuple[list, SyncReport]:
    """Run queries after a sync; optionally log the results as recalls of ``session``."""
    from memrepo.retrieval.index import IndexCorrupt
    if log_recalls and not session:
        raise UsageError("--log records recalls of a session: give --session ID too")
    ahead = encode_ahead(vault, queries)
    report = sync(vault)
    state, semantic, notice = semantic_sync(vault)
    if notice:
        report = SyncReport(report.rebuilt, report.updated, report.deleted,
                            f"{report.notice}; {notice}" if report.notice else notice)
    kept = warm(vault)
    s = kept.live_stats(vault)
    try:
        try:
            results = kept.index.search_many(queries, semantic=semantic, ahead=ahead)
        except model_unavailable() as e:   # the query's encoding could not load the model
            note_model_failure(vault, str(e))
            state, semantic = "unavailable", None
            report = replace(report, notice="; ".join(filter(None, (report.notice, unavailable(str(e))))))
            results = kept.index.search_many(queries)
    except IndexCorrupt:
        report = SyncReport(True, rebuild(vault), 0, "search index was corrupt: rebuilt it")
        results = kept.index.search_many(queries, semantic=semantic)
    if state != "hybrid":
        building = build_progress(vault) if state == "building" else None
        shown = building.shown() if building else None
        results = [replace(r, semantic=state, semantic_progress=shown) for r in results]
    if log_recalls and session:
        for result in results:
            s.record_recall(session, result.query, [h.id for h in result.hits])
    if s.notice:  # said once: the damaged file was kept aside
        report = replace(report, notice="; ".join(filter(None, (report.notice, s.notice))))
        s.notice = None
    kept.stats_file = inode(s.path)
    return results, report


def reindex(vault: Vault, *, wait: bool = True, progress: Callable[[int, int], None] | None = None,
            vector_progress: Callable[[int, int], None] | None = None) -> tuple[int, str, int]:
    """``memrepo reindex``: the search index and the vectors anew, every memory file read once
    for both; (memories indexed, vector state, vectors written). Without ``wait``, the
    vectors of more than ``INLINE_BUILD_MAX`` memories are built in the background from the
    documents read here: the state is "building" and no vector is written yet."""
    docs: list | None = [] if vector_state(vault) == "hybrid" else None
    count = rebuild(vault, progress=progress, each=None if docs is None else docs.append)
    if not wait and docs is not None and len(docs) > INLINE_BUILD_MAX:
        store = vector_store(vault)
        if not store.building():   # (one under way goes on: the next search catches up after it)
            build_in_background(vault, docs=docs)
        return count, "building", 0
    state, vectors = rebuild_vectors(vault, progress=vector_progress, docs=docs)
    return count, state, vectors


def catch_up(vault: Vault, *, wait: bool = True, progress: Callable[[int, int], None] | None = None,
             vector_progress: Callable[[int, int], None] | None = None) -> tuple[str, str | None]:
    """Bring the search index and the vectors to HEAD and the working tree now (``memrepo
    import`` after its commit): what the next search would do, without leaving any of it
    to that search. With ``wait`` every encoding is done here; without, a large one is
    left to a background build, planned from the files read here (the state is then
    "building"). ``progress`` and ``vector_progress`` see a rebuild of the index and an
    encoding of the vectors here. Returns (vector state, notice): "building" also when
    another process is writing the vectors."""
    state = vector_state(vault)
    read: dict[str, Any] | None = {} if state == "hybrid" else None
    report = sync(vault, progress=progress, each=None if read is None else lambda d: read.__setitem__(d.path, d))
    if state != "hybrid" or read is None:
        return state, "; ".join(filter(None, (report.notice, unavailable_notice() if state == "unavailable" else None))) or None
    from memrepo.retrieval.vectors import VectorsBusy, VectorsCorrupt
    store = vector_store(vault)
    notice = None
    try:
        if store.building():
            raise VectorsBusy("vectors are being built")
        if report.rebuilt or not store.ready():   # a rebuild read every memory file: build from them
            docs = list(read.values()) if report.rebuilt else None
            total = len(docs) if docs is not None else memory_count(vault)
            if wait or total <= INLINE_BUILD_MAX:
                build_vectors(vault, progress=vector_progress, docs=docs)
            elif docs is not None:
                notice = build_in_background(vault, docs=docs)
            else:   # (the build reads them: this sync read only the changed ones)
                start_background_build(vault)
                notice = building_notice(vault, total=total)
        else:
            try:
                notice = catch_up_vectors(vault, store, wait=wait, progress=vector_progress, known=read)
            except VectorsCorrupt:   # unreadable: built anew
                build_vectors(vault, progress=vector_progress)
    except VectorsBusy:
        return "building", "; ".join(filter(None, (report.notice, building_notice(vault, BUSY))))
    except model_unavailable() as e:
        note_model_failure(vault, str(e))
        return "unavailable", unavailable(str(e))
    return ("building" if notice else "hybrid"), "; ".join(filter(None, (report.notice, notice))) or None


def mark_useful(vault: Vault, memory_id: str, *, session: str | None = None) -> str | None:
    """Record that a recalled memory helped (heat; the strongest signal). Returns a notice
    when the statistics file was damaged and kept aside."""
    vault.get(memory_id)
    s = stats(vault)
    s.mark_useful(memory_id, session=session)
    return s.notice


def release(vault: Vault) -> None:
    """Forget what this process keeps of ``vault`` between searches (its open searcher,
    statistics, working-tree watch and vectors): a long-lived process that stops serving a
    vault calls this, so none of its files stays open."""
    import sys

    from memrepo.retrieval import scan
    from memrepo.retrieval import warm as kept
    kept.forget(vault)
    scan.forget(vault)
    vectors = sys.modules.get("memrepo.retrieval.vectors")  # loaded only once the semantic layer ran
    if vectors is not None:
        vectors.forget(vault.index_dir / "vectors")


def warm_up() -> None:
    """Load what a search will need before it is asked (a process about to answer many):
    with the semantic layer on, the vectors module and the model."""
    import os

    from memrepo.retrieval import embed
    if os.environ.get(SEMANTIC_ENV, "1").strip().lower() not in ("0", "false", "no", "off") and embed.available():
        from memrepo.retrieval import vectors  # noqa: F401 — imported now, not in the first call
        embed.model_id()
        embed.shared(embed.user_cache_dir()).query("warm up")
