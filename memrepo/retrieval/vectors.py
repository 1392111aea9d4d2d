"""Memory vectors: derived state beside the Whoosh index, the one owner of numpy.

Layout of ``<index_dir>/vectors``::

    meta.json                {"format", "model", "commit", "snapshot", "dirty"}
    snap-000003.vecs.npy     float32 (N, 512) unit vectors: format 3, rows sorted by memory id;
                             format 4 (a snapshot with an ANN index), rows grouped by IVF list
    snap-000003.rows.npz     ids (sorted), content hashes, and the filter fields: subject,
                             status, layer, kind as codes, each row's tags (codes, offsets) and
                             creation time (epoch seconds); format 4: each id's matrix row and
                             where each IVF list's rows start in the matrix
    snap-000003.ivf.npy      format 4: the ANN index's k-means centroids, float32 (lists, 512)
    snap-000003.delta.jsonl  memories changed since the snapshot, appended one per line
                             (a vector in base64), or {"id", "deleted": true}
    encoded-<model>.partial  while a build encodes: each batch's vectors as they come (content
                             hash, float32 vector, CRC-32 per record); a build killed midway
                             leaves it, the next build of the same model starts from it
    write.lock               fcntl lock: one writer at a time

Like the index, the vectors record the git commit they reflect and catch up from git (the
search service diffs that commit with HEAD and re-reads the changed files, plus uncommitted
edits). A change is appended to the delta; past ``COMPACT_AT`` appended lines a new snapshot
is written and ``meta.json`` flips to it atomically. Every vector is cached by the hash of
the text it encodes, so a rebuild, a revert or a re-index never encodes the same text twice.
Vectors of another model or model version are thrown away and rebuilt.

The nearest memories within a pool are exact (one product over the pool's rows) below
``ann_above`` snapshot rows and for narrow pools (a subject, a layer). A large snapshot with a
wide pool is searched through an inverted-file index (IVF): 4 sqrt(N) k-means centroids
(seeded, trained on a sample: the same rows give the same index), each row listed under its
nearest centroid; a query scores the centroids, takes the rows of the nearest ``ANN_PROBE``
share of the lists (at least ``ANN_PROBE_MIN``), applies the pool's filters to them and returns their exact cosines' top k
(more lists when fewer than k survive). A list is a contiguous run of the matrix, so a query
reads its rows in place instead of copying them (at 100k rows, 10 % of the rows cost 13.7 ms
of CPU gathered, 6.1 in place). The index is written with its snapshot, before
``meta.json`` flips to it; a compaction keeps the previous centroids and lists the rows it
already had where they were (only rows new to the snapshot are assigned), a full rebuild
trains anew. The delta is always scanned exactly. A snapshot without a readable index is
searched exactly. Format 4 is written only for a snapshot with an index: a memrepo that knows
format 3 alone takes it for vectors it cannot read and rebuilds them, never misreads them.
Formats 1 and 2 (without tags and dates) are not searched: they are rebuilt from the memory
files, their vectors reused by content hash (nothing is encoded again).
"""
from __future__ import annotations

import base64
import json
import math
import os
import pickle
import re
import zipfile
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.lib import format as npformat

from memrepo.retrieval import embed
from memrepo.store import faults
from memrepo.store.files import atomic_write
from memrepo.store.lock import is_locked, locked

FORMAT = 3                 # rows sorted by memory id
FORMAT_IVF = 4             # rows grouped by IVF list (rows.npz maps each id to its row)
OLDER = {1: FORMAT, 2: FORMAT_IVF}   # formats without tags and dates: their vectors are reused by a rebuild
NO_DATE = np.iinfo(np.int64).min     # the creation time of a memory without one (no ``since`` admits it)
COMPACT_AT = 2000          # delta lines before a new snapshot is written
STATUSES = ("active", "pending_review", "superseded", "rejected", "archived", "rolled_back", "")
LOCK_WAIT_S = 10.0
# per process, the last state loaded from each vectors directory: every search makes a new
# VectorStore, and re-reading 100k ids and hashes cost ~150 ms of CPU per search
_LOADED: dict[Path, tuple[tuple, Snapshot]] = {}
_META: dict[Path, tuple[tuple, dict]] = {}  # per process, each vectors directory's meta.json and its stat
GATHER_BELOW = 4           # a pool under 1/4 of the rows is gathered before the product, a wider one is not
ANN_ABOVE = 20_000         # default [search] ann_above: snapshots of this many rows get an IVF index
ANN_LISTS = 4              # IVF lists per sqrt(rows) (at 100k: 1,265 lists of ~80 rows)
ANN_PROBE = 0.03           # share of the lists a query reads (recall@10 vs exact: bench/ann.py) ...
ANN_PROBE_MIN = 40         # ... and at least this many lists (at 20k rows 3 % read gave recall@10 0.94)
ANN_SAMPLE = 16            # training rows per list (k-means on a sample)
ANN_ITERS = 8              # k-means iterations
ANN_SEED = 11
ANN_RETRAIN = 4            # a compaction trains anew once the rows grew this many times since training
_CHUNK = 8192              # rows per product when assigning rows to lists (bounds the scratch memory)
HASH_BYTES = 12            # embed.text_hash's digest
_RECORD = HASH_BYTES + embed.DIM * 4 + 4   # a record of a build's partial file: hash, vector, CRC-32


