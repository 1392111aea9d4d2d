"""The search index: a derived, rebuildable Whoosh index over the vault's memories.

This is the only module that talks to Whoosh (besides the stemmer in :mod:`memrepo.text`).

Layout of ``index_dir``::

    CURRENT            name of the live generation (swapped atomically with os.replace)
    gen-000007/        a complete Whoosh index
    gen-000007.json    {"format": ..., "commit": ...} the git commit the index reflects
    write.lock         fcntl lock: one writer at a time, bounded wait

A rebuild writes a fresh generation and flips ``CURRENT``, so readers always see either the
old or the new index. Incremental updates use Whoosh's own atomic segment commits.
"""
from __future__ import annotations

import fcntl
import itertools
import json
import math
import os
import re
import shutil
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from memrepo import text
from memrepo.model import epoch_seconds
from memrepo.store import faults

if TYPE_CHECKING:  # pragma: no cover
    from memrepo.retrieval.stats import Stats

FORMAT = 2  # 2: one combined scored field (weights folded in at index time)
WRITE_TIMEOUT_S = 10.0
OPEN_RETRIES = 8


class IndexError_(Exception):
    """Base class of index errors (the vault layer maps them into memrepo.errors)."""


class IndexCorrupt(IndexError_):
    """The index is missing, unreadable or of another format: rebuild it."""


class IndexBusy(IndexError_):
    """Another process held the index write lock for longer than the bounded wait."""


@dataclass(frozen=True)
class IndexDoc:
    """One memory as the index sees it."""
    id: str
    path: str
    layer: str
    kind: str
    subject: str
    fact: str | None
    status: str
    summary: str
    body: str
    tags: tuple[str, ...]
    created: str | None
    updated: str | None
    links: tuple[str, ...] = ()
    weight: float | None = None
    scope: str | None = None


@dataclass(frozen=True)
class SearchQuery:
    """A search request. ``text`` is free text unless ``advanced`` asks for Whoosh syntax."""
    text: str
    limit: int = 10
    subject: str | None = None
    layer: str | None = None
    kind: str | None = None
    tag: str | None = None
    since: str | None = None
    deep: bool = False
    history: bool = False
    advanced: bool = False


@dataclass(frozen=True)
class Hit:
    """One ranked result."""
    id: str
    score: float
    path: str
    layer: str
    subject: str
    summary: str
    snippet: str
    status: str
    kind: str
    fact: str | None
    tags: tuple[str, ...]
    created: str | None


@dataclass(frozen=True)
class SearchResult:
    """Hits (best first), whether nothing cleared the relevance floor, and the routed intent."""
    query: str
    hits: tuple[Hit, ...]
    nothing_relevant: bool
    intent: str


# --------------------------------------------------------------------------- schema ---

def _schema():
    from whoosh import fields

    from memrepo.retrieval.analysis import ScoredText
    return fields.Schema(
        id=fields.ID(stored=True, unique=True),
        path=fields.STORED(),
        layer=fields.ID(stored=True),
        kind=fields.ID(stored=True),
        subject=fields.ID(stored=True),
        fact=fields.ID(stored=True),
        status=fields.ID(stored=True),
        tag=fields.KEYWORD(lowercase=True, commas=True),  # filter; without the '#'

        group=fields.ID(stored=True),
        # the one scored field: business tags, keys, summary and body with their weights
        # folded in at index time (one posting list per term instead of four)
        text=ScoredText(),
        keys=ScoredText(),                   # whole identifiers, for exact fact lookups
        summary=ScoredText(stored=True),     # searchable on its own in advanced syntax
        body=fields.STORED(),
        created=fields.STORED(),
        created_ts=fields.NUMERIC(int, bits=64, signed=True),
        meta=fields.STORED(),
    )


def _epoch(iso: str | None) -> int | None:
    seconds = epoch_seconds(iso)
    return None if seconds is None else int(seconds)


_SESSION_TAG = re.compile(r"^session[-_:]?\w+$", re.IGNORECASE)


def _group(doc: IndexDoc) -> str:
    """Memories of one conversation session (a ``session-N`` tag) form a neighbourhood."""
    for tag in doc.tags:
        if _SESSION_TAG.match(tag):
            return f"{doc.subject}\x1f{tag.lower()}"
    return ""


