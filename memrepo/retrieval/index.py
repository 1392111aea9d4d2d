"""The search index: a derived, rebuildable Whoosh index over the vault's memories.

Index storage and generations. What a memory becomes in the index is
:mod:`memrepo.retrieval.fields`; the bulk builder and the merge policy of updates are
:mod:`memrepo.retrieval.builder` (which lists the modules that use Whoosh internals, this one
among them: an open searcher's term lookups); the ranking of a query over an open searcher is
:mod:`memrepo.retrieval.ranking`; snippets are :mod:`memrepo.retrieval.snippets`.

Layout of ``index_dir``::

    CURRENT            name of the live generation (swapped atomically with os.replace)
    gen-000007/        a complete Whoosh index
    gen-000007.json    {"format": ..., "commit": ...} the git commit the index reflects
    write.lock         fcntl lock: one writer at a time, bounded wait

A rebuild writes a fresh generation and flips ``CURRENT``, so readers always see either the
old or the new index. Incremental updates use Whoosh's own atomic segment commits.
"""
from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo.retrieval import builder, lookups
from memrepo.retrieval.fields import IndexDoc, doc_fields, schema
from memrepo.retrieval.query_text import semantic_text
from memrepo.retrieval.ranking import (
    DEFAULT_TUNING,
    Hit,
    SearchQuery,
    SearchResult,
    Semantic,
    Tuning,
    run_query,
    weighting,
)
from memrepo.store import faults
from memrepo.store.files import atomic_write
from memrepo.store.lock import locked

if TYPE_CHECKING:  # pragma: no cover
    from memrepo.retrieval.stats import Stats

# the query and result types are the ranking's; imported from here by older callers
__all__ = ["FORMAT", "Hit", "IndexBusy", "IndexCorrupt", "IndexDoc", "IndexError_", "MemoryIndex",
           "SearchQuery", "SearchResult", "Tuning"]

FORMAT = 3  # 2: one combined scored field (weights folded in at index time); 3: term counts stored
WRITE_TIMEOUT_S = 10.0
OPEN_RETRIES = 8


class IndexError_(Exception):
    """Base class of index errors (the vault layer maps them into memrepo.errors)."""


class IndexCorrupt(IndexError_):
    """The index is missing, unreadable or of another format: rebuild it."""


class IndexBusy(IndexError_):
    """Another process held the index write lock for longer than the bounded wait."""



# ---------------------------------------------------------------------- the index ---

