"""Candidate collection: the top documents of a few weighted terms, scored as Whoosh would.

A free-text query is an OR of a few budgeted terms (see :class:`~memrepo.retrieval.ranking.Tuning`,
``postings_budget``). Whoosh scores such a query through a tree of matcher objects, a
dozen Python calls per posting (~25 us each at 10k memories: most of a warm search). Here each
term's postings are read a block at a time and scored with the same BM25F formula, idf and
lengths the searcher's weighting uses, so the candidates and their scores are Whoosh's own
(``tests/test_collect.py`` compares them), in a fraction of the time: one by one for a few
postings, skipping what cannot reach the top when one common term meets rare ones (MaxScore
bounds), in bulk with numpy for common words (see :func:`top_docs`). Advanced (Whoosh
syntax) queries still go through Whoosh.
"""
from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cache
from heapq import nlargest
from itertools import accumulate, chain, compress, repeat
from operator import add
from typing import Iterable, Iterator

_LENGTHS = "_memrepo_lengths"  # per-searcher cache of decoded field lengths
_NORMS = "_memrepo_norms"      # per-searcher cache of BM25's length norms per field


@dataclass
class Work:
    """What :func:`top_docs` read: posting blocks decoded, and those it could skip unread, and
    how it scored them: ``"all"`` (a few postings), ``"bounded"`` (one common term) or ``"arrays"``."""
    way: str = ""
    blocks_read: int = 0
    blocks_skipped: int = 0
    postings_read: int = 0
    postings_skipped: int = 0


_MARGIN = 1e-6  # relative slack on every bound test (see top_docs)
_SMALL = 4096   # postings in all up to which scoring them one by one is as fast as any way
_SKEW = 8       # bounds when the commonest term has this many times the others' postings


def top_docs(searcher, terms: Iterable[tuple[str, str, float]], field_b: dict[str, float], k1: float,
             limit: int, allow: set[int] | None = None, deny: set[int] | None = None,
             work: Work | None = None) -> list[tuple[int, float]]:
    """``(docnum, score)`` of the best ``limit`` documents matching any of ``terms``
    (``(field, text, boost)``), best first, ties by docnum: what ``searcher.search(Or(terms),
    limit=limit, filter=allow, mask=deny)`` returns under BM25F with ``field_b`` (B per field,
    default under ``""``) and ``k1``. ``work`` (optional) counts the blocks read and skipped.

    Exact, without scoring every posting (MaxScore with block-max bounds): the terms are read
    rarest first, and once ``limit`` documents are known, ``theta`` (the worst of the best
    ``limit`` scores so far: a lower bound of the final one) rules out what cannot reach it.
    A posting block's header bounds its scores (its highest weight over its shortest length);
    a document it could bring in would score at most that plus the bounds of the terms still
    to read. When that is below ``theta`` the block only completes the documents already
    found, and is not decoded at all when none of those can still reach ``theta`` (they are
    dropped). Every bound test has a relative slack of ``_MARGIN`` (weights are stored as
    float32, and sums in another order differ in the last bits), so a document that might tie
    the last place is always scored. The scores returned are the per-term scores summed in
    the order of ``terms``: what :func:`scores_of` gives, to the last bit.

    Bounds only pay when one term is common and the others are rare but in ``limit``
    documents or more: their documents then bound what the common term can add, and its
    blocks are skipped or only complete them. Otherwise (two common terms or more, the
    commonest in fewer than ``_SKEW`` times the others' postings: a query of common words;
    or too few documents to set ``theta``) the block bounds stay above ``theta`` and every
    posting is read anyway, so all are scored in bulk with numpy (:func:`_score_arrays`, the
    same floats); a few postings in all (up to ``_SMALL``) are scored one by one
    (:func:`_score_all`). Measured at 100k: bench/RESULTS.md, "Candidate collection at 100k"."""
    if limit <= 0:
        return []
    work = work if work is not None else Work()
    terms = list(terms)
    slots = [(i, segs) for i, segs in ((i, list(_segments(searcher, [term], field_b, k1)))
                                       for i, term in enumerate(terms)) if segs]
    sizes = [sum(seg.df for seg in segs) for _, segs in slots]
    if sum(sizes) <= _SMALL:
        work.way = "all"
        return _score_all([seg for _, segs in slots for seg in segs], limit, allow, deny)
    others = sum(sizes) - max(sizes)
    # bounds need a theta, so at least ``limit`` documents from the rarer terms
    work.way = "bounded" if limit <= others and max(sizes) > _SKEW * others else "arrays"
    if work.way == "arrays":
        # a block's bound (its highest weight over its shortest length, two different postings)
        # stays above theta: at 100k not one block of two common terms could be skipped even
        # knowing the final theta
        return _score_arrays(searcher.get_parent().doc_count_all(), [seg for _, segs in slots for seg in segs],
                             limit, allow, deny, work)
    # bounds need scores >= 0; otherwise (never with BM25 and a boost >= 0) read everything
    prune = all(seg.idf >= 0 and seg.boost >= 0 for _, segs in slots for seg in segs)
    # rarest first: the cheap terms are read in full and set theta for the common ones
    slots.sort(key=lambda slot: (sum(seg.df for seg in slot[1]), -max(seg.bound for seg in slot[1]), slot[0]))
    reads: list[list[_Read]] = [[] for _ in terms]   # per term: what was read of it, per segment
    partial: dict[int, dict[int, float]] = {}        # per segment: docnum -> score so far
    # the bound of what the terms after each one add in each segment, summed from the last
    # (so, to the last bit, it never grows from one term to the next)
    rests: list[dict[int, float]] = [{}]
    for _, segs in reversed(slots[1:]):
        rest = dict(rests[0])
        for seg in segs:
            rest[seg.offset] = seg.bound + rest.get(seg.offset, 0.0)
        rests.insert(0, rest)
    theta = -math.inf
    for (index, segs), rest in zip(slots, rests):
        for seg in segs:
            reads[index].append(_read_term(seg, partial.setdefault(seg.offset, {}), theta, rest.get(seg.offset, 0.0),
                                           allow, deny, work))
        if prune:
            theta = _kth(partial, limit)
    best = []
    cut = theta * (1 - _MARGIN)
    for part in partial.values():
        for docnum in compress(part.keys(), map(cut.__le__, part.values())):
            exact = 0.0
            for term_reads in reads:
                exact += sum(read.score(docnum) for read in term_reads)
            best.append((docnum, exact))
    best.sort(key=lambda item: (-item[1], item[0]))
    return best[:limit]