def _fields(doc: IndexDoc, weights: dict[str, float]) -> dict:
    from memrepo.retrieval.analysis import EXACT, KEY_RE, KEYS, LEAD, PROSE
    # '#'-tags are business tags (seed 003: highest priority); other tags are facets such
    # as ``session-3`` or ``speaker-ann`` and rank like identifiers.
    business = [t.lstrip("#") for t in doc.tags if t.startswith("#")]
    facets = [t for t in doc.tags if not t.startswith("#")]
    # identifiers written in the text (INC-88814, release.auto_publish) are exact keys too
    ids = dict.fromkeys(k.lower().strip(".-_") for k in KEY_RE.findall(f"{doc.summary} {doc.body}"))
    keys = " ".join(x for x in (doc.subject, doc.fact, *facets, *ids) if x)
    out = dict(
        id=doc.id, path=doc.path, layer=doc.layer, kind=doc.kind, subject=doc.subject,
        fact=doc.fact or "", status=doc.status, tag=",".join(t.lower().lstrip("#") for t in doc.tags),
        group=_group(doc),
        text=((PROSE, " ".join(business), weights["tagtext"]), (KEYS, keys, weights["keys"]),
              (LEAD, doc.summary, weights["summary"]), (PROSE, doc.body, weights["body"])),
        keys=((EXACT, keys, 1.0),),
        summary=doc.summary, body=doc.body, created=doc.created,
        meta=dict(tags=tuple(doc.tags), updated=doc.updated, links=tuple(doc.links),
                  weight=doc.weight, scope=doc.scope),
    )
    ts = _epoch(doc.created)
    if ts is not None:
        out["created_ts"] = ts
    return out


# ---------------------------------------------------------------------- the index ---

