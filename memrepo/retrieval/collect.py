"""Candidate collection: the top documents of a few weighted terms, scored as Whoosh would.

A free-text query is an OR of a few budgeted terms (see :class:`~memrepo.retrieval.ranking.Tuning`,
``postings_budget``). Whoosh scores such a query through a tree of matcher objects, a
dozen Python calls per posting (~25 us each at 10k memories: most of a warm search). Here each
term's postings are read a block at a time and scored in one loop with the same BM25F
formula, idf and lengths the searcher's weighting uses, so the candidates and their scores
are Whoosh's own (``tests/test_collect.py`` compares them), in a fraction of the time.
Advanced (Whoosh syntax) queries still go through Whoosh.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from functools import cache
from heapq import nlargest
from typing import Iterable, Iterator

_LENGTHS = "_memrepo_lengths"  # per-searcher cache of decoded field lengths


def top_docs(searcher, terms: Iterable[tuple[str, str, float]], field_b: dict[str, float], k1: float,
             limit: int, allow: set[int] | None = None, deny: set[int] | None = None) -> list[tuple[int, float]]:
    """``(docnum, score)`` of the best ``limit`` documents matching any of ``terms``
    (``(field, text, boost)``), best first, ties by docnum: what ``searcher.search(Or(terms),
    limit=limit, filter=allow, mask=deny)`` returns under BM25F with ``field_b`` (B per field,
    default under ``""``) and ``k1``."""
    scores: dict[int, float] = {}
    k1p = k1 + 1
    for seg in _segments(searcher, terms, field_b, k1):
        ids, weights = seg.postings()
        if seg.deleted:
            kept = [(d, w) for d, w in zip(ids, weights) if d not in seg.deleted]
            ids, weights = [d for d, _ in kept], [w for _, w in kept]
        idf, norm, codes, boost, offset, get = seg.idf, seg.norm, seg.codes, seg.boost, seg.offset, scores.get
        for docnum, tf in zip(ids, weights):
            s = idf * ((tf * k1p) / (tf + norm[codes[docnum]]))
            if boost != 1.0:
                s = s * boost
            docnum += offset
            scores[docnum] = get(docnum, 0.0) + s
    items: Iterable[tuple[int, float]] = scores.items()
    if allow is not None:
        items = [(d, s) for d, s in items if d in allow]
    if deny:
        items = [(d, s) for d, s in items if d not in deny]
    return nlargest(limit, items, key=lambda item: (item[1], -item[0]))


def scores_of(searcher, terms: Iterable[tuple[str, str, float]], field_b: dict[str, float], k1: float,
              docnums: Iterable[int]) -> dict[int, float]:
    """The scores :func:`top_docs` gives the few ``docnums`` (those matching no term are left
    out), found by binary search in each term's postings instead of scoring them all (the
    hybrid ranking's vector-led candidates: about 3 ms less per query on LoCoMo)."""
    want = sorted(set(docnums))
    out: dict[int, float] = {}
    if not want:
        return out
    k1p = k1 + 1
    for seg in _segments(searcher, terms, field_b, k1):
        local = [d - seg.offset for d in want if seg.offset <= d < seg.end]
        if not local:
            continue
        ids, weights = seg.postings()
        for docnum in local:
            i = bisect_left(ids, docnum)
            if i == len(ids) or ids[i] != docnum or docnum in seg.deleted:
                continue
            tf = weights[i]
            # the expression top_docs evaluates, so the sums agree to the last bit
            s = seg.idf * ((tf * k1p) / (tf + seg.norm[seg.codes[docnum]]))
            if seg.boost != 1.0:
                s = s * seg.boost
            out[docnum + seg.offset] = out.get(docnum + seg.offset, 0.0) + s
    return out