def forget(directory: Path) -> None:
    """Drop what this process keeps of the vectors in ``directory`` (a vault it stopped serving)."""
    _LOADED.pop(Path(directory), None)
    _META.pop(Path(directory) / "meta.json", None)


class VectorsBusy(Exception):
    """Another process is writing the vectors (e.g. building them): search uses keywords."""


class VectorsCorrupt(Exception):
    """The current snapshot's files cannot be read (truncated, garbage, missing): derived state,
    treated as absent and rebuilt."""


@dataclass(frozen=True)
class VecDoc:
    """What the vector store keeps of one memory (``tags``: as the index's tag filter
    matches them, :func:`memrepo.retrieval.fields.tag_terms`; ``created``: epoch seconds)."""
    id: str
    text: str
    subject: str
    status: str
    layer: str
    kind: str
    tags: tuple[str, ...] = ()
    created: int | None = None


def _unit(rows) -> np.ndarray:
    a = np.asarray(rows, dtype=np.float32)
    if a.ndim == 1:
        a = a[None, :]
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (a / norms).astype(np.float32, copy=False)


def _keep(fh, hashes: list[str], vecs: np.ndarray) -> None:
    """Append a batch's vectors to a build's partial file (see the layout above), flushed: a
    process killed after this keeps them."""
    rows = np.ascontiguousarray(vecs, dtype="<f4")
    out = []
    for h, row in zip(hashes, rows):
        body = bytes.fromhex(h) + row.tobytes()
        if len(body) == _RECORD - 4:   # (a hash of another length would misalign the file)
            out.append(body + zlib.crc32(body).to_bytes(4, "little"))
    fh.write(b"".join(out))
    fh.flush()


def _cut_torn_tail(path: Path) -> None:
    """Cut a file back to its last newline: an append killed midway left a torn line, which the
    next append would otherwise extend into one unreadable line (its change is re-applied: the
    killed writer never flipped meta.json)."""
    try:
        fh = open(path, "r+b")
    except FileNotFoundError:
        return
    with fh:
        end = fh.seek(0, os.SEEK_END)
        at = end
        while at > 0:
            start = max(0, at - 65536)
            fh.seek(start)
            cut = fh.read(at - start).rfind(b"\n")
            if cut >= 0:
                at = start + cut + 1
                break
            at = start
        if at != end:
            fh.truncate(at)


def _sync(fh) -> None:
    """A snapshot's file on disk before ``meta.json`` flips to it: after a power loss the
    flipped meta.json never names a file the disk had not written."""
    fh.flush()
    os.fsync(fh.fileno())


def _atomic_write(path: Path, data: bytes) -> None:
    atomic_write(path, data)


@dataclass(frozen=True)
class Ivf:
    """A snapshot's inverted-file index: list ``j`` is matrix rows ``offsets[j]:offsets[j + 1]``;
    ``order`` gives each matrix row's id row (the position of its id in the sorted ids)."""
    centroids: np.ndarray  # (lists, DIM) float32 unit vectors
    offsets: np.ndarray    # (lists + 1,) int64
    order: np.ndarray      # (rows,) int32
    trained_on: int        # rows of the snapshot the centroids were trained for

    @classmethod
    def from_labels(cls, centroids: np.ndarray, labels: np.ndarray, trained_on: int) -> Ivf:
        """Id rows grouped by their list (``labels``: each id row's list)."""
        order = np.argsort(labels, kind="stable").astype(np.int32)
        counts = np.bincount(labels, minlength=len(centroids))
        return cls(centroids, np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), order, trained_on)

    def labels(self) -> np.ndarray:
        """Each id row's list."""
        out = np.empty(len(self.order), dtype=np.int32)
        out[self.order] = np.repeat(np.arange(len(self.centroids), dtype=np.int32), np.diff(self.offsets))
        return out

    @classmethod
    def read(cls, path: Path, offsets: np.ndarray, matrix_row: np.ndarray, trained_on: int) -> Ivf | None:
        """The index whose centroids are in ``path`` (a plain .npy: an .npz's checksums cost
        ~9 ms per load at 100k) if they are whole and fit the snapshot's lists, else None."""
        try:
            centroids = np.load(path, allow_pickle=False)
        except (OSError, ValueError, EOFError):
            return None
        rows = len(matrix_row)
        if not (isinstance(centroids, np.ndarray) and centroids.ndim == 2 and centroids.shape[1] == embed.DIM
                and centroids.dtype == np.float32 and len(centroids) > 0 and offsets.shape == (len(centroids) + 1,)
                and offsets[0] == 0 and offsets[-1] == rows and bool(np.all(np.diff(offsets) >= 0))):
            return None
        order = np.empty(rows, dtype=np.int32)
        order[matrix_row] = np.arange(rows, dtype=np.int32)
        return cls(centroids, offsets, order, trained_on)