class MemoryIndex:
    """A rebuildable search index in ``index_dir``; ``stats`` adds heat and learned stopwords."""

    def __init__(self, index_dir: Path, *, stats: Stats | None = None,
                 tuning: Tuning | None = None) -> None:
        self.dir = Path(index_dir)
        self.stats = stats
        self.tuning = tuning or DEFAULT_TUNING
        self._cache: tuple[str, object] | None = None  # (generation, open searcher)

    # ---- state ---------------------------------------------------------------------
    def _current(self) -> str | None:
        """The live generation's name; None when missing or damaged (then it is rebuilt)."""
        try:
            name = (self.dir / "CURRENT").read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        return name if re.fullmatch(r"gen-\d+", name) else None

    def _meta(self, gen: str) -> dict:
        try:
            return json.loads((self.dir / f"{gen}.json").read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return {}

    def exists(self) -> bool:
        """True when a complete index of this format is present.

        Cheap on purpose (runs before every search): the live generation is named, of this
        format and has a Whoosh table of contents. A damaged index passes this check and
        fails to open (:class:`IndexCorrupt`), which the service answers with a rebuild."""
        gen = self._current()
        if gen is None or self._meta(gen).get("format") != FORMAT:
            return False
        try:
            return any((self.dir / gen).glob("_MAIN_*.toc"))
        except OSError:
            return False

    def indexed_commit(self) -> str | None:
        """The git commit the index reflects (None when unknown or no index)."""
        gen = self._current()
        return self._meta(gen).get("commit") if gen else None

    def _write_meta(self, gen: str, commit: str | None) -> None:
        _atomic_write(self.dir / f"{gen}.json",
                      json.dumps({"format": FORMAT, "commit": commit}))

    # ---- writing -------------------------------------------------------------------
    @contextmanager
    def _lock(self) -> Iterator[None]:
        self.dir.mkdir(parents=True, exist_ok=True)
        with open(self.dir / "write.lock", "a+") as fh:
            deadline = time.monotonic() + WRITE_TIMEOUT_S
            while True:
                try:
                    fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        raise IndexBusy(f"index {self.dir} is locked by another writer") from None
                    time.sleep(0.02)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

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
            ix = index.create_in(str(path), _schema())
            it = iter(docs)
            head = list(itertools.islice(it, PARALLEL_MIN_DOCS))
            if len(head) < PARALLEL_MIN_DOCS:
                procs = 1
            procs = max(1, min(procs, os.cpu_count() or 1))
            n = _build(ix, itertools.chain(head, it), dict(self.tuning.weights), procs, progress)
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
                    writer.update_document(**_fields(doc, weights))
                writer.commit(mergetype=_tiered_merge)
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

    @contextmanager
    def _searcher(self) -> Iterator[object]:
        """The process's searcher of the live index (opened once, refreshed when stale)."""
        yield self._cached_searcher()

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

    def search(self, q: SearchQuery) -> SearchResult:
        """Run one query (see :func:`search_many`)."""
        return self.search_many([q])[0]

    def search_many(self, qs: Iterable[SearchQuery]) -> list[SearchResult]:
        """Run several queries with one searcher (the batch path of the CLI and benchmarks)."""
        qs = list(qs)
        learned = self.stats.learned_stopwords() if self.stats else frozenset()
        for attempt in range(OPEN_RETRIES):
            searcher = self._cached_searcher()
            try:
                return [_run_query(searcher, q, self.stats, learned, self.tuning) for q in qs]
            except FileNotFoundError:
                # a writer replaced files under a searcher opened before it committed
                self.close()
                if attempt == OPEN_RETRIES - 1:
                    raise
                time.sleep(0.005 * (attempt + 1))
        raise AssertionError("unreachable")


MERGE_FANOUT = 6


def _tiered_merge(writer, segments):
    """Whoosh merge policy for incremental updates: segments whose live sizes fall in the
    same power-of-``MERGE_FANOUT`` tier are merged once there are ``MERGE_FANOUT - 1`` of
    them (plus the one being written). Whoosh's default (MERGE_SMALL) re-merged every small
    segment every few commits (330-500 ms at 100k); this keeps most commits merge-free and
    the number of segments a search opens logarithmic. Fully deleted segments are dropped."""
    from whoosh.reading import SegmentReader
    live = [seg for seg in segments if seg.doc_count() > 0]
    tiers: dict[int, list] = {}
    for seg in live:
        tiers.setdefault(int(math.log(seg.doc_count(), MERGE_FANOUT)), []).append(seg)
    for tier in sorted(tiers):
        group = tiers[tier]
        if len(group) >= MERGE_FANOUT - 1:
            for seg in group:
                reader = SegmentReader(writer.storage, writer.schema, seg)
                writer.add_reader(reader)
                reader.close()
            return [seg for seg in live if seg not in group]
    return live


# ------------------------------------------------------------------- bulk building ---

PARALLEL_MIN_DOCS = 2500  # below this a second process costs more than it saves


class _MemoryPool:
    """In-memory replacement for Whoosh's ``PostingPool`` during a full rebuild.

    Whoosh's pool keeps each posting as a 5-tuple (~170 bytes), spills sorted runs to temp
    files past ``limitmb`` and merges them (1.6 GB of temp files and minutes at 100k
    memories). Documents arrive in docnum order, so per-term arrays are already sorted by
    document; only the terms need sorting at the end.
    """

    def __init__(self) -> None:
        from array import array
        self._array = array
        self.fieldnames: set[str] = set()
        self.runs: list = []
        self._terms: dict[str, dict[bytes, tuple]] = {}
        self._other: dict[tuple[str, bytes, int], bytes] = {}  # unusual posting values

    def add(self, item) -> None:
        fieldname, tbytes, docnum, weight, vbytes = item
        terms = self._terms.get(fieldname)
        if terms is None:
            terms = self._terms[fieldname] = {}
            self.fieldnames.add(fieldname)
        post = terms.get(tbytes)
        if post is None:
            post = terms[tbytes] = (self._array("i"), self._array("f"), self._array("i"))
        post[0].append(docnum)
        post[1].append(weight)
        if not vbytes:
            post[2].append(-1)
        elif len(vbytes) == 4 and vbytes[0] < 128:
            post[2].append(int.from_bytes(vbytes, "big"))
        else:
            post[2].append(-2)
            self._other[(fieldname, tbytes, docnum)] = vbytes

    def iter_postings(self):
        other = self._other
        for fieldname in sorted(self._terms):
            terms = self._terms[fieldname]
            for tbytes in sorted(terms):
                docs, weights, vals = terms[tbytes]
                for docnum, weight, v in zip(docs, weights, vals):
                    if v >= 0:
                        vbytes = v.to_bytes(4, "big")
                    elif v == -1:
                        vbytes = b""
                    else:
                        vbytes = other[(fieldname, tbytes, docnum)]
                    yield fieldname, tbytes, docnum, weight, vbytes

    def save(self) -> None:
        pass

    def cleanup(self) -> None:
        self._terms.clear()
        self._other.clear()


def _segment_of(ix, docs: Iterable[IndexDoc], weights: dict[str, float],
                tick: Callable[[int], None] | None = None):
    """Write ``docs`` as one new Whoosh segment (not yet in the table of contents)."""
    from whoosh.writing import SegmentWriter
    # compound=False: Whoosh opens a compound segment by copying each sub-file out of its
    # mmap into memory (~100 ms per 50k-memory segment on every process start)
    writer = SegmentWriter(ix, _lk=False, compound=False)
    writer.pool = _MemoryPool()
    for i, doc in enumerate(docs, 1):
        writer.add_document(**_fields(doc, weights))
        if tick and i % 1000 == 0:
            tick(1000)
    return writer._finalize_segment(), writer.docnum


def _build(ix, docs: Iterator[IndexDoc], weights: dict[str, float], procs: int,
           progress: Callable[[int], None] | None) -> int:
    """Index ``docs`` into the empty index ``ix`` (one segment per process), then commit
    the table of contents once; returns the number of documents."""
    from whoosh.writing import SegmentWriter
    done = [0]

    def tick(k: int) -> None:
        done[0] += k
        if progress:
            progress(done[0])

    parent = SegmentWriter(ix)  # holds Whoosh's lock and writes the TOC
    try:
        if procs <= 1:
            segment, n = _segment_of(ix, docs, weights, tick)
            segments = [segment] if n else []
        else:
            segments, n = _parallel_segments(ix, docs, weights, procs, tick)
        parent._close_segment()
        parent._commit_toc(segments)
    except BaseException:
        parent.cancel()
        raise
    parent._finish()
    return n


BATCH = 200  # documents per message to a build process


def _parallel_segments(ix, docs: Iterator[IndexDoc], weights, procs, tick) -> tuple[list, int]:
    """Stream ``docs`` in batches to ``procs`` forked builders: the caller's reading of the
    memory files (this process) overlaps with their indexing (the other cores)."""
    import multiprocessing
    import multiprocessing.connection
    import pickle
    ctx = multiprocessing.get_context("fork")
    workers = []
    try:
        for _ in range(procs):
            jobs_recv, jobs_send = ctx.Pipe(duplex=False)
            res_recv, res_send = ctx.Pipe(duplex=False)
            proc = ctx.Process(target=_segment_worker, args=(ix, jobs_recv, weights, res_send),
                               daemon=True)
            proc.start()
            jobs_recv.close()
            res_send.close()
            workers.append((proc, jobs_send, res_recv))
        n = 0
        try:
            for i, batch in enumerate(_batches(docs, BATCH)):
                workers[i % procs][1].send(batch)
                n += len(batch)
                tick(len(batch))
            for _, jobs_send, _ in workers:
                jobs_send.send(None)
        except (BrokenPipeError, ConnectionResetError):
            raise IndexError_("an index build process died") from None
        segments = []
        for _, _, res_recv in workers:
            try:
                kind, value = res_recv.recv()
            except EOFError:
                raise IndexError_("an index build process died") from None
            if kind == "error":
                raise IndexError_(f"index build failed: {value}")
            segment, count = pickle.loads(value)
            if count:
                segments.append(segment)
        return segments, n
    finally:
        for proc, jobs_send, res_recv in workers:
            jobs_send.close()
            res_recv.close()
            proc.join(5)
            if proc.is_alive():
                proc.kill()


def _batches(docs: Iterator[IndexDoc], size: int) -> Iterator[list[IndexDoc]]:
    while batch := list(itertools.islice(docs, size)):
        yield batch


def _segment_worker(ix, jobs, weights, results) -> None:
    import pickle

    def received() -> Iterator[IndexDoc]:
        while (batch := jobs.recv()) is not None:
            yield from batch

    try:
        results.send(("segment", pickle.dumps(_segment_of(ix, received(), weights))))
    except BaseException as exc:  # report, never hang the parent
        results.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        results.close()  # multiprocessing ends the forked child when this returns


def _open_searcher(ix, tuning: Tuning):
    """A searcher with every file it will read already open: Whoosh opens a segment's
    column files (lengths, stored fields) lazily, and a writer merging segments meanwhile
    may delete them; an open file stays readable."""
    searcher = ix.searcher(weighting=_weighting(tuning))
    try:
        for leaf, _ in searcher.reader().leaf_readers():
            if leaf.doc_count_all():
                for field in ("text", "keys", "summary"):
                    leaf.doc_field_length(0, field)
                leaf.stored_fields(0)
    except BaseException:
        searcher.close()
        raise
    return searcher


def _weighting(tuning: Tuning):
    """BM25F with Lucene's idf: Whoosh's default ``log(N/(df+1)) + 1`` over-weights terms
    that occur almost everywhere (measured: several points of R@10 on both benchmarks)."""
    from whoosh import scoring

    class LuceneBM25F(scoring.BM25F):
        def idf(self, searcher, fieldname, text):
            n = searcher.doc_count_all()
            df = searcher.doc_frequency(fieldname, text)
            return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    # No length normalisation for the exact-key field: a memory with many keys is not
    # "longer" in any sense that should dilute a key match.
    return LuceneBM25F(B=tuning.b, K1=tuning.k1, keys_B=0.0)


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
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(data, encoding="utf-8")
    os.replace(tmp, path)


# ------------------------------------------------------------------------ ranking ---

ALL_STATUSES = ("active", "pending_review", "superseded", "rejected", "archived", "rolled_back")
SCORED = "text"
PARSED_FIELDS = ("text", "summary", "keys")   # default fields of the advanced syntax


@dataclass(frozen=True)
class Tuning:
    """Ranking knobs (measured on the dev benchmarks; see bench/RESULTS.md).

    ``weights`` are folded into the one scored field at index time (a rebuild applies a
    change); the rest apply per query.
    """
    weights: tuple[tuple[str, float], ...] = (
        ("tagtext", 3.0), ("keys", 2.0), ("summary", 1.5), ("body", 1.0))
    exact_key_boost: float = 6.0
    pool: int = 30                 # candidates fetched before re-ranking
    neighbour: float = 0.3         # weight of the best same-session neighbour's score
    prf_docs: int = 3              # pseudo-relevance feedback: top docs used (0 = off)
    prf_terms: int = 10
    prf_weight: float = 0.3
    prf_max_cost: int = 1000       # no feedback pass when the first one scored more postings
    floor: float = 0.3             # best hit's idf-weighted share of query terms, else
                                   # "nothing relevant"
    hit_floor: float = 0.25        # each hit needs at least this fraction of that floor
    heat_gain: float = 0.5         # heat multiplies the score by at most 1 + heat_gain
    stop_df: float = 0.02          # learned stopwords apply only to terms in >= 2 % of docs
    query_unigrams: bool = False   # also search single CJK characters
    qtf_linear: bool = False       # a repeated query term counts 1 + log(count) (True: count)
    assistant_lines: float = 0.5   # in a transcript query, words of the assistant's turns
                                   # count this much (the user's own words name the memory)
    k1: float = 1.2                # BM25 on the combined field
    b: float = 0.75
    # Cost control: Whoosh scores every posting of a searched term in pure Python (~3 us
    # each), so the terms given to it are the rarest ones whose document frequencies add up
    # to at most ``postings_budget`` (at most ``max_terms`` of them); the commoner terms only
    # re-rank the candidate pool (BM25 from the candidates' stored text) and count in the
    # relevance share. When even the rarest term is over budget, the ``common_terms`` rarest
    # are searched and Whoosh's block-max top-k skipping bounds the work.
    postings_budget: int = 2000
    max_terms: int = 64
    common_terms: int = 2


DEFAULT_TUNING = Tuning()


@dataclass
class _Cand:
    docnum: int
    fields: dict
    bm25: float
    coverage: float
    score: float = 0.0
    seen: Counter | None = None


@dataclass
class _Plan:
    """The query's analysed terms, their document frequencies and the searched subset."""
    terms: Counter                 # every analysed term with its count in the query
    df: dict[str, int]             # document frequency in the scored field (0: no memory)
    searched: dict[str, float]     # term -> query boost, the terms given to Whoosh
    n: int                         # documents in the index
    cost: int = 0                  # postings of the searched terms

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))


