"""The vectors' approximate nearest-neighbour index: an inverted file (IVF).

A large snapshot with a wide pool is searched through it: ``4 sqrt(N)`` k-means centroids
(seeded, trained on a sample: the same rows give the same index), each row listed under its
nearest centroid; a query scores the centroids, takes the rows of the nearest ``ANN_PROBE``
share of the lists (at least ``ANN_PROBE_MIN``), applies the pool's filters to them and returns
their exact cosines (more lists when fewer than k survive). A list is a contiguous run of the
snapshot's matrix, so a query reads its rows in place instead of copying them (at 100k rows,
10 % of the rows cost 13.7 ms of CPU gathered, 6.1 in place). A compaction keeps the previous
centroids and lists the rows it already had where they were (only rows new to the snapshot are
assigned); a full rebuild, or rows grown ``ANN_RETRAIN`` times since training, trains anew.
The snapshot's files and when the index is used are :mod:`memrepo.retrieval.vectors`'.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from memrepo.retrieval.embed import DIM

ANN_LISTS = 4              # IVF lists per sqrt(rows) (at 100k: 1,265 lists of ~80 rows)
ANN_PROBE = 0.03           # share of the lists a query reads (recall@10 vs exact: bench/ann.py) ...
ANN_PROBE_MIN = 40         # ... and at least this many lists (at 20k rows 3 % read gave recall@10 0.94)
ANN_SAMPLE = 16            # training rows per list (k-means on a sample)
ANN_ITERS = 8              # k-means iterations
ANN_SEED = 11
ANN_RETRAIN = 4            # a compaction trains anew once the rows grew this many times since training
CHUNK = 8192               # rows per product when assigning rows to lists (bounds the scratch memory)


def unit(rows) -> np.ndarray:
    """Rows scaled to unit length (float32; a zero row stays zero)."""
    a = np.asarray(rows, dtype=np.float32)
    if a.ndim == 1:
        a = a[None, :]
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (a / norms).astype(np.float32, copy=False)


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
        if not (isinstance(centroids, np.ndarray) and centroids.ndim == 2 and centroids.shape[1] == DIM
                and centroids.dtype == np.float32 and len(centroids) > 0 and offsets.shape == (len(centroids) + 1,)
                and offsets[0] == 0 and offsets[-1] == rows and bool(np.all(np.diff(offsets) >= 0))):
            return None
        order = np.empty(rows, dtype=np.int32)
        order[matrix_row] = np.arange(rows, dtype=np.int32)
        return cls(centroids, offsets, order, trained_on)

    def search(self, vecs: np.ndarray, q: np.ndarray, k: int,
               keep: Callable[[np.ndarray], np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(id rows, cosines) of the pool's rows in the lists nearest ``q`` (``vecs``: the
        snapshot's matrix in list order; ``keep``: which of some id rows are in the pool):
        ``ANN_PROBE`` of the lists (``ANN_PROBE_MIN`` at least), doubled until at least ``k``
        rows of the pool are among them (or all are read). Each list is a run of the matrix,
        multiplied in place."""
        ranked = np.argsort(-(self.centroids @ q), kind="stable")
        probe, read = max(ANN_PROBE_MIN, math.ceil(ANN_PROBE * len(ranked))), 0
        rows_parts, sims_parts, found = [], [], 0
        while read < len(ranked):
            lists = np.sort(ranked[read:probe])
            runs = [(a, b) for a, b in zip(self.offsets[lists].tolist(), self.offsets[lists + 1].tolist()) if b > a]
            if runs:
                rows = np.concatenate([self.order[a:b] for a, b in runs])
                sims = np.concatenate([vecs[a:b] @ q for a, b in runs])
                kept = keep(rows)
                rows_parts.append(rows[kept])
                sims_parts.append(sims[kept])
                found += int(kept.sum())
            read, probe = probe, probe * 2
            if found >= k:
                break
        if not rows_parts:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        return np.concatenate(rows_parts), np.concatenate(sims_parts)


def nearest_list(vecs: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Each row's nearest centroid (by cosine), in chunks of ``CHUNK`` rows."""
    out = np.empty(len(vecs), dtype=np.int32)
    for start in range(0, len(vecs), CHUNK):
        out[start:start + CHUNK] = np.argmax(np.asarray(vecs[start:start + CHUNK]) @ centroids.T, axis=1)
    return out


def train(vecs: np.ndarray) -> np.ndarray:
    """``ANN_LISTS`` * sqrt(N) unit centroids: spherical k-means on a seeded sample of the rows."""
    n = len(vecs)
    lists = max(1, min(n, round(ANN_LISTS * math.sqrt(n))))
    rng = np.random.default_rng(ANN_SEED)
    sample = np.asarray(vecs[np.sort(rng.choice(n, size=min(n, ANN_SAMPLE * lists), replace=False))])
    centroids = sample[rng.choice(len(sample), size=lists, replace=False)].copy()
    for _ in range(ANN_ITERS):
        labels = nearest_list(sample, centroids)
        counts = np.bincount(labels, minlength=lists)
        used = counts > 0  # an empty list keeps its centroid
        # each list's sum over its rows in one pass (np.add.at took half the training's CPU)
        starts = (np.cumsum(counts) - counts)[used]
        centroids[used] = unit(np.add.reduceat(sample[np.argsort(labels, kind="stable")], starts, axis=0))
    return centroids


def build(vecs: np.ndarray, ids: np.ndarray, previous: Any = None) -> Ivf:
    """The index of a new snapshot's rows (``ids``: their ids, sorted): the centroids of
    ``previous`` (the snapshot compacted into it, with its ids, live rows and index) with its
    rows kept in their lists, or trained anew (no usable previous index, or the rows grew
    ``ANN_RETRAIN`` times since it was trained)."""
    old = previous.ivf if previous is not None else None
    if old is None or len(vecs) > ANN_RETRAIN * old.trained_on:
        centroids = train(vecs)
        return Ivf.from_labels(centroids, nearest_list(vecs, centroids), len(vecs))
    labels = np.full(len(vecs), -1, dtype=np.int32)
    at = np.searchsorted(previous.ids, ids)
    inside = at < len(previous.ids)
    kept = np.zeros(len(vecs), dtype=bool)
    kept[inside] = (previous.ids[at[inside]] == ids[inside]) & previous.alive[at[inside]]
    labels[kept] = old.labels()[at[kept]]
    new = np.flatnonzero(~kept)
    labels[new] = nearest_list(vecs[new], old.centroids)
    return Ivf.from_labels(old.centroids, labels, old.trained_on)
