"""Writing Whoosh segments: the bulk builder of a full rebuild and the merge policy of updates.

Whoosh's internals are used in four modules, each naming the ones it relies on: this one
(writing segments), :mod:`memrepo.retrieval.collect` (reading posting blocks and field
lengths), :mod:`memrepo.retrieval.lookups` (reading term tables and stored fields) and
:mod:`memrepo.retrieval.index` (an open searcher's term lookups remembered and read by
position); which is why ``whoosh3`` is pinned exactly (``==3.54.0`` in pyproject.toml). A rebuild replaces ``SegmentWriter.pool`` with an in-memory
pool (the attribute and the 5-tuple ``add``/``iter_postings``/``save``/``cleanup`` protocol
of ``whoosh.writing.PostingPool``), writes each segment with ``SegmentWriter(ix, _lk=False,
compound=False)`` in forked processes, and commits them all with the parent writer's
``_close_segment()`` / ``_commit_toc(segments)`` / ``_finish()``. A segment's documents are
added as ``SegmentWriter.add_document`` adds them (``perdocwriter``, ``_check_fields``,
``docnum``; :func:`_add_document`) and its postings written through the field writer's
``start_field``/``start_term``/``finish_term`` with ``W3PostingsWriter``'s block buffer
(``_ids``, ``_weights``, ``_values``, ``_maxweight``, ``_minlength``, ``_maxlength``,
``_write_block``; :func:`_finalize`). The merge
policy (``mergetype=``) reads segments with ``whoosh.reading.SegmentReader``. Any of these
may change in another release: upgrade the pin only with ``tests/test_index.py`` green (it
compares a bulk segment's files with Whoosh's own byte for byte, rebuilds serially and in
parallel, updates and merges).
"""
from __future__ import annotations

import contextlib
import gc
import itertools
import math
from collections.abc import Callable, Iterable, Iterator

from memrepo.retrieval.fields import IndexDoc, doc_fields


class BuildError(Exception):
    """A build process died or failed (the index maps it into its own errors)."""


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
        """Whoosh's one-posting call (a 5-tuple)."""
        fieldname, tbytes, docnum, weight, vbytes = item
        if docnum >= 0:  # (below 0: a spelling word, not a posting; no field here has them)
            self.add_field(fieldname, docnum, ((tbytes, 1, weight, vbytes),))

    def add_field(self, fieldname: str, docnum: int, items) -> int:
        """A document's postings in one field, as ``field.index()`` gives them (term bytes,
        frequency, weight, value bytes); returns the sum of the frequencies."""
        terms = self._terms.get(fieldname)
        if terms is None:
            terms = self._terms[fieldname] = {}
            self.fieldnames.add(fieldname)
        array, other = self._array, self._other
        length = 0
        for tbytes, freq, weight, vbytes in items:
            length += freq
            post = terms.get(tbytes)
            if post is None:
                post = terms[tbytes] = (array("i"), array("f"), array("i"))
            post[0].append(docnum)
            post[1].append(weight)
            if not vbytes:
                post[2].append(-1)
            elif len(vbytes) == 4 and vbytes[0] < 128:
                post[2].append(int.from_bytes(vbytes, "big"))
            else:
                post[2].append(-2)
                other[(fieldname, tbytes, docnum)] = vbytes
        return length

    def term_postings(self):
        """Per field (in order): (fieldname, its terms in order), each term as (term bytes,
        docnums, weights, value bytes) — ``b""`` for a posting without a value. Lazy: only one
        term's value bytes exist at a time (a field's all at once: a 20k-memory segment's peak
        RSS 265 instead of 165 MB, ~250 MB more per build process at 100k)."""
        for fieldname in sorted(self._terms):
            yield fieldname, self._field_terms(fieldname)

    def _field_terms(self, fieldname: str):
        other = self._other
        for tbytes, (docs, weights, vals) in sorted(self._terms[fieldname].items()):
            yield tbytes, docs, weights, [b"" if v == -1 else (v.to_bytes(4, "big") if v >= 0 else other[(fieldname, tbytes, d)])
                                          for d, v in zip(docs, vals)]

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
    writer.pool = _MemoryPool()  # type: ignore[assignment]  # a PostingPool by its protocol (see above)
    for i, doc in enumerate(docs, 1):
        _add_document(writer, doc_fields(doc, weights))
        if tick and i % 1000 == 0:
            tick(1000)
    return _finalize(writer), writer.docnum