def _run_query(searcher, q: SearchQuery, stats: Stats | None, learned: frozenset[str],
               tuning: Tuning = DEFAULT_TUNING) -> SearchResult:
    from memrepo.retrieval.analysis import detect_intent
    intent = detect_intent(q.text)
    history = q.history or intent == "history"
    plan = _plan(searcher, q.text, learned, tuning)
    if not plan.terms and not q.advanced:
        return SearchResult(q.text, (), True, intent)
    flt, mask = _filters(q, history)
    wq = _build_query(searcher, q, plan, intent, tuning)
    cands = _collect(searcher, wq, flt, mask, tuning.pool)
    if (tuning.prf_docs and cands and not q.advanced and intent in ("general", "howto")
            and plan.cost <= tuning.prf_max_cost):
        # feedback broadens natural questions; a fact lookup stays with its exact words
        extra = _feedback_terms(searcher, cands, plan, tuning)
        if extra:
            wq = _build_query(searcher, q, plan, intent, tuning, extra=extra)
            cands = _collect(searcher, wq, flt, mask, tuning.pool)
    cands = _rerank(searcher, cands, plan, stats, tuning, max(q.limit, 0))
    if history:  # the relevant versions, newest first: a timeline of the fact
        cands.sort(key=lambda c: c.fields.get("created") or "", reverse=True)
    hits = tuple(_hit(c, q.text) for c in cands)
    return SearchResult(q.text, hits, not hits, intent)