@dataclass
class _Segment:
    """One query term in one index segment that holds it: what scoring its postings needs."""
    reader: object
    btext: bytes
    field: str
    offset: int               # the segment's first document number in the whole index
    end: int                  # one past its last
    deleted: frozenset[int] | set[int]
    codes: bytes              # docnum -> length code of ``field``
    idf: float
    norm: list[float]         # length code -> the length part of BM25's denominator
    boost: float

    def postings(self) -> tuple[list[int], list[float]]:
        return _postings(self.reader.postings(self.field, self.btext))  # type: ignore[attr-defined]


def _segments(searcher, terms: Iterable[tuple[str, str, float]], field_b: dict[str, float],
              k1: float) -> Iterator[_Segment]:
    """Each query term in each segment that holds it, with the term's idf and length norms
    (the norm of each of the 256 encoded lengths computed as Whoosh computes it per posting)."""
    top = searcher.get_parent()
    for field, text, boost in terms:
        btext = top.schema[field].to_bytes(text)
        if (field, btext) not in top.reader():
            continue
        b = field_b.get(field, field_b[""])
        avgfl = top.avg_field_length(field) or 1
        idf = top.idf(field, btext)
        norm = [k1 * ((1 - b) + b * fl / avgfl) for fl in _length_table()]
        for leaf, offset in top.leaf_searchers():
            reader = leaf.reader()
            if (field, btext) not in reader:
                continue
            deleted = reader.deleted_docs_set if reader.has_deletions() else frozenset()
            yield _Segment(reader, btext, field, offset, offset + reader.doc_count_all(), deleted,
                           _length_codes(top, reader, field), idf, norm, boost)


def _postings(matcher) -> tuple[list[int], list[float]]:
    """Document numbers and weights of a term's postings in one segment."""
    from whoosh.matching.wrappers import FilterMatcher
    if isinstance(matcher, FilterMatcher):  # the segment's deletions: skipped by the caller
        matcher = matcher.child
    ids: list[int] = []
    weights: list[float] = []
    if all(hasattr(matcher, a) for a in ("_read_ids", "_read_weights", "_next_block", "_blocklength")):
        # whoosh3's on-disk matcher: a whole block (up to 128 postings) at a time
        while matcher.is_active():
            matcher._read_ids()
            matcher._read_weights()
            ids.extend(matcher._ids)
            weights.extend(matcher._weights)
            matcher._next_block()
        return ids, weights
    while matcher.is_active():
        ids.append(matcher.id())
        weights.append(matcher.weight())
        matcher.next()
    return ids, weights


@cache
def _length_table() -> tuple[int, ...]:
    """The field length each of the 256 length codes stands for (Whoosh stores one byte)."""
    from whoosh.util.numeric import byte_to_length
    return tuple(byte_to_length(i) for i in range(256))


def _length_codes(top, reader, field: str):
    """``docnum -> length code`` of ``field`` in one segment (the raw column, read once per
    searcher); a document past the column's end has code 0, as Whoosh reads it."""
    cache = top.__dict__.setdefault(_LENGTHS, {})
    key = (id(reader), field)
    codes = cache.get(key)
    if codes is None:
        codes = cache[key] = _read_length_codes(reader, field)
    return codes


def _read_length_codes(reader, field: str):
    n = reader.doc_count_all()
    column = _length_column(reader, field)
    if column is not None:
        raw = column._dbfile.get(column._basepos, column._count) if column._count else b""
        return bytes(raw) + bytes(max(0, n - len(raw)))
    from whoosh.util.numeric import length_to_byte
    return bytes(length_to_byte(reader.doc_field_length(d, field, 0) or 0) for d in range(n))


def _length_column(reader, field: str):
    """The one-byte-per-document length column of ``field`` in a whoosh3 segment, or None."""
    try:
        from whoosh.codec.whoosh3 import LENGTHS_COLUMN, _lenfield
        column = reader._perdoc._cached_reader(_lenfield(field), LENGTHS_COLUMN)
    except Exception:
        return None
    if column is None or getattr(column, "_fixedlen", None) != 1 or not hasattr(column, "_dbfile"):
        return None
    return column