def _score_all(segments: list[_Segment], limit: int, allow: set[int] | None,
               deny: set[int] | None) -> list[tuple[int, float]]:
    """:func:`top_docs` by scoring every posting (faster for a few postings)."""
    scores: dict[int, float] = {}
    for seg in segments:
        ids, weights = seg.postings()
        if seg.deleted:
            kept = [(d, w) for d, w in zip(ids, weights) if d not in seg.deleted]
            ids, weights = [d for d, _ in kept], [w for _, w in kept]
        _accumulate(scores, seg, ids, weights)
    items: Iterable[tuple[int, float]] = scores.items()
    if allow is not None:
        items = [(d, s) for d, s in items if d in allow]
    if deny:
        items = [(d, s) for d, s in items if d not in deny]
    return nlargest(limit, items, key=lambda item: (item[1], -item[0]))


def _score_arrays(n: int, segments: list[_Segment], limit: int, allow: set[int] | None,
                  deny: set[int] | None, work: Work) -> list[tuple[int, float]]:
    """:func:`top_docs` by scoring every posting with numpy: the same float operations in the
    same order as :func:`_score_all` (IEEE double arithmetic, element by element; each
    document's scores added in the order of the terms), a few times faster on common terms."""
    import numpy as np
    total = np.zeros(n)
    found = np.zeros(n, dtype=bool)
    for seg in segments:
        id_blocks, weight_blocks = [], []
        for ids, weights in _Blocks(seg).each():
            id_blocks.append(ids)
            weight_blocks.append(weights)
            work.blocks_read += 1
            work.postings_read += len(ids)
        ids = np.fromiter(chain.from_iterable(id_blocks), np.int64)
        tf = np.fromiter(chain.from_iterable(weight_blocks), np.float64)
        if seg.deleted:
            kept = ~np.isin(ids, np.fromiter(seg.deleted, np.int64))
            ids, tf = ids[kept], tf[kept]
        codes = np.frombuffer(seg.codes, np.uint8)
        s = seg.idf * ((tf * seg.k1p) / (tf + np.asarray(seg.norm)[codes[ids]]))
        if seg.boost != 1.0:
            s = s * seg.boost
        docnums = ids + seg.offset
        total[docnums] += s   # a term's postings name each document once
        found[docnums] = True
    if allow is not None:
        allowed = np.zeros(n, dtype=bool)
        allowed[np.fromiter((d for d in allow if 0 <= d < n), np.int64)] = True
        found &= allowed
    if deny:
        found[np.fromiter((d for d in deny if 0 <= d < n), np.int64)] = False
    docnums = np.flatnonzero(found)
    if len(docnums) > limit:  # the limit-th best score, and every document that ties it
        scores = total[docnums]
        docnums = docnums[scores >= np.partition(scores, len(scores) - limit)[len(scores) - limit]]
    scores = total[docnums]
    order = np.lexsort((docnums, -scores))[:limit]
    return [(int(docnums[i]), float(scores[i])) for i in order]