def _plan(searcher, query: str, learned: frozenset[str], tuning: Tuning) -> _Plan:
    """Analysed query terms minus learned stopwords, and the affordable subset to search."""
    counts = _query_counts(query, tuning)
    n = max(searcher.doc_count(), 1)
    df = {t: searcher.doc_frequency(SCORED, t) for t in counts}
    if learned and counts:
        drop = {t for t in counts if t in learned and df[t] / n >= tuning.stop_df}
        kept = Counter({t: c for t, c in counts.items() if t not in drop})
        counts = kept or counts
    qtf = (lambda c: float(c)) if tuning.qtf_linear else (
        lambda c: 1.0 + math.log(c) if c >= 1.0 else c)
    live = sorted((t for t in counts if df[t]), key=lambda t: (df[t], t))
    chosen, cost = [], 0
    for t in live[:tuning.max_terms]:
        if cost + df[t] > tuning.postings_budget:
            break
        chosen.append(t)
        cost += df[t]
    if not chosen:
        chosen = live[:tuning.common_terms]
        cost = sum(df[t] for t in chosen)
    return _Plan(counts, df, {t: qtf(counts[t]) for t in chosen}, n, cost)


_SPEAKER_RE = re.compile(r"^\s*[*_]*([^\s:：*_]{1,24})[*_]*\s*[:：]")
ASSISTANTS = frozenset({"助手", "智能助手", "assistant", "ai", "bot", "agent", "model"})