class MemoryIndex:
    """A rebuildable search index in ``index_dir``; ``stats`` adds heat and learned stopwords."""

    def __init__(self, index_dir: Path, *, stats: Stats | None = None,
                 tuning: Tuning | None = None) -> None:
        self.dir = Path(index_dir)
        self.stats = stats
        self.tuning = tuning or DEFAULT_TUNING
        self._cache: tuple[str, Any] | None = None  # (generation, open searcher)
        self._files: dict[str, tuple[tuple, str]] = {}  # path -> (its stat, its text)
        self._complete: tuple | None = None  # (generation, CURRENT's stat) known to have its files

    # ---- state ---------------------------------------------------------------------
    def _current(self) -> str | None:
        """The live generation's name; None when missing or damaged (then it is rebuilt)."""
        name = self._read(self.dir / "CURRENT")
        name = name.strip() if name is not None else ""
        return name if re.fullmatch(r"gen-\d+", name) else None

    def _meta(self, gen: str) -> dict:
        try:
            return json.loads(self._read(self.dir / f"{gen}.json") or "")
        except ValueError:
            return {}

    def _read(self, path: Path) -> str | None:
        """A small state file's text, read again only when it was replaced: both are written
        whole, by rename (a search asks for them several times; ~0.1 ms each read)."""
        key = str(path)
        try:
            st = os.stat(key)
        except OSError:
            return None
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
        known = self._files.get(key)
        if known is None or known[0] != stamp:
            try:
                with open(key, encoding="utf-8") as fh:
                    known = self._files[key] = (stamp, fh.read())
            except (OSError, UnicodeDecodeError):
                return None
        return known[1]

    def exists(self) -> bool:
        """True when a complete index of this format is present.

        Cheap on purpose (runs before every search): the live generation is named, of this
        format and has a Whoosh table of contents (looked for once per generation while
        ``CURRENT`` is the same file). A damaged index passes this check and fails to open
        (:class:`IndexCorrupt`), which the service answers with a rebuild."""
        gen = self._current()
        if gen is None or self._meta(gen).get("format") != FORMAT:
            return False
        seen = (gen, self._files.get(str(self.dir / "CURRENT"), (None,))[0])
        if self._complete == seen:
            return True
        try:
            found = any((self.dir / gen).glob("_MAIN_*.toc"))
        except OSError:
            return False
        if found:
            self._complete = seen
        return found

    def doc_count(self) -> int:
        """Memories in the live generation (from Whoosh's table of contents)."""
        return self._retrying(lambda ix, gen: ix.doc_count())

    def outdated(self) -> bool:
        """True when the live generation was written by a memrepo with another index format."""
        gen = self._current()
        return gen is not None and self._meta(gen).get("format") not in (None, FORMAT)

    def indexed_commit(self) -> str | None:
        """The git commit the index reflects (None when unknown or no index)."""
        gen = self._current()
        return self._meta(gen).get("commit") if gen else None

    def _write_meta(self, gen: str, commit: str | None) -> None:
        _atomic_write(self.dir / f"{gen}.json",
                      json.dumps({"format": FORMAT, "commit": commit}))

    # ---- writing -------------------------------------------------------------------
    def _lock(self):
        self.dir.mkdir(parents=True, exist_ok=True)
        return locked(self.dir / "write.lock", timeout=WRITE_TIMEOUT_S,
                      busy=lambda: IndexBusy(f"index {self.dir} is locked by another writer"))

    def rebuild(self, docs: Iterable[IndexDoc], *, commit: str | None,
                progress: Callable[[int], None] | None = None, procs: int = 2) -> int:
        """Build a complete new index from ``docs`` and swap it in atomically; returns count."""
        from whoosh import index
        with self._lock():
            self.close()
            old = self._current()
            gen = _next_gen(old)
            path = self.dir / gen
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir(parents=True)
            ix = index.create_in(str(path), schema())
            it = iter(docs)
            head = list(itertools.islice(it, builder.PARALLEL_MIN_DOCS))
            if len(head) < builder.PARALLEL_MIN_DOCS:
                procs = 1
            procs = max(1, min(procs, os.cpu_count() or 1))
            try:
                n = builder.build(ix, itertools.chain(head, it), dict(self.tuning.weights), procs, progress)
            except builder.BuildError as exc:
                raise IndexError_(str(exc)) from None
            if progress:
                progress(n)
            self._write_meta(gen, commit)
            faults.point("reindex-built")
            _atomic_write(self.dir / "CURRENT", gen)
            if old and old != gen:
                _remove_gen(self.dir, old)
        return n

    def update(self, *, upserts: Iterable[IndexDoc], deletes: Iterable[str],
               commit: str | None) -> None:
        """Apply changed and deleted memories (ids) in one atomic Whoosh commit."""
        from whoosh.writing import LockError
        with self._lock():
            gen = self._require_gen()
            ix = self._open_ix()
            try:
                writer = ix.writer(timeout=WRITE_TIMEOUT_S)
            except LockError as exc:
                raise IndexBusy(str(exc)) from exc
            weights = dict(self.tuning.weights)
            try:
                for mid in deletes:
                    writer.delete_by_term("id", mid)
                for doc in upserts:
                    writer.update_document(**doc_fields(doc, weights))
                writer.commit(mergetype=builder.tiered_merge)
            except BaseException:
                writer.cancel()
                raise
            self._write_meta(gen, commit)
            self.close()

    # ---- reading -------------------------------------------------------------------
    def _require_gen(self) -> str:
        gen = self._current()
        if gen is None or self._meta(gen).get("format") != FORMAT:
            raise IndexCorrupt(f"no usable index in {self.dir}: rebuild it")
        return gen

    def _open_ix(self):
        """Open the live generation, retrying while a commit or a swap is under way."""
        return self._retrying(lambda ix, gen: ix)

    def _retrying(self, use):
        from whoosh import index
        last: Exception | None = None
        for attempt in range(OPEN_RETRIES):
            gen = self._require_gen()
            try:
                return use(index.open_dir(str(self.dir / gen)), gen)
            except Exception as exc:
                last = exc
                if not self._transient(exc, gen):
                    break
                time.sleep(0.005 * (attempt + 1))
        raise IndexCorrupt(f"index {self.dir} is unreadable ({last}): rebuild it") from last

    def _transient(self, exc: Exception, gen: str) -> bool:
        # FileNotFoundError: Whoosh replaced a segment while we opened it; a changed CURRENT
        # or a vanished directory: a rebuild swapped generations under us.
        return (isinstance(exc, FileNotFoundError) or self._current() != gen
                or not (self.dir / gen).is_dir())

    def _cached_searcher(self):
        # Opening the index and a searcher costs milliseconds at 100k memories; a process
        # that searches repeatedly (batch, MCP server, benchmark) keeps one and checks per
        # call that the generation and Whoosh's table of contents are still the live ones.
        if self._cache is not None:
            gen, searcher = self._cache
            try:
                if self._current() == gen and searcher.up_to_date():
                    return searcher
            except Exception:
                pass
            self.close()
        self._cache = self._retrying(lambda ix, gen: (gen, _open_searcher(ix, self.tuning)))
        return self._cache[1]

    def close(self) -> None:
        """Release the cached searcher (reopened on the next search)."""
        if self._cache is not None:
            cache, self._cache = self._cache, None
            try:
                cache[1].close()
            except Exception:
                pass

    def query_texts(self, qs: Iterable[SearchQuery]) -> list[str]:
        """The texts the queries embed (none for the advanced syntax or an empty query)."""
        return list(dict.fromkeys(semantic_text(q.text, user_only=self.tuning.semantic_user_only) for q in qs if not q.advanced and q.text.strip()))

    def search(self, q: SearchQuery, *, semantic=None) -> SearchResult:
        """Run one query (see :func:`search_many`)."""
        return self.search_many([q], semantic=semantic)[0]

    def search_many(self, qs: Iterable[SearchQuery], *, semantic=None, ahead: dict | None = None) -> list[SearchResult]:
        """Run several queries with one searcher (the batch path of the CLI and benchmarks).

        ``semantic`` is ``(vectors, encoder)``: a loaded :class:`~memrepo.retrieval.vectors.Snapshot`
        and an :class:`~memrepo.retrieval.embed.Encoder`; with it the ranking is hybrid. The
        queries are encoded (on the encoder's thread or child process) while their keywords are ranked; ``ahead``
        holds the encodings already under way (by :meth:`query_texts`)."""
        qs = list(qs)
        learned = self.stats.learned_stopwords() if self.stats else frozenset()
        extra: list[Semantic | None] = [None] * len(qs)
        if semantic is not None:
            vectors, encoder = semantic
            ahead = dict(ahead or {})
            ahead.update(encoder.queries_soon([text for text in self.query_texts(qs) if text not in ahead]))
            extra = [None if q.advanced or not q.text.strip() else Semantic(vectors, ahead[semantic_text(q.text, user_only=self.tuning.semantic_user_only)])
                     for q in qs]
        reopened = False
        for attempt in range(OPEN_RETRIES):
            searcher = self._cached_searcher()
            try:
                return [run_query(searcher, q, self.stats, learned, self.tuning, sem) for q, sem in zip(qs, extra)]
            except FileNotFoundError:
                # a writer replaced files under a searcher opened before it committed
                self.close()
                if attempt == OPEN_RETRIES - 1:
                    raise
                time.sleep(0.005 * (attempt + 1))
            except Exception:
                # files damaged under a searcher kept open since an earlier search: a fresh
                # one either reads them or fails to open (IndexCorrupt: rebuilt by the service)
                self.close()
                if reopened:
                    raise
                reopened = True
        raise AssertionError("unreachable")