def _nearest_list(vecs: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each row's nearest centroid (by cosine), in chunks of ``_CHUNK`` rows."""
    out = np.empty(len(vecs), dtype=np.int32)
    for start in range(0, len(vecs), _CHUNK):
        out[start:start + _CHUNK] = np.argmax(np.asarray(vecs[start:start + _CHUNK]) @ centroids.T, axis=1)
    return out


def _train(vecs: np.ndarray) -> np.ndarray:
    """``ANN_LISTS`` * sqrt(N) unit centroids: spherical k-means on a seeded sample of the rows."""
    n = len(vecs)
    lists = max(1, min(n, round(ANN_LISTS * math.sqrt(n))))
    rng = np.random.default_rng(ANN_SEED)
    sample = np.asarray(vecs[np.sort(rng.choice(n, size=min(n, ANN_SAMPLE * lists), replace=False))])
    centroids = sample[rng.choice(len(sample), size=lists, replace=False)].copy()
    for _ in range(ANN_ITERS):
        labels = _nearest_list(sample, centroids)
        counts = np.bincount(labels, minlength=lists)
        used = counts > 0  # an empty list keeps its centroid
        # each list's sum over its rows in one pass (np.add.at took half the training's CPU)
        starts = (np.cumsum(counts) - counts)[used]
        centroids[used] = _unit(np.add.reduceat(sample[np.argsort(labels, kind="stable")], starts, axis=0))
    return centroids


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
        self.delta: dict[str, tuple[VecDocMeta | None, np.ndarray | None]] = {}
        self.delta_lines = 0
        self.ivf: Ivf | None = None
        self._delta_block: tuple[list[str], np.ndarray, dict] | None = None
        self.ann_above = ANN_ABOVE
        self._counts: dict[str, np.ndarray] = {}

    @classmethod
    def empty(cls) -> Snapshot:
        return cls(np.zeros((0, embed.DIM), dtype=np.float32), np.array([], dtype="<U1"), np.array([], dtype="<U1"),
                   {k: np.zeros(0, dtype=np.int32) for k in ("subject", "status", "layer", "kind")},
                   {k: [] for k in ("subject", "status", "layer", "kind")})

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

    def meta_of(self, memory_id: str) -> VecDocMeta | None:
        """What is stored of a memory besides its vector (None: no vector)."""
        if memory_id in self.delta:
            return self.delta[memory_id][0]
        i = self._row(memory_id)
        return None if i < 0 else self._row_meta(i)

    def _row_meta(self, i: int) -> VecDocMeta:
        tags = tuple(self.tag_vocab[c] for c in self.tag_codes[self.tag_offsets[i]:self.tag_offsets[i + 1]])
        created = int(self.created[i])
        return VecDocMeta(str(self.hashes[i]), *(self.vocab[k][self.codes[k][i]] for k in ("subject", "status", "layer", "kind")),
                          tags, None if created == NO_DATE else created)

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
        rows = np.flatnonzero(self.hashes == text_hash) if len(self.hashes) else ()
        return self.vecs[self._m(rows[0])] if len(rows) else None

    def cache(self) -> dict[str, np.ndarray]:
        """Every stored vector by content hash (what a rebuild reuses)."""
        out = {str(h): self.vecs[self._m(i)] for i, h in enumerate(self.hashes)}
        out.update({m.hash: v for m, v in self.delta.values() if m is not None})
        return out

    def count(self) -> int:
        live = int(self.alive.sum()) + sum(1 for m, _ in self.delta.values() if m is not None)
        return live

    def items(self) -> Iterator[tuple[str, VecDocMeta, np.ndarray]]:
        for i in np.flatnonzero(self.alive):
            yield str(self.ids[i]), self._row_meta(i), self.vecs[self._m(i)]
        for mid, (meta, vec) in self.delta.items():
            if meta is not None:
                yield mid, meta, vec

    # ---- delta ---------------------------------------------------------------------
    def _override(self, memory_id: str, meta: VecDocMeta | None, vec) -> None:
        i = int(np.searchsorted(self.ids, memory_id))
        if i < len(self.ids) and self.ids[i] == memory_id:
            self.alive[i] = False
        self.delta[memory_id] = (meta, vec)
        self._delta_block = None

    # ---- search --------------------------------------------------------------------
    def _mask(self, subject, layer, kind, statuses, tag=None, since=None, rows: np.ndarray | None = None) -> np.ndarray:
        """Which snapshot rows (all, or those in ``rows``) are live and inside the filters."""
        def of(a: np.ndarray) -> np.ndarray:
            return a if rows is None else a[rows]
        mask = self.alive.copy() if rows is None else self.alive[rows]
        if tag is not None:
            mask &= of(self._tagged(tag))
        if since is not None:
            mask &= of(self.created) >= since
        for field, value in (("subject", subject), ("layer", layer), ("kind", kind)):
            if value is not None:
                try:
                    mask &= of(self.codes[field]) == self.vocab[field].index(value)
                except ValueError:
                    return np.zeros(len(mask), dtype=bool)
        if statuses is not None:
            allowed = np.array([s in statuses for s in self.vocab["status"]] + [False], dtype=bool)
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

    def _wide(self, subject, layer, kind, statuses, tag=None, since=None) -> bool:
        """Whether the pool may hold a ``1/GATHER_BELOW`` share of the rows or more (an upper
        bound from each filter's count of rows, without a pass over the rows)."""
        bound = len(self.ids)
        if tag is not None:
            bound = int(self._tagged(tag).sum())
        if since is not None:
            bound = min(bound, int(np.count_nonzero(self.created >= since)))
        wanted = {"subject": subject, "layer": layer, "kind": kind}
        for field, values in [(f, {v}) for f, v in wanted.items() if v is not None] + \
                ([("status", set(statuses))] if statuses is not None else []):
            counts = self._counts.get(field)
            if counts is None:
                counts = self._counts[field] = np.bincount(self.codes[field], minlength=len(self.vocab[field]))
            bound = min(bound, sum(int(counts[i]) for i, v in enumerate(self.vocab[field]) if v in values))
        return bound * GATHER_BELOW >= len(self.ids)

    def _ann(self, q: np.ndarray, k: int, filters: tuple) -> tuple[np.ndarray, np.ndarray]:
        """(id rows, cosines) of the pool's rows in the lists nearest ``q``: ``ANN_PROBE`` of the
        lists (``ANN_PROBE_MIN`` at least), doubled until at least ``k`` rows of the pool are among them (or all are read).
        Each list is a run of the matrix, multiplied in place."""
        ivf = self.ivf
        assert ivf is not None
        ranked = np.argsort(-(ivf.centroids @ q), kind="stable")
        probe, read = max(ANN_PROBE_MIN, math.ceil(ANN_PROBE * len(ranked))), 0
        rows_parts, sims_parts, found = [], [], 0
        while read < len(ranked):
            lists = np.sort(ranked[read:probe])
            runs = [(a, b) for a, b in zip(ivf.offsets[lists].tolist(), ivf.offsets[lists + 1].tolist()) if b > a]
            if runs:
                rows = np.concatenate([ivf.order[a:b] for a, b in runs])
                sims = np.concatenate([self.vecs[a:b] @ q for a, b in runs])
                keep = self._mask(*filters, rows=rows)
                rows_parts.append(rows[keep])
                sims_parts.append(sims[keep])
                found += int(keep.sum())
            read, probe = probe, probe * 2
            if found >= k:
                break
        if not rows_parts:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        return np.concatenate(rows_parts), np.concatenate(sims_parts)

    def uses_ann(self, *, subject=None, layer=None, kind=None, statuses=None, tag=None, since=None) -> bool:
        """Whether ``top`` with these filters reads the IVF index rather than every row of the pool."""
        return (self.ivf is not None and len(self.ids) >= max(self.ann_above, 1)
                and self._wide(subject, layer, kind, statuses, tag, since))

    def top(self, qvec, k: int, *, subject=None, layer=None, kind=None, statuses=None,
            tag: str | None = None, since: int | None = None) -> list[tuple[str, float]]:
        """The ``k`` memories nearest ``qvec`` within the filtered pool (``tag``: memories
        carrying it; ``since``: created at or after these epoch seconds): exact, or through
        the IVF index for a wide pool of a large snapshot (``uses_ann``); the delta is exact."""
        q = _unit(qvec)[0]
        out: list[tuple[str, float]] = []
        filters = (subject, layer, kind, statuses, tag, since)
        with embed.one_blas_thread():
            if self.uses_ann(subject=subject, layer=layer, kind=kind, statuses=statuses, tag=tag, since=since):
                rows, sims = self._ann(q, k, filters)
            else:
                rows = np.flatnonzero(self._mask(*filters))
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
            keep = np.ones(len(ids), dtype=bool)
            for field, value in (("subject", subject), ("layer", layer), ("kind", kind)):
                if value is not None:
                    keep &= fields[field] == value
            if statuses is not None:
                keep &= np.isin(fields["status"], list(statuses))
            if tag is not None:
                keep &= np.array([tag in tags for tags in fields["tags"]], dtype=bool)
            if since is not None:
                keep &= fields["created"] >= since
            at = np.flatnonzero(keep)
            if len(at):
                sims = delta_sims[at]
                best = np.argpartition(-sims, min(k, len(at)) - 1)[:k]
                out += [(ids[at[j]], float(sims[j])) for j in best]
        out.sort(key=lambda t: (-t[1], t[0]))
        return out[:k]

    def _delta_rows(self) -> tuple[list[str], np.ndarray, dict]:
        """The live delta as one matrix, with its ids and filter fields, built once per change
        (scoring 1,000 delta vectors one at a time cost ~7 ms of CPU per query)."""
        if self._delta_block is None:
            live = [(mid, meta, vec) for mid, (meta, vec) in self.delta.items() if meta is not None]
            block = (np.stack([np.asarray(vec, dtype=np.float32) for _, _, vec in live]) if live
                     else np.zeros((0, embed.DIM), dtype=np.float32))
            fields = {f: np.array([getattr(meta, f) for _, meta, _ in live], dtype=str)
                      for f in ("subject", "status", "layer", "kind")}
            fields["tags"] = [frozenset(meta.tags) for _, meta, _ in live]
            fields["created"] = np.array([NO_DATE if meta.created is None else meta.created for _, meta, _ in live],
                                         dtype=np.int64)
            self._delta_block = ([mid for mid, _, _ in live], block, fields)
        return self._delta_block

    def cosines(self, qvec, ids: Iterable[str]) -> dict[str, float]:
        q = _unit(qvec)[0]
        out = {}
        for mid in ids:
            v = self.vector(mid)
            if v is not None:
                out[mid] = float(np.dot(v, q))
        return out


@dataclass(frozen=True)
class VecDocMeta:
    hash: str
    subject: str
    status: str
    layer: str
    kind: str
    tags: tuple[str, ...] = ()
    created: int | None = None

    @classmethod
    def of(cls, doc: VecDoc, text_hash: str) -> VecDocMeta:
        return cls(text_hash, doc.subject, doc.status, doc.layer, doc.kind, tuple(doc.tags), doc.created)


class VectorStore:
    """The vectors of one vault for one model, in ``dir``."""

    def __init__(self, dir: Path, model: str | None = None, *, ann_above: int | None = None) -> None:
        self.dir = Path(dir)
        self.model = model or embed.model_id()
        self.ann_above = ann_above or ANN_ABOVE  # [search] ann_above; 0 or None: the default

    # ---- state ---------------------------------------------------------------------
    def meta(self) -> dict:
        """``meta.json`` (a copy: callers update it), parsed again only when the file was
        replaced (it is written whole, by rename): a search asks several times."""
        path = self.dir / "meta.json"
        try:
            st = os.stat(path)
            stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
            cached = _META.get(path)
            if cached is None or cached[0] != stamp:
                data = json.loads(path.read_bytes())
                cached = _META[path] = (stamp, data if isinstance(data, dict) else {})
            return dict(cached[1])
        except (OSError, ValueError):
            return {}

    def ready(self) -> bool:
        """True when vectors of this model and format are present (they may lag HEAD: see ``commit``)."""
        return self._readable((FORMAT, FORMAT_IVF))

    def _readable(self, formats) -> bool:
        m = self.meta()
        return (m.get("format") in formats and m.get("model") == self.model
                and isinstance(m.get("snapshot"), str) and re.fullmatch(r"snap-\d+", m["snapshot"]) is not None
                and (self.dir / f"{m['snapshot']}.vecs.npy").exists())

    def commit(self) -> str | None:
        return self.meta().get("commit")

    def dirty(self) -> list[str]:
        return list(self.meta().get("dirty") or [])

    def building(self) -> bool:
        """True while another process holds the write lock (a build is under way)."""
        return is_locked(self.dir / "write.lock")

    def lock(self, wait: float = LOCK_WAIT_S):
        self.dir.mkdir(parents=True, exist_ok=True)
        return locked(self.dir / "write.lock", timeout=wait,
                      busy=lambda: VectorsBusy(f"vectors in {self.dir} are being written by another process"))

    # ---- reading -------------------------------------------------------------------
    def _key(self, snap: str) -> tuple:
        """What identifies a loaded state: the snapshot's name and file (a rebuild from scratch
        reuses the name) and the delta's length (appends)."""
        def stamp(path: Path) -> tuple:
            try:
                st = path.stat()
            except OSError:
                return ()
            return st.st_ino, st.st_mtime_ns, st.st_size
        return snap, stamp(self.dir / f"{snap}.vecs.npy"), stamp(self.dir / f"{snap}.delta.jsonl")

    def load(self, *, older: bool = False) -> Snapshot:
        """The current vectors (cached per process and directory while the files are unchanged);
        with ``older``, also those of an older format (their vectors for a rebuild to reuse)."""
        m = self.meta()
        if not self._readable((FORMAT, FORMAT_IVF, *(OLDER if older else ()))):
            return Snapshot.empty()
        fmt = OLDER.get(m["format"], m["format"])
        snap = m["snapshot"]
        delta = self.dir / f"{snap}.delta.jsonl"
        key = self._key(snap)
        cached = _LOADED.get(self.dir)
        if cached is not None and cached[0] == key:
            cached[1].ann_above = self.ann_above
            return cached[1]
        try:
            s = self._read_snapshot(snap, fmt)
        except (OSError, ValueError, EOFError, KeyError, IndexError, zipfile.BadZipFile, pickle.UnpicklingError) as e:
            raise VectorsCorrupt(f"the semantic vectors in {self.dir} are unreadable ({snap}: {type(e).__name__})") from None
        s.ann_above = self.ann_above
        if delta.exists():
            for line in delta.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    rec = json.loads(line)
                    if rec.get("deleted"):
                        s._override(rec["id"], None, None)
                    else:
                        vec = np.frombuffer(base64.b64decode(rec["vec"]), dtype=np.float32)
                        if vec.shape != (embed.DIM,):
                            raise ValueError("not a vector")
                        s._override(rec["id"], VecDocMeta(rec["hash"], rec["subject"], rec["status"], rec["layer"],
                                                          rec["kind"], tuple(rec.get("tags", ())), rec.get("created")), vec)
                except (ValueError, KeyError, TypeError, AttributeError):
                    continue  # a line torn by a crash (never recorded in meta.json: its change is applied again)
                s.delta_lines += 1
        _LOADED[self.dir] = (key, s)
        return s

    def _read_snapshot(self, snap: str, fmt: int) -> Snapshot:
        """A snapshot's rows, checked to fit together (numpy's own errors pass through)."""
        # a plain array over the mapped file: numpy.memmap's own slicing costs ~10 us a slice,
        # and an IVF query takes 40 slices (0.4 ms of its ~2.7)
        vecs = np.load(self.dir / f"{snap}.vecs.npy", mmap_mode="r", allow_pickle=False).view(np.ndarray)
        with np.load(self.dir / f"{snap}.rows.npz", allow_pickle=False) as z:
            ids = z["ids"]
            hashes = z["hashes"]
            codes = {k: z[f"c_{k}"] for k in ("subject", "status", "layer", "kind")}
            vocab = {k: z[f"v_{k}"].tolist() for k in ("subject", "status", "layer", "kind")}
            layout = (z["matrix_row"], z["list_offsets"], int(z["trained_on"])) if fmt == FORMAT_IVF else None
            tags = (z["tag_offsets"], z["tag_codes"], z["v_tag"].tolist()) if "v_tag" in z.files else None
            created = z["created"] if "created" in z.files else None
        n = len(ids)
        if (vecs.ndim != 2 or vecs.shape != (n, embed.DIM) or vecs.dtype != np.float32 or hashes.shape != (n,)
                or any(codes[k].shape != (n,) or (n and (codes[k].min() < 0 or codes[k].max() >= len(vocab[k])))
                       for k in codes)
                or (layout is not None and (layout[0].shape != (n,) or (n and (layout[0].min() < 0 or layout[0].max() >= n))))
                or (tags is not None and tags[0].shape != (n + 1,)) or (created is not None and created.shape != (n,))):
            raise ValueError("the snapshot's files do not fit together")
        s = Snapshot(vecs, ids, hashes, codes, vocab, layout[0] if layout else None, tags=tags, created=created)
        if layout is not None and (self.dir / f"{snap}.ivf.npy").exists():
            matrix_row, offsets, trained_on = layout
            s.ivf = Ivf.read(self.dir / f"{snap}.ivf.npy", offsets, matrix_row, trained_on)  # unreadable: exact
        return s

    # ---- writing -------------------------------------------------------------------
    def rebuild(self, docs: Iterable[VecDoc], encoder: embed.Encoder, *, commit: str | None,
                progress: Callable[[int, int], None] | None = None, dirty: Iterable[str] = ()) -> int:
        """All vectors anew from ``docs`` (cached vectors reused by content hash); returns the count."""
        with self.lock():
            try:   # a format without tags and dates: its vectors still serve
                cache = self.load(older=True).cache()
            except VectorsCorrupt:
                cache = {}                          # unreadable: nothing of it is reused
            cache.update(self._read_partial())      # a killed build's vectors
            docs = list(docs)
            hashes = [embed.text_hash(d.text) for d in docs]
            todo: dict[str, str] = {}
            for d, h in zip(docs, hashes):
                if h not in cache:
                    todo.setdefault(h, d.text)
            if todo:
                total = len(todo)
                keys = list(todo)
                done = 0
                with open(self._partial_path(), "ab") as kept:
                    for batch in encoder.batches(list(todo.values())):
                        vecs = _unit(batch)
                        batch_keys = keys[done:done + len(vecs)]
                        cache.update(zip(batch_keys, vecs))
                        _keep(kept, batch_keys, vecs)
                        faults.point("vectors-checkpointed")
                        done += len(vecs)
                        if progress:
                            progress(done, total)
            entries = sorted(((d.id, VecDocMeta.of(d, h), cache[h]) for d, h in zip(docs, hashes)),
                             key=lambda e: e[0])
            self._write_snapshot(entries, commit, dirty=sorted(dirty))
            return len(entries)

    def _partial_path(self) -> Path:
        return self.dir / f"encoded-{embed.text_hash(self.model)}.partial"

    def _read_partial(self) -> dict[str, np.ndarray]:
        """The vectors a killed build of this model kept, by content hash (views into the
        file's bytes). A record whose checksum fails (a disk that lost a page) is left out: its
        text is encoded again; a torn last record is cut off, so what this build appends stays
        aligned. Another model's file is of no use and is removed."""
        mine = self._partial_path()
        for path in self.dir.glob("encoded-*.partial"):
            if path != mine:
                path.unlink(missing_ok=True)
        try:
            data = mine.read_bytes()
        except FileNotFoundError:
            return {}
        whole = len(data) - len(data) % _RECORD
        if whole != len(data):
            os.truncate(mine, whole)
        view = memoryview(data)
        found: dict[str, np.ndarray] = {}
        for at in range(0, whole, _RECORD):
            end = at + _RECORD - 4
            if zlib.crc32(view[at:end]) == int.from_bytes(view[end:end + 4], "little"):
                found[view[at:at + HASH_BYTES].hex()] = np.frombuffer(data, dtype="<f4", count=embed.DIM,
                                                                       offset=at + HASH_BYTES)
        return found

    def apply(self, upserts: Iterable[VecDoc], deletes: Iterable[str], encoder: embed.Encoder, *,
              commit: str | None, dirty: Iterable[str] = ()) -> int:
        """Append changed and deleted memories to the delta; returns how many texts were encoded."""
        with self.lock():
            s = self.load()
            lines, encoded = [], 0
            pending = []
            for d in upserts:
                h = embed.text_hash(d.text)
                meta = VecDocMeta.of(d, h)
                if s.meta_of(d.id) == meta:
                    continue  # stored as it is (an uncommitted edit is handed over on every search)
                vec = s.vector(d.id) if s.hash_of(d.id) == h else s.find_hash(h)
                if vec is None:
                    pending.append((d, meta))
                else:
                    lines.append((d.id, meta, vec))
            if pending:
                vecs = np.concatenate([_unit(b) for b in encoder.batches([d.text for d, _ in pending])])
                encoded = len(pending)
                lines += [(d.id, meta, v) for (d, meta), v in zip(pending, vecs)]
            lines += [(mid, None, None) for mid in deletes if s.hash_of(mid) is not None]
            m = self.meta()
            if not lines:   # only the commit or the uncommitted files moved (if anything did)
                if (m.get("commit"), m.get("dirty")) != (commit, sorted(dirty)):
                    m.update(commit=commit, dirty=sorted(dirty))
                    _atomic_write(self.dir / "meta.json", json.dumps(m).encode())
                return encoded
            _LOADED.pop(self.dir, None)  # ``s`` changes below: nobody may reuse it unless the write succeeds
            for mid, meta, vec in lines:
                s._override(mid, meta, vec)
            s.delta_lines += len(lines)
            if s.delta_lines > COMPACT_AT:
                self._write_snapshot(sorted(s.items(), key=lambda e: e[0]), commit, dirty=sorted(dirty), previous=s)
                return encoded
            delta = self.dir / f"{m['snapshot']}.delta.jsonl"
            _cut_torn_tail(delta)
            with open(delta, "a", encoding="utf-8") as fh:
                fh.write("".join(self._line(mid, meta, vec) + "\n" for mid, meta, vec in lines))
            m.update(commit=commit, dirty=sorted(dirty))
            _atomic_write(self.dir / "meta.json", json.dumps(m).encode())
            # the loaded state already has the change: keep it for this process's searches
            _LOADED[self.dir] = (self._key(m["snapshot"]), s)
            return encoded

    @staticmethod
    def _line(memory_id: str, meta: VecDocMeta | None, vec) -> str:
        if meta is None:
            return json.dumps({"id": memory_id, "deleted": True})
        data = base64.b64encode(np.asarray(vec, dtype=np.float32).tobytes()).decode("ascii")
        return json.dumps({"id": memory_id, "hash": meta.hash, "subject": meta.subject, "status": meta.status,
                           "layer": meta.layer, "kind": meta.kind, "tags": list(meta.tags), "created": meta.created,
                           "vec": data}, ensure_ascii=False)

    def _write_snapshot(self, entries: list, commit: str | None, dirty: list[str],
                        previous: Snapshot | None = None) -> None:
        """Write ``entries`` (sorted by id) as the next snapshot, then flip ``meta.json`` to it.
        ``previous``: the state compacted into it, whose IVF centroids and lists are kept."""
        old = self.meta().get("snapshot")
        n = int(old.split("-")[1]) + 1 if isinstance(old, str) and re.fullmatch(r"snap-\d+", old) else 1
        self.dir.mkdir(parents=True, exist_ok=True)
        # a name no file uses: with meta.json lost, the last snapshot's files are still there (its
        # delta would be read over this snapshot; its matrix may be mapped by another process)
        used = [int(m[1]) for p in self.dir.glob("snap-*") if (m := re.match(r"snap-(\d+)\.", p.name))]
        snap = f"snap-{max([n, *(u + 1 for u in used)]):06d}"
        vecs = np.zeros((len(entries), embed.DIM), dtype=np.float32)
        for i, (_, _, v) in enumerate(entries):
            vecs[i] = v
        arrays = {"ids": np.array([e[0] for e in entries], dtype=str),
                  "hashes": np.array([e[1].hash for e in entries], dtype=str)}
        ivf = self._index(vecs, arrays["ids"], previous) if len(entries) >= self.ann_above else None
        if ivf is None:
            with open(self.dir / f"{snap}.vecs.npy", "wb") as fh:
                np.save(fh, vecs)
                _sync(fh)
        else:  # the matrix in list order, written a chunk at a time (no second copy in memory; through
            # a file, not a writable mapping, whose page faults cost ~1 s of CPU at 100k rows)
            with open(self.dir / f"{snap}.vecs.npy", "wb") as fh:
                npformat.write_array_header_1_0(fh, npformat.header_data_from_array_1_0(vecs))
                for start in range(0, len(vecs), _CHUNK):
                    fh.write(vecs[ivf.order[start:start + _CHUNK]].tobytes())
                _sync(fh)
            arrays["matrix_row"] = np.empty(len(vecs), dtype=np.int32)
            arrays["matrix_row"][ivf.order] = np.arange(len(vecs), dtype=np.int32)
            arrays["list_offsets"] = ivf.offsets
            arrays["trained_on"] = np.array(ivf.trained_on, dtype=np.int64)
        for field in ("subject", "status", "layer", "kind"):
            values = [getattr(e[1], field) for e in entries]
            vocab = sorted(set(values))
            index = {v: i for i, v in enumerate(vocab)}
            arrays[f"c_{field}"] = np.array([index[v] for v in values], dtype=np.int32)
            arrays[f"v_{field}"] = np.array(vocab, dtype=str)
        tag_vocab = sorted({t for e in entries for t in e[1].tags})
        tag_code = {t: i for i, t in enumerate(tag_vocab)}
        arrays["tag_offsets"] = np.zeros(len(entries) + 1, dtype=np.int64)
        np.cumsum([len(e[1].tags) for e in entries], out=arrays["tag_offsets"][1:])
        arrays["tag_codes"] = np.array([tag_code[t] for e in entries for t in e[1].tags], dtype=np.int32)
        arrays["v_tag"] = np.array(tag_vocab, dtype=str)
        arrays["created"] = np.array([NO_DATE if e[1].created is None else e[1].created for e in entries], dtype=np.int64)
        with open(self.dir / f"{snap}.rows.npz", "wb") as fh:
            np.savez(fh, **arrays)
            _sync(fh)
        if ivf is not None:
            with open(self.dir / f"{snap}.ivf.npy", "wb") as fh:
                np.save(fh, ivf.centroids)
                _sync(fh)
        _atomic_write(self.dir / "meta.json", json.dumps(
            {"format": FORMAT if ivf is None else FORMAT_IVF, "model": self.model, "commit": commit, "snapshot": snap, "dirty": dirty}).encode())
        for path in self.dir.glob("snap-*"):
            if not path.name.startswith(snap + "."):
                path.unlink(missing_ok=True)
        for path in self.dir.glob("encoded-*.partial"):   # a build's (this one's, or a killed one's
            path.unlink(missing_ok=True)                   # overtaken by this snapshot)
        _LOADED.pop(self.dir, None)

    @staticmethod
    def _index(vecs: np.ndarray, ids: np.ndarray, previous: Snapshot | None) -> Ivf:
        """The IVF index of a new snapshot's rows: the previous snapshot's centroids with its rows
        kept in their lists (a compaction), or trained anew (no usable previous index, or the rows
        grew ``ANN_RETRAIN`` times since it was trained)."""
        with embed.one_blas_thread():
            old = previous.ivf if previous is not None else None
            if old is None or len(vecs) > ANN_RETRAIN * old.trained_on:
                centroids = _train(vecs)
                return Ivf.from_labels(centroids, _nearest_list(vecs, centroids), len(vecs))
            assert previous is not None
            labels = np.full(len(vecs), -1, dtype=np.int32)
            at = np.searchsorted(previous.ids, ids)
            inside = at < len(previous.ids)
            kept = np.zeros(len(vecs), dtype=bool)
            kept[inside] = (previous.ids[at[inside]] == ids[inside]) & previous.alive[at[inside]]
            labels[kept] = old.labels()[at[kept]]
            new = np.flatnonzero(~kept)
            labels[new] = _nearest_list(vecs[new], old.centroids)
            return Ivf.from_labels(old.centroids, labels, old.trained_on)