def _add_document(writer, fields: dict) -> None:
    """``writer.add_document(**fields)`` with each field's postings put into the bulk pool in
    one call (Whoosh's passes every posting to ``pool.add`` as a 5-tuple): the same pool, the
    same per-document records. Fields it does not model (boosts, spelling, term vectors, a
    custom stored value) go Whoosh's way."""
    schema = writer.schema
    if any(name.startswith("_") for name in fields) or any(
            schema[name].separate_spelling() or schema[name].vector for name in fields if name in schema):
        writer.add_document(**fields)
        return
    writer._check_state()
    names = sorted(fields)
    writer._check_fields(schema, names)
    perdoc, pool, docnum = writer.perdocwriter, writer.pool, writer.docnum
    perdoc.start_doc(docnum)
    try:
        for name in names:
            value = fields[name]
            if value is None:
                continue
            field = schema[name]
            length = 0
            if field.indexed:
                counted = pool.add_field(name, docnum, field.index(value))
                if field.scorable:
                    length = counted
            perdoc.add_field(name, field, value if field.stored else None, length)
            if field.column_type:
                perdoc.add_column_value(name, field.column_type, field.to_column_value(value))
    except ValueError:
        perdoc.cancel_doc()
        raise
    perdoc.finish_doc()
    writer._added = True
    writer.docnum += 1


def _finalize(writer):
    """``writer._finalize_segment()`` with the postings handed to Whoosh's postings writer a
    block at a time instead of one posting per call (Whoosh's ``FieldWriter.add_postings``
    costs ~10 Python calls a posting, ~150 postings a memory). The blocks, term infos and
    files are byte for byte those Whoosh writes (``tests/test_index.py`` compares them)."""
    from array import array

    from whoosh.codec.whoosh3 import W3Codec
    if not isinstance(writer.codec, W3Codec):   # the block buffer below is W3PostingsWriter's
        return writer._finalize_segment()
    pool = writer.pool
    writer.perdocwriter.close()
    lengths = writer.per_document_reader() if writer.codec.length_stats else None
    fieldwriter = writer.fieldwriter
    try:
        for fieldname, terms in pool.term_postings():
            fieldwriter.start_field(fieldname, writer.schema[fieldname])
            field_lengths = _field_lengths(lengths, fieldname, writer.docnum)
            limit = fieldwriter._postwriter._blocklimit
            for tbytes, docs, weights, values in terms:
                fieldwriter.start_term(tbytes)
                block = fieldwriter._postwriter
                start, n = 0, len(docs)
                while True:
                    end = min(n, start + limit)
                    # as add_posting leaves the block: ids, weights, the non-empty values and
                    # the statistics (a length of 0 or a missing one does not count)
                    block._ids = array("I", docs[start:end])
                    block._weights = weights[start:end]
                    block._values = [v for v in values[start:end] if v]
                    top = max(block._weights)
                    block._maxweight = top if top > 0 else 0
                    found = [x for x in (field_lengths[d] for d in docs[start:end]) if x] if field_lengths else ()
                    block._minlength = min(found) if found else None
                    block._maxlength = max(found) if found else 0
                    if end == n:  # the last block: finish_postings writes it (or inlines it)
                        break
                    block._write_block()  # a full block with more to come, as add_posting writes it
                    start = end
                fieldwriter.finish_term()
            fieldwriter.finish_field()
        fieldwriter.close()
    finally:
        if lengths:
            lengths.close()
    writer._close_segment()
    writer._assemble_segment()
    return writer.get_segment()


def _field_lengths(lengths, fieldname: str, count: int) -> list[int] | None:
    """Each document's length in ``fieldname`` as Whoosh's writer reads it for a posting
    (0 where it has none); None when no length is kept for the field."""
    if lengths is None:
        return None
    get = lengths.doc_field_length_reader(fieldname)
    return [get(d) or 0 for d in range(count)]


def build(ix, docs: Iterator[IndexDoc], weights: dict[str, float], procs: int,
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
        with _no_cycle_collection():
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


@contextlib.contextmanager
def _no_cycle_collection():
    """Python's cycle collector paused while a build fills its pool: its full passes walk
    every object kept so far again and again (the pool's per-term tuples, the documents read),
    a share that grows with the build (4 % of a 50k-memory segment's CPU: 3,898 collections,
    5.4 s); the build makes no garbage cycles it needs collected."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


BATCH = 200  # documents per message to a build process


def _parallel_segments(ix, docs: Iterator[IndexDoc], weights, procs, tick) -> tuple[list, int]:
    """Stream ``docs`` in batches to ``procs`` forked builders: the caller's reading of the
    memory files (this process) overlaps with their indexing (the other cores)."""
    import pickle

    from memrepo.store import processes
    workers = []
    try:
        for _ in range(procs):
            jobs_recv, jobs_send = processes.one_way_pipe()
            res_recv, res_send = processes.one_way_pipe()
            proc = processes.fork(_segment_worker, (ix, jobs_recv, weights, res_send))
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
            raise BuildError("an index build process died") from None
        segments = []
        for _, _, res_recv in workers:
            try:
                kind, value = res_recv.recv()
            except EOFError:
                raise BuildError("an index build process died") from None
            if kind == "error":
                raise BuildError(f"index build failed: {value}")
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

    try:  # (forked inside build's _no_cycle_collection: the collector is off here too)
        results.send(("segment", pickle.dumps(_segment_of(ix, received(), weights))))
    except BaseException as exc:  # report, never hang the parent
        results.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        results.close()  # multiprocessing ends the forked child when this returns



MERGE_FANOUT = 6


def tiered_merge(writer, segments):
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