def _query_counts(query: str, tuning: Tuning) -> Counter:
    """Query terms with their (possibly fractional) counts. In a transcript (two or more
    lines that start with a speaker label, one of them an assistant) the assistant's lines
    count ``assistant_lines`` each: what the user said is what names the memory."""
    lines = query.splitlines()
    speakers = [m.group(1).lower() if m else None for m in map(_SPEAKER_RE.match, lines)]
    if tuning.assistant_lines == 1.0 or sum(s is not None for s in speakers) < 2 \
            or not any(s in ASSISTANTS for s in speakers):
        return Counter(text.terms(query, unigrams=tuning.query_unigrams))
    counts: Counter = Counter()
    speaker = None
    for line, who in zip(lines, speakers):
        speaker = who or speaker  # an unlabelled line continues the previous turn
        w = tuning.assistant_lines if speaker in ASSISTANTS else 1.0
        for t in text.terms(line, unigrams=tuning.query_unigrams):
            counts[t] += w
    return counts


def _build_query(searcher, q: SearchQuery, plan: _Plan, intent: str, tuning: Tuning,
                 extra: dict[str, float] | None = None):
    from whoosh import query as wq
    if q.advanced:
        parsed = _parse_advanced(searcher, q.text)
        if parsed is not None:
            return parsed
    subs = [wq.Term(SCORED, t, boost=b) for t, b in plan.searched.items()]
    if intent == "fact":
        from memrepo.retrieval.analysis import query_keys
        subs += [wq.Term("keys", key, boost=tuning.exact_key_boost)
                 for key in dict.fromkeys(query_keys(q.text))]
    subs += [wq.Term(SCORED, t, boost=w) for t, w in (extra or {}).items()]
    query = wq.Or(subs)
    # Whoosh preloads every posting into arrays for segments under 5,000 documents (its
    # "array" union); the binary union tree with block-max skipping is faster for our
    # few, budgeted terms (10k memories: CPU p50 12.0 -> 8.2 ms)
    query.matcher_type = wq.Or.DEFAULT_MATCHER
    return query


def _parse_advanced(searcher, query: str):
    """Opt-in Whoosh syntax; a query that does not parse falls back to free text."""
    from whoosh.qparser import FieldAliasPlugin, MultifieldParser, OrGroup
    parser = MultifieldParser(list(PARSED_FIELDS), searcher.schema, group=OrGroup)
    parser.add_plugin(FieldAliasPlugin({"text": ["body", "tags", "tagtext"]}))
    try:
        return parser.parse(query)
    except Exception:
        return None