def _open_searcher(ix, tuning: Tuning):
    """A searcher with every file it will read already open: Whoosh opens a segment's
    column files (lengths, stored fields) lazily, and a writer merging segments meanwhile
    may delete them; an open file stays readable."""
    searcher = ix.searcher(weighting=weighting(tuning))
    try:
        for leaf, _ in searcher.reader().leaf_readers():
            _remember_term_lookups(leaf)
            _read_terms_by_position(leaf)
            if leaf.doc_count_all():
                for field in ("text", "keys", "summary"):
                    leaf.doc_field_length(0, field)
                leaf.stored_fields(0)
        lookups.prepare(searcher)
    except BaseException:
        searcher.close()
        raise
    return searcher


TERM_LOOKUPS_KEPT = 50_000  # per segment of an open searcher (a few MB at most)


def _remember_term_lookups(leaf) -> None:
    """Keep where each looked-up term is in a segment's term file. One query asks for the same
    term several times (its document frequency, whether the segment holds it, its postings),
    and successive queries share terms; each ask is a hash-table walk in Python over the file
    (~230 per query at 100k memories). A segment never changes once written, so the answer
    holds for the searcher's life."""
    table = getattr(getattr(leaf, "_terms", None), "_tindex", None)
    find = getattr(table, "ranges_for_key", None)
    if table is None or find is None or getattr(table, "_memrepo_remembers", False):
        return  # another codec (nothing to remember), or a reader already remembering
    known: dict[bytes, list] = {}

    def ranges_for_key(key):
        found = known.get(key)
        if found is None:
            if len(known) >= TERM_LOOKUPS_KEPT:
                known.clear()
            found = known[key] = list(find(key))
        return found
    table.ranges_for_key = ranges_for_key
    table._memrepo_remembers = True


def _read_terms_by_position(leaf) -> None:
    """Read a segment's term file by position. Whoosh reads it with a seek and a buffered read
    per access (a term's document frequency, its info, each probe of the hash table), and the
    buffered read fills 8 KB for the 4-40 bytes asked. The file never changes once written,
    and every read of it after opening says where it reads (none relies on the position the
    last one left), so a positioned read gives the same bytes."""
    dbfile = getattr(getattr(leaf, "_terms", None), "_dbfile", None)
    if dbfile is None or "get" in vars(dbfile) or getattr(dbfile, "_buf", None) is not None:
        return  # another codec, already done, or an in-memory file (a compound segment)
    read = lookups.positioned_reader(dbfile)
    if read != dbfile.get:
        dbfile.get = read


def _next_gen(old: str | None) -> str:
    n = int(old.split("-")[1]) + 1 if old and old.startswith("gen-") else 1
    return f"gen-{n:06d}"


def _remove_gen(root: Path, gen: str) -> None:
    shutil.rmtree(root / gen, ignore_errors=True)
    try:
        (root / f"{gen}.json").unlink()
    except FileNotFoundError:
        pass


def _atomic_write(path: Path, data: str) -> None:
    atomic_write(path, data.encode("utf-8"))