def _accumulate(scores: dict[int, float], seg: _Segment, ids, weights) -> None:
    """Add one term's BM25F score of each posting (segment-local ``ids``) to ``scores``."""
    idf, norm, codes, boost, offset, k1p, get = seg.idf, seg.norm, seg.codes, seg.boost, seg.offset, seg.k1p, scores.get
    for docnum, tf in zip(ids, weights):
        s = idf * ((tf * k1p) / (tf + norm[codes[docnum]]))
        if boost != 1.0:
            s = s * boost
        docnum += offset
        scores[docnum] = get(docnum, 0.0) + s


def _kth(partial: dict[int, dict[int, float]], limit: int) -> float:
    """The ``limit``-th best score so far (-inf while fewer documents are known)."""
    if sum(map(len, partial.values())) < limit:
        return -math.inf
    return nlargest(limit, chain.from_iterable(part.values() for part in partial.values()))[-1]


def _read_term(seg: _Segment, partial: dict[int, float], theta: float, rest: float,
               allow: set[int] | None, deny: set[int] | None, work: Work) -> _Read:
    """Add one term's scores in one segment to ``partial``: every posting of a block that may
    bring in a new document (its bound + ``rest`` may reach ``theta``); from any other block
    only the known documents that can still reach ``theta``, and the other known documents in
    its range leave ``partial``."""
    read = _Read(seg)
    scores, codes, offset, get = read.scores, seg.codes, seg.offset, partial.get
    added: dict[int, float] = {}
    dropped: list[int] = []
    known: list[int] | None = None   # the documents in partial, sorted
    low = -1                         # a block holds the segment's documents low+1 .. last
    blocks = _Blocks(seg)
    for n, last, bound in blocks:
        if (bound + rest) * (1 + _MARGIN) >= theta:
            ids, weights = read.add(last, *blocks.read())
            work.blocks_read += 1
            work.postings_read += n
            _accumulate(partial, seg, ids, weights)
        else:
            if known is None:
                known = sorted(partial)
            inside = known[bisect_right(known, low + offset):bisect_right(known, last + offset)]
            need = [d for d in inside if (partial[d] + bound + rest) * (1 + _MARGIN) >= theta]
            if len(need) < len(inside):
                dropped.extend(set(inside).difference(need))
            if need:
                ids, weights = read.add(last, *blocks.read())
                work.blocks_read += 1
                work.postings_read += n
                for d in need:
                    i = bisect_left(ids, d - offset)
                    if i < n and ids[i] == d - offset:
                        added[d] = scores[weights[i], codes[d - offset]]
            else:
                work.blocks_skipped += 1
                work.postings_skipped += n
        low = last
    partial.update(zip(added, map(add, map(get, added, repeat(0.0)), added.values())))
    for d in dropped:
        del partial[d]
    for d in _ineligible(partial, seg, allow, deny):
        del partial[d]
    return read


def _ineligible(partial: dict[int, float], seg: _Segment, allow: set[int] | None, deny: set[int] | None) -> set[int]:
    """The documents of ``partial`` deleted in the segment, outside ``allow`` or in ``deny``."""
    out: set[int] = set()
    if seg.deleted:
        out |= partial.keys() & {d + seg.offset for d in seg.deleted}
    if allow is not None:
        out |= partial.keys() - allow
    if deny:
        out |= partial.keys() & deny
    return out


class _Read:
    """The blocks read of one term in one segment, to score any document in them again."""

    def __init__(self, seg: _Segment) -> None:
        self.seg = seg
        self.scores = _TermScores(seg)
        self.lasts: list[int] = []
        self.blocks: list[tuple] = []

    def add(self, last: int, ids, weights):
        self.lasts.append(last)
        self.blocks.append((ids, weights))
        return ids, weights

    def score(self, docnum: int) -> float:
        """The term's score of ``docnum`` (0.0 when it is not in the blocks read)."""
        local = docnum - self.seg.offset
        b = bisect_left(self.lasts, local)
        if local < 0 or b == len(self.lasts):
            return 0.0
        ids, weights = self.blocks[b]
        i = bisect_left(ids, local)
        if i == len(ids) or ids[i] != local:
            return 0.0
        return self.scores[weights[i], self.seg.codes[local]]


class _TermScores(dict):
    """``(weight, length code) -> score`` of one term in one segment, each pair computed once
    (:meth:`_Segment.score`)."""

    def __init__(self, seg: _Segment) -> None:
        super().__init__()
        self.seg = seg

    def __missing__(self, key: tuple[float, int]) -> float:
        s = self[key] = self.seg.score(*key)
        return s


def scores_of(searcher, terms: Iterable[tuple[str, str, float]], field_b: dict[str, float], k1: float,
              docnums: Iterable[int], work: Work | None = None) -> dict[int, float]:
    """The scores :func:`top_docs` gives the few ``docnums`` (those matching no term are left
    out), found by binary search in the posting blocks that can hold them (their headers give
    each block's last docnum) instead of scoring every posting (the hybrid ranking's
    vector-led candidates: about 3 ms less per query on LoCoMo; a common term's other blocks
    are not decoded)."""
    work = work if work is not None else Work()
    want = sorted(set(docnums))
    out: dict[int, float] = {}
    if not want:
        return out
    for seg in _segments(searcher, terms, field_b, k1, bounds=False):
        local = [d - seg.offset for d in want[bisect_left(want, seg.offset):bisect_left(want, seg.end)]]
        if not local:
            continue
        blocks, j = _Blocks(seg), 0   # local[j] is the next document to look for
        for n, last in blocks.headers():
            if j == len(local):
                break
            if local[j] > last:
                work.blocks_skipped += 1
                work.postings_skipped += n
                continue
            ids, weights = blocks.read()
            work.blocks_read += 1
            work.postings_read += n
            while j < len(local) and local[j] <= last:
                docnum = local[j]
                j += 1
                i = bisect_left(ids, docnum)
                if i == len(ids) or ids[i] != docnum or docnum in seg.deleted:
                    continue
                s = seg.score(weights[i], seg.codes[docnum])
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
    k1p: float                # k1 + 1
    df: int = 0               # postings in the segment (deleted documents included)
    bound: float = 0.0        # no posting of the term in the segment scores more

    def postings(self) -> tuple[list[int], list[float]]:
        return _postings(self.reader.postings(self.field, self.btext))  # type: ignore[attr-defined]

    def score(self, tf: float, code: int) -> float:
        """The term's BM25F score of a posting of weight ``tf`` in a document of length code
        ``code``: the expression :func:`_accumulate` evaluates inline (so the floats agree to
        the last bit)."""
        s = self.idf * ((tf * self.k1p) / (tf + self.norm[code]))
        return s * self.boost if self.boost != 1.0 else s

    def bound_of(self, max_weight: float, min_length: int | None) -> float:
        """The highest score of postings whose weights are at most ``max_weight`` and whose
        documents are at least ``min_length`` long (BM25 grows with the weight and falls
        with the length)."""
        from whoosh.util.numeric import length_to_byte
        return self.score(max_weight, length_to_byte(min_length or 0))


def _segments(searcher, terms: Iterable[tuple[str, str, float]], field_b: dict[str, float],
              k1: float, bounds: bool = True) -> Iterator[_Segment]:
    """Each query term in each segment that holds it, with the term's idf and length norms
    (the norm of each of the 256 encoded lengths computed as Whoosh computes it per posting)
    and, with ``bounds``, its postings and score bound in the segment (one more term lookup)."""
    top = searcher.get_parent()
    for field, text, boost in terms:
        btext = top.schema[field].to_bytes(text)
        if (field, btext) not in top.reader():
            continue
        idf = top.idf(field, btext)
        norm = _norms(top, field, field_b.get(field, field_b[""]), k1)
        for leaf, offset in top.leaf_searchers():
            reader = leaf.reader()
            if (field, btext) not in reader:
                continue
            deleted = reader.deleted_docs_set if reader.has_deletions() else frozenset()
            seg = _Segment(reader, btext, field, offset, offset + reader.doc_count_all(), deleted,
                           _length_codes(top, reader, field), idf, norm, boost, k1 + 1)
            if bounds:
                info = reader.term_info(field, btext)
                seg.df, seg.bound = info.doc_frequency(), seg.bound_of(info.max_weight(), info.min_length())
            yield seg


def _norms(top, field: str, b: float, k1: float) -> list[float]:
    """BM25's length part of the denominator for each of the 256 length codes of ``field``
    (the same for every term of a searcher: computed once)."""
    cache = top.__dict__.setdefault(_NORMS, {})
    key = (field, b, k1)
    norm = cache.get(key)
    if norm is None:
        avgfl = top.avg_field_length(field) or 1
        norm = cache[key] = [k1 * ((1 - b) + b * fl / avgfl) for fl in _length_table()]
    return norm


class _Blocks:
    """A term's postings in one segment, a block at a time: iterating gives each block's
    ``(postings, last docnum, score bound)`` from its header, and :meth:`read` decodes the
    current block's docnums and weights (whoosh3 blocks hold up to 128 postings; any other
    posting list is one block bounded by the term's bound)."""

    def __init__(self, seg: _Segment) -> None:
        from whoosh.matching.wrappers import FilterMatcher
        matcher = seg.reader.postings(seg.field, seg.btext)  # type: ignore[attr-defined]
        if isinstance(matcher, FilterMatcher):  # the segment's deletions: left out by the caller
            matcher = matcher.child
        self.seg, self.matcher = seg, matcher
        self.whoosh3 = all(hasattr(matcher, a) for a in ("_read_ids", "_read_weights", "_next_block",
                                                         "_blocklength", "_maxid", "_maxweight", "_minlength",
                                                         "_read_data", "_byteids"))
        self.all: tuple[list[int], list[float]] | None = None

    def __iter__(self) -> Iterator[tuple[int, int, float]]:
        m, seg = self.matcher, self.seg
        if not self.whoosh3:
            self.all = _postings(m)
            if self.all[0]:
                yield len(self.all[0]), self.all[0][-1], seg.bound
            return
        while m.is_active():
            yield m._blocklength, m._maxid, min(seg.bound, seg.bound_of(m._maxweight, m._minlength))
            m._next_block()

    def headers(self) -> Iterator[tuple[int, int]]:
        """Each block's ``(postings, last docnum)`` from its header alone (no bound computed);
        :meth:`read` decodes the current one."""
        m = self.matcher
        if not self.whoosh3:
            self.all = _postings(m)
            if self.all[0]:
                yield len(self.all[0]), self.all[0][-1]
            return
        while m.is_active():
            yield m._blocklength, m._maxid
            m._next_block()

    def each(self) -> Iterator[tuple]:
        """Every block's docnums and weights, decoded (no bounds needed)."""
        m = self.matcher
        if not self.whoosh3:
            self.all = _postings(m)
            yield self.all
            return
        while m.is_active():
            yield self.read()
            m._next_block()

    def read(self):
        if self.all is not None:
            return self.all
        m = self.matcher
        if m._byteids:
            m._read_ids()
            m._read_weights()
            return m._ids, m._weights
        m._read_data()
        m._read_weights()
        return tuple(accumulate(m._data[0])), m._weights  # the ids are stored as gaps


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


def field_lengths(searcher, field: str, docnums: Iterable[int]) -> dict[int, int]:
    """The length of ``field`` in each of ``docnums`` as ``searcher.doc_field_length`` decodes
    it (0 where it has none), from the length codes read once per searcher (the re-rank's
    BM25 of the common terms left out of the search: one column read per candidate before)."""
    top = searcher.get_parent()
    leaves = top.leaf_searchers()
    offsets = [offset for _, offset in leaves]
    table = _length_table()
    out = {}
    for docnum in docnums:
        leaf, offset = leaves[bisect_right(offsets, docnum) - 1]
        out[docnum] = table[_length_codes(top, leaf.reader(), field)[docnum - offset]]
    return out


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