def _filters(q: SearchQuery, history: bool):
    from whoosh import query as wq
    allowed = {"active"} | ({"archived"} if q.deep else set()) \
        | ({"superseded", "rolled_back"} if history else set())
    mask = wq.Or([wq.Term("status", s) for s in ALL_STATUSES if s not in allowed])
    parts = []
    for field, value in (("subject", q.subject), ("layer", q.layer), ("kind", q.kind),
                         ("tag", q.tag.lower().lstrip("#") if q.tag else None)):
        if value:
            parts.append(wq.Term(field, value))
    since = _epoch(q.since)
    if since is not None:
        parts.append(wq.NumericRange("created_ts", since, None))
    flt = wq.And(parts) if len(parts) > 1 else (parts[0] if parts else None)
    return flt, mask


def _collect(searcher, query, flt, mask, pool: int) -> list[_Cand]:
    # terms=True would force Whoosh's slow binary union tree; coverage is computed later
    # from the stored text of the few hits that are returned.
    allow, deny = _docset(searcher, flt), _docset(searcher, mask)
    if allow is not None and not allow:
        return []
    results = searcher.search(query, limit=pool, filter=allow, mask=deny or None)
    return [_Cand(hit.docnum, hit.fields(), hit.score, -1.0) for hit in results]


def _docset(searcher, q) -> set[int] | None:
    """Documents of a filter query, cached with the searcher (Whoosh would build a bit set
    the size of the index on every search: ~1.5 ms at 10k memories)."""
    if q is None:
        return None
    cache = searcher.__dict__.setdefault("_memrepo_docsets", {})
    key = repr(q)
    docs = cache.get(key)
    if docs is None:
        if len(cache) >= 256:
            cache.clear()
        docs = cache[key] = set(searcher.docs_for_query(q))
    return docs


def _seen(c: _Cand, unigrams: bool = True) -> Counter:
    """Terms of the memory (all of its text, tags and keys), from its stored fields."""
    if c.seen is None:
        f = c.fields
        tags = " ".join((f.get("meta") or {}).get("tags", ()))
        summary, body = f.get("summary") or "", f.get("body") or ""
        if summary and summary in body:  # usually the body's first sentence: count it once
            summary = ""
        from memrepo.retrieval.analysis import key_terms
        seen = Counter(text.terms(f"{summary} {body} {tags}", unigrams=unigrams))
        seen.update(key_terms(f"{f.get('subject', '')} {f.get('fact', '')} {tags}"))
        c.seen = seen
    return c.seen


def _coverage(c: _Cand, idf: dict[str, float], unigrams: bool) -> float:
    """Idf-weighted share of the query terms that occur in the memory (0..1)."""
    if c.coverage < 0:
        seen = _seen(c, unigrams)
        total = sum(idf.values()) or 1.0
        c.coverage = sum(v for t, v in idf.items() if t in seen) / total
    return c.coverage


def _feedback_terms(searcher, cands: list[_Cand], plan: _Plan,
                    tuning: Tuning) -> dict[str, float]:
    """Pseudo-relevance feedback: frequent, rare-enough terms of the top documents."""
    tf: Counter = Counter()
    for c in cands[:tuning.prf_docs]:
        tf.update(set(text.terms(f"{c.fields.get('summary', '')} {c.fields.get('body', '')}")))
    scored = {}
    for t, k in tf.items():
        if t in plan.terms:
            continue
        df = plan.df.get(t)
        if df is None:
            df = plan.df[t] = searcher.doc_frequency(SCORED, t)
        scored[t] = k * plan.idf(t)
    best = sorted(scored, key=lambda t: (-scored[t], t))[:tuning.prf_terms]
    out, cost = {}, plan.cost  # the expansion shares the query's postings budget
    for t in sorted(best, key=lambda t: plan.df[t]):
        if cost + plan.df[t] > tuning.postings_budget:
            break
        out[t] = tuning.prf_weight
        cost += plan.df[t]
    return out


