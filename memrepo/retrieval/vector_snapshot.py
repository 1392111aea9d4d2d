"""One loaded state of the memory vectors, and the nearest memories within a search's filters.

A :class:`Snapshot` is a snapshot's rows (the matrix memory-mapped; ids sorted, content hashes
and each row's :class:`~memrepo.retrieval.filters.Facets` as columns) plus the delta of the
memories changed since, applied on top. :meth:`Snapshot.top` is exact (one product over the
pool's rows) below ``ann_above`` rows and for narrow pools (a subject, a layer); a wide pool of
a large snapshot is read through its IVF index (:mod:`memrepo.retrieval.ivf`). The delta is
always scanned exactly. How a snapshot is written and read is :mod:`memrepo.retrieval.vectors`.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import numpy as np

from memrepo.retrieval import embed
from memrepo.retrieval.filters import CODED, Facets, Filters
from memrepo.retrieval.ivf import Ivf, unit

NO_DATE = np.iinfo(np.int64).min     # the creation time of a memory without one (no ``since`` admits it)
GATHER_BELOW = 4           # a pool under 1/4 of the rows is gathered before the product, a wider one is not
ANN_ABOVE = 20_000         # default [search] ann_above: snapshots of this many rows get an IVF index


@dataclass(frozen=True)
class Stored:
    """What the vectors keep of a memory besides its vector: the content hash of the text it
    encodes and its facets."""
    hash: str
    facets: Facets


class Snapshot:
    """One loaded state: the snapshot's rows (memory-mapped) plus the delta applied on top."""

    def __init__(self, vecs: np.ndarray, ids: np.ndarray, hashes: np.ndarray, codes: dict[str, np.ndarray],
                 vocab: dict[str, list[str]], matrix_row: np.ndarray | None = None, *,
                 tags: tuple[np.ndarray, np.ndarray, list[str]] | None = None,
                 created: np.ndarray | None = None) -> None:
        self.vecs, self.ids, self.hashes, self.codes, self.vocab = vecs, ids, hashes, codes, vocab
        self.matrix_row = matrix_row  # the matrix row of each id row (None: the same row)
        # each row's tags as codes (row i's: tag_codes[tag_offsets[i]:tag_offsets[i + 1]])
        self.tag_offsets, self.tag_codes, self.tag_vocab = tags or (np.zeros(len(ids) + 1, dtype=np.int64),
                                                                     np.zeros(0, dtype=np.int32), [])
        self.created = created if created is not None else np.full(len(ids), NO_DATE, dtype=np.int64)
        self._tag_code: dict[str, int] | None = None
        self._tag_rows: dict[str, np.ndarray] = {}
        self.alive = np.ones(len(ids), dtype=bool)
        self.delta: dict[str, tuple[Stored | None, np.ndarray | None]] = {}
        self.delta_lines = 0
        self.ivf: Ivf | None = None
        self._delta_block: tuple[list[str], np.ndarray, dict] | None = None
        self.ann_above = ANN_ABOVE
        self._counts: dict[str, np.ndarray] = {}

    @classmethod
    def empty(cls) -> Snapshot:
        return cls(np.zeros((0, embed.DIM), dtype=np.float32), np.array([], dtype="<U1"), np.array([], dtype="<U1"),
                   {k: np.zeros(0, dtype=np.int32) for k in CODED}, {k: [] for k in CODED})

    # ---- lookups -------------------------------------------------------------------
    def _m(self, rows):
        """The matrix rows of these id rows."""
        return rows if self.matrix_row is None else self.matrix_row[rows]

    def _row(self, memory_id: str) -> int:
        i = int(np.searchsorted(self.ids, memory_id))
        return i if i < len(self.ids) and self.ids[i] == memory_id and self.alive[i] else -1

    def vector(self, memory_id: str) -> np.ndarray | None:
        if memory_id in self.delta:
            meta, vec = self.delta[memory_id]
            return None if meta is None else vec
        i = self._row(memory_id)
        return None if i < 0 else self.vecs[self._m(i)]

    def meta_of(self, memory_id: str) -> Stored | None:
        """What is stored of a memory besides its vector (None: no vector)."""
        if memory_id in self.delta:
            return self.delta[memory_id][0]
        i = self._row(memory_id)
        return None if i < 0 else self._row_meta(i)

    def _row_meta(self, i: int) -> Stored:
        tags = tuple(self.tag_vocab[c] for c in self.tag_codes[self.tag_offsets[i]:self.tag_offsets[i + 1]])
        created = int(self.created[i])
        return Stored(str(self.hashes[i]), Facets(**{k: self.vocab[k][self.codes[k][i]] for k in CODED},
                                                  tags=tags, created=None if created == NO_DATE else created))

    def hash_of(self, memory_id: str) -> str | None:
        if memory_id in self.delta:
            meta = self.delta[memory_id][0]
            return None if meta is None else meta.hash
        i = self._row(memory_id)
        return None if i < 0 else str(self.hashes[i])

    def find_hash(self, text_hash: str) -> np.ndarray | None:
        """A stored vector of a text with this hash, live or not (one vectorised compare)."""
        for meta, vec in self.delta.values():
            if meta is not None and meta.hash == text_hash:
                return vec
        if not len(self.hashes):
            return None
        rows = np.flatnonzero(self.hashes == text_hash)
        return self.vecs[self._m(rows[0])] if len(rows) else None

    def cache(self) -> dict[str, np.ndarray]:
        """Every stored vector by content hash (what a rebuild reuses)."""
        out = {str(h): self.vecs[self._m(i)] for i, h in enumerate(self.hashes)}
        out.update({m.hash: v for m, v in self.delta.values() if m is not None})
        return out

    def count(self) -> int:
        live = int(self.alive.sum()) + sum(1 for m, _ in self.delta.values() if m is not None)
        return live

    def items(self) -> Iterator[tuple[str, Stored, np.ndarray]]:
        for i in np.flatnonzero(self.alive):
            yield str(self.ids[i]), self._row_meta(int(i)), self.vecs[self._m(i)]
        for mid, (meta, vec) in self.delta.items():
            if meta is not None and vec is not None:   # (a deletion has neither)
                yield mid, meta, vec

    # ---- delta ---------------------------------------------------------------------
    def override(self, memory_id: str, meta: Stored | None, vec) -> None:
        """A memory's vector changed (``meta`` None: deleted) since the snapshot."""
        i = int(np.searchsorted(self.ids, memory_id))
        if i < len(self.ids) and self.ids[i] == memory_id:
            self.alive[i] = False
        self.delta[memory_id] = (meta, vec)
        self._delta_block = None

    # ---- search --------------------------------------------------------------------
    def mask(self, filters: Filters, rows: np.ndarray | None = None) -> np.ndarray:
        """Which snapshot rows (all, or those in ``rows``) are live and inside the filters
        (the filters' vector-mask adapter; :meth:`_delta_mask` is the delta's)."""
        def of(a: np.ndarray) -> np.ndarray:
            return a if rows is None else a[rows]
        mask = self.alive.copy() if rows is None else self.alive[rows]
        if filters.tag is not None:
            mask &= of(self._tagged(filters.tag))
        if filters.since is not None:
            mask &= of(self.created) >= filters.since
        for field, value in filters.exact:
            try:
                mask &= of(self.codes[field]) == self.vocab[field].index(value)
            except ValueError:
                return np.zeros(len(mask), dtype=bool)
        if filters.statuses is not None:
            allowed = np.array([s in filters.statuses for s in self.vocab["status"]] + [False], dtype=bool)
            mask &= allowed[of(self.codes["status"])]
        return mask

    def _tagged(self, tag: str) -> np.ndarray:
        """Which rows carry ``tag`` (kept for the last few tags asked: the rows do not change)."""
        tagged = self._tag_rows.get(tag)
        if tagged is None:
            if self._tag_code is None:
                self._tag_code = {t: i for i, t in enumerate(self.tag_vocab)}
            tagged = np.zeros(len(self.ids), dtype=bool)
            code = self._tag_code.get(tag)
            if code is not None:
                at = np.flatnonzero(self.tag_codes == code)
                tagged[np.searchsorted(self.tag_offsets, at, side="right") - 1] = True
            if len(self._tag_rows) >= 16:
                self._tag_rows.clear()
            self._tag_rows[tag] = tagged
        return tagged

    def _wide(self, filters: Filters) -> bool:
        """Whether the pool may hold a ``1/GATHER_BELOW`` share of the rows or more (an upper
        bound from each filter's count of rows, without a pass over the rows)."""
        bound = len(self.ids)
        if filters.tag is not None:
            bound = int(self._tagged(filters.tag).sum())
        if filters.since is not None:
            bound = min(bound, int(np.count_nonzero(self.created >= filters.since)))
        asked = [(f, {v}) for f, v in filters.exact]
        if filters.statuses is not None:
            asked.append(("status", set(filters.statuses)))
        for field, values in asked:
            counts = self._counts.get(field)
            if counts is None:
                counts = self._counts[field] = np.bincount(self.codes[field], minlength=len(self.vocab[field]))
            bound = min(bound, sum(int(counts[i]) for i, v in enumerate(self.vocab[field]) if v in values))
        return bound * GATHER_BELOW >= len(self.ids)

    def uses_ann(self, filters: Filters) -> bool:
        """Whether ``top`` with these filters reads the IVF index rather than every row of the pool."""
        return (self.ivf is not None and len(self.ids) >= max(self.ann_above, 1)
                and self._wide(filters))

    def top(self, qvec, k: int, filters: Filters = Filters()) -> list[tuple[str, float]]:
        """The ``k`` memories nearest ``qvec`` within the filtered pool: exact, or through the
        IVF index for a wide pool of a large snapshot (``uses_ann``); the delta is exact."""
        q = unit(qvec)[0]
        out: list[tuple[str, float]] = []
        with embed.one_blas_thread():
            if self.uses_ann(filters):
                assert self.ivf is not None
                rows, sims = self.ivf.search(self.vecs, q, k, lambda rows: self.mask(filters, rows))
            else:
                rows = np.flatnonzero(self.mask(filters))
                # a narrow pool (a subject) gathers its rows; a wide one (every active memory
                # but a few) takes one pass over the matrix and drops the rest: gathering 97 % of
                # 100k rows copied 200 MB per query and cost 130-150 ms of CPU instead of 28-30
                sims = (self.vecs[self._m(rows)] @ q if len(rows) * GATHER_BELOW < len(self.ids)
                        else (self.vecs @ q)[self._m(rows)]) if len(rows) else np.zeros(0, dtype=np.float32)
            ids, block, fields = self._delta_rows()
            # on BLAS's own threads a 1,000-row product cost ~2.5 ms of CPU (spinning), on one 0.1
            delta_sims = block @ q if ids else None
        if len(rows):
            take = min(k, len(rows))
            best = np.argpartition(-sims, take - 1)[:take]
            out = [(str(self.ids[rows[j]]), float(sims[j])) for j in best]
        if delta_sims is not None:
            at = np.flatnonzero(self._delta_mask(filters, fields))
            if len(at):
                sims = delta_sims[at]
                best = np.argpartition(-sims, min(k, len(at)) - 1)[:k]
                out += [(ids[at[j]], float(sims[j])) for j in best]
        out.sort(key=lambda t: (-t[1], t[0]))
        return out[:k]

    @staticmethod
    def _delta_mask(filters: Filters, fields: dict) -> np.ndarray:
        """Which live delta rows (their fields from :meth:`_delta_rows`) are inside the filters."""
        keep = np.ones(len(fields["created"]), dtype=bool)
        for field, value in filters.exact:
            keep &= fields[field] == value
        if filters.statuses is not None:
            keep &= np.isin(fields["status"], list(filters.statuses))
        if filters.tag is not None:
            keep &= np.array([filters.tag in tags for tags in fields["tags"]], dtype=bool)
        if filters.since is not None:
            keep &= fields["created"] >= filters.since
        return keep

    def _delta_rows(self) -> tuple[list[str], np.ndarray, dict]:
        """The live delta as one matrix, with its ids and filter fields, built once per change
        (scoring 1,000 delta vectors one at a time cost ~7 ms of CPU per query)."""
        if self._delta_block is None:
            live = [(mid, meta, vec) for mid, (meta, vec) in self.delta.items() if meta is not None]
            block = (np.stack([np.asarray(vec, dtype=np.float32) for _, _, vec in live]) if live
                     else np.zeros((0, embed.DIM), dtype=np.float32))
            fields: dict = {f: np.array([getattr(meta.facets, f) for _, meta, _ in live], dtype=str) for f in CODED}
            fields["tags"] = [frozenset(meta.facets.tags) for _, meta, _ in live]
            fields["created"] = np.array([NO_DATE if meta.facets.created is None else meta.facets.created
                                          for _, meta, _ in live], dtype=np.int64)
            self._delta_block = ([mid for mid, _, _ in live], block, fields)
        return self._delta_block

    def cosines(self, qvec, ids: Iterable[str]) -> dict[str, float]:
        q = unit(qvec)[0]
        out = {}
        for mid in ids:
            v = self.vector(mid)
            if v is not None:
                out[mid] = float(np.dot(v, q))
        return out