def _rerank(searcher, cands: list[_Cand], plan: _Plan, stats: Stats | None,
            tuning: Tuning, limit: int) -> list[_Cand]:
    """Final order: normalised BM25F, same-session support, heat; then the relevance floor."""
    if not cands:
        return cands
    # single CJK characters are terms only when the query is one (e.g. 库): analyse the
    # candidates' text with unigrams just then
    uni = any(len(t) == 1 and text.is_cjk(t) for t in plan.terms)
    skipped = [t for t in plan.terms if plan.df.get(t) and t not in plan.searched]
    if skipped:
        _score_skipped(searcher, cands, plan, skipped, uni, tuning)
    top = max(c.bm25 for c in cands) or 1.0
    for c in cands:
        c.score = c.bm25 / top
    if tuning.neighbour:
        _add_neighbours(cands, tuning.neighbour)
    if stats is not None:
        _apply_heat(cands, stats, tuning.heat_gain)
    cands.sort(key=lambda c: (-c.score, c.fields["id"]))
    if not plan.terms:
        return cands[:limit]
    # terms no memory contains (e.g. bigrams across a Chinese word boundary) say nothing
    # about relevance: leave them out of the share
    idf = {t: plan.idf(t) for t in plan.terms if plan.df.get(t)}
    if not idf:
        return []
    floor = min(tuning.floor, 1.5 / len(idf))
    if max(_coverage(c, idf, uni) for c in cands[:limit]) < floor:
        return []
    kept = []
    for c in cands:
        if _coverage(c, idf, uni) >= floor * tuning.hit_floor:
            kept.append(c)
            if len(kept) >= limit:
                break
    return kept


def _score_skipped(searcher, cands: list[_Cand], plan: _Plan, skipped: list[str],
                   unigrams: bool, tuning: Tuning) -> None:
    """Add the BM25 share of the common terms that were not searched, for the pool only."""
    k1, b = tuning.k1, tuning.b
    avg = max(searcher.avg_field_length(SCORED, 1.0), 1.0)
    for c in cands:
        seen = _seen(c, unigrams)
        length = searcher.doc_field_length(c.docnum, SCORED, 1) or 1
        norm = k1 * (1.0 - b + b * length / avg)
        for t in skipped:
            tf = seen.get(t, 0)
            if tf:
                c.bm25 += plan.terms[t] * plan.idf(t) * tf * (k1 + 1.0) / (tf + norm)


def _add_neighbours(cands: list[_Cand], weight: float) -> None:
    """Memories of one session support each other (a question's answer spans turns)."""
    best: dict[str, list[float]] = {}
    for c in cands:
        g = c.fields.get("group")
        if g:
            best.setdefault(g, []).append(c.score)
    for c in cands:
        g = c.fields.get("group")
        if not g:
            continue
        others = sorted(best[g], reverse=True)
        others.remove(c.score)
        if others:
            c.score += weight * others[0]


def _apply_heat(cands: list[_Cand], stats: Stats, gain: float) -> None:
    created = {c.fields["id"]: c.fields.get("created") for c in cands}
    heat = stats.heat(list(created), created=created)
    for c in cands:
        h = heat.get(c.fields["id"], 0.0)
        c.score *= 1.0 + gain * (1.0 - math.exp(-h))


# ------------------------------------------------------------------------ results ---

def _hit(c: _Cand, query: str) -> Hit:
    f = c.fields
    meta = f.get("meta") or {}
    return Hit(id=f["id"], score=round(c.score, 6), path=f.get("path", ""), layer=f.get("layer", ""),
               subject=f.get("subject", ""), summary=f.get("summary", ""),
               snippet=snippet(f.get("body") or f.get("summary", ""), query),
               status=f.get("status", ""), kind=f.get("kind", ""), fact=f.get("fact") or None,
               tags=tuple(meta.get("tags", ())), created=f.get("created"))


_EMPHASIS_RE = re.compile(r"\*\*|__")
_WORD_RE = re.compile(rf"[{text.CJK}]+|[^\W_]+", re.UNICODE)


def snippet(body: str, query: str, width: int = 160) -> str:
    """A short window of ``body`` around the first match, matches wrapped in ``**``."""
    wanted = set(text.terms(query))
    body = _EMPHASIS_RE.sub("", body or "")  # markdown emphasis would clash with ours
    if not body:
        return ""
    spans = []
    for m in _WORD_RE.finditer(body):
        tok = m.group().lower()
        if text.is_cjk(tok):
            for i in range(len(tok) - 1):
                if tok[i:i + 2] in wanted:
                    spans.append((m.start() + i, m.start() + i + 2))
        elif text.stem(tok) in wanted:
            spans.append((m.start(), m.end()))
    start = max(spans[0][0] - width // 3, 0) if spans else 0
    end = min(start + width, len(body))
    out, pos = [], start
    for a, b in _merge(spans):
        if a < start or b > end:
            continue
        out += [body[pos:a], "**", body[a:b], "**"]
        pos = b
    out.append(body[pos:end])
    text_ = "".join(out).replace("\n", " ").strip()
    return ("…" if start > 0 else "") + text_ + ("…" if end < len(body) else "")


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged
