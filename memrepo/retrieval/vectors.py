"""Memory vectors: derived state beside the Whoosh index, the one owner of numpy.

Layout of ``<index_dir>/vectors``::

    meta.json                {"format", "model", "commit", "snapshot", "dirty"}
    snap-000003.vecs.npy     float32 (N, 512) unit vectors, rows sorted by memory id
    snap-000003.rows.npz     ids, content hashes, and the filter fields (subject, status,
                             layer, kind) as codes
    snap-000003.delta.jsonl  memories changed since the snapshot, appended one per line
                             (a vector in base64), or {"id", "deleted": true}
    write.lock               fcntl lock: one writer at a time

Like the index, the vectors record the git commit they reflect and catch up from git (the
search service diffs that commit with HEAD and re-reads the changed files, plus uncommitted
edits). A change is appended to the delta; past ``COMPACT_AT`` appended lines a new snapshot
is written and ``meta.json`` flips to it atomically. Every vector is cached by the hash of
the text it encodes, so a rebuild, a revert or a re-index never encodes the same text twice.
Vectors of another model or model version are thrown away and rebuilt.
"""
from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from memrepo.retrieval import embed
from memrepo.store.files import atomic_write
from memrepo.store.lock import is_locked, locked

FORMAT = 1
COMPACT_AT = 2000          # delta lines before a new snapshot is written
STATUSES = ("active", "pending_review", "superseded", "rejected", "archived", "rolled_back", "")
LOCK_WAIT_S = 10.0
# per process, the last state loaded from each vectors directory: every search makes a new
# VectorStore, and re-reading 100k ids and hashes cost ~150 ms of CPU per search
_LOADED: dict[Path, tuple[tuple, Snapshot]] = {}
_META: dict[Path, tuple[tuple, dict]] = {}  # per process, each vectors directory's meta.json and its stat
GATHER_BELOW = 4           # a pool under 1/4 of the rows is gathered before the product, a wider one is not


class VectorsBusy(Exception):
    """Another process is writing the vectors (e.g. building them): search uses keywords."""


@dataclass(frozen=True)
class VecDoc:
    """What the vector store keeps of one memory."""
    id: str
    text: str
    subject: str
    status: str
    layer: str
    kind: str


def _unit(rows) -> np.ndarray:
    a = np.asarray(rows, dtype=np.float32)
    if a.ndim == 1:
        a = a[None, :]
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (a / norms).astype(np.float32, copy=False)


def _atomic_write(path: Path, data: bytes) -> None:
    atomic_write(path, data)


class Snapshot:
    """One loaded state: the snapshot's rows (memory-mapped) plus the delta applied on top."""

    def __init__(self, vecs: np.ndarray, ids: np.ndarray, hashes: np.ndarray, codes: dict[str, np.ndarray],
                 vocab: dict[str, list[str]]) -> None:
        self.vecs, self.ids, self.hashes, self.codes, self.vocab = vecs, ids, hashes, codes, vocab
        self.alive = np.ones(len(ids), dtype=bool)
        self.delta: dict[str, tuple[VecDocMeta | None, np.ndarray | None]] = {}
        self.delta_lines = 0

    @classmethod
    def empty(cls) -> Snapshot:
        return cls(np.zeros((0, embed.DIM), dtype=np.float32), np.array([], dtype="<U1"), np.array([], dtype="<U1"),
                   {k: np.zeros(0, dtype=np.int32) for k in ("subject", "status", "layer", "kind")},
                   {k: [] for k in ("subject", "status", "layer", "kind")})

    # ---- lookups -------------------------------------------------------------------
    def _row(self, memory_id: str) -> int:
        i = int(np.searchsorted(self.ids, memory_id))
        return i if i < len(self.ids) and self.ids[i] == memory_id and self.alive[i] else -1

    def vector(self, memory_id: str) -> np.ndarray | None:
        if memory_id in self.delta:
            meta, vec = self.delta[memory_id]
            return None if meta is None else vec
        i = self._row(memory_id)
        return None if i < 0 else self.vecs[i]

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
        return self.vecs[rows[0]] if len(rows) else None

    def cache(self) -> dict[str, np.ndarray]:
        """Every stored vector by content hash (what a rebuild reuses)."""
        out = {str(h): self.vecs[i] for i, h in enumerate(self.hashes)}
        out.update({m.hash: v for m, v in self.delta.values() if m is not None})
        return out

    def count(self) -> int:
        live = int(self.alive.sum()) + sum(1 for m, _ in self.delta.values() if m is not None)
        return live

    def items(self) -> Iterator[tuple[str, VecDocMeta, np.ndarray]]:
        for i in np.flatnonzero(self.alive):
            yield str(self.ids[i]), VecDocMeta(str(self.hashes[i]), *(self.vocab[k][self.codes[k][i]]
                                                                  for k in ("subject", "status", "layer", "kind"))), self.vecs[i]
        for mid, (meta, vec) in self.delta.items():
            if meta is not None:
                yield mid, meta, vec

    # ---- delta ---------------------------------------------------------------------
    def _override(self, memory_id: str, meta: VecDocMeta | None, vec) -> None:
        i = int(np.searchsorted(self.ids, memory_id))
        if i < len(self.ids) and self.ids[i] == memory_id:
            self.alive[i] = False
        self.delta[memory_id] = (meta, vec)

    # ---- search --------------------------------------------------------------------
    def _mask(self, subject, layer, kind, statuses) -> np.ndarray:
        mask = self.alive.copy()
        for field, value in (("subject", subject), ("layer", layer), ("kind", kind)):
            if value is not None:
                try:
                    mask &= self.codes[field] == self.vocab[field].index(value)
                except ValueError:
                    return np.zeros(len(self.ids), dtype=bool)
        if statuses is not None:
            allowed = [i for i, s in enumerate(self.vocab["status"]) if s in statuses]
            mask &= np.isin(self.codes["status"], allowed)
        return mask

    def top(self, qvec, k: int, *, subject=None, layer=None, kind=None, statuses=None) -> list[tuple[str, float]]:
        """The ``k`` memories nearest ``qvec`` within the filtered pool (brute force, exact)."""
        q = _unit(qvec)[0]
        mask = self._mask(subject, layer, kind, statuses)
        rows = np.flatnonzero(mask)
        out: list[tuple[str, float]] = []
        if len(rows):
            with embed.one_blas_thread():
                # a narrow pool (a subject) gathers its rows; a wide one (every active memory
                # but a few) takes one pass over the matrix and drops the rest: gathering 97 % of
                # 100k rows copied 200 MB per query and cost 130-150 ms of CPU instead of 28-30
                sims = self.vecs[rows] @ q if len(rows) * GATHER_BELOW < len(self.ids) else (self.vecs @ q)[rows]
            take = min(k, len(rows))
            best = np.argpartition(-sims, take - 1)[:take]
            out = [(str(self.ids[rows[j]]), float(sims[j])) for j in best]
        for mid, (meta, vec) in self.delta.items():
            if meta is None or (subject is not None and meta.subject != subject) \
                    or (layer is not None and meta.layer != layer) or (kind is not None and meta.kind != kind) \
                    or (statuses is not None and meta.status not in statuses):
                continue
            out.append((mid, float(vec @ q)))
        out.sort(key=lambda t: (-t[1], t[0]))
        return out[:k]

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


class VectorStore:
    """The vectors of one vault for one model, in ``dir``."""

    def __init__(self, dir: Path, model: str | None = None) -> None:
        self.dir = Path(dir)
        self.model = model or embed.model_id()

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
        m = self.meta()
        return (m.get("format") == FORMAT and m.get("model") == self.model
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

    def load(self) -> Snapshot:
        """The current vectors (cached per process and directory while the files are unchanged)."""
        m = self.meta()
        if not self.ready():
            return Snapshot.empty()
        snap = m["snapshot"]
        delta = self.dir / f"{snap}.delta.jsonl"
        key = self._key(snap)
        cached = _LOADED.get(self.dir)
        if cached is not None and cached[0] == key:
            return cached[1]
        vecs = np.load(self.dir / f"{snap}.vecs.npy", mmap_mode="r")
        with np.load(self.dir / f"{snap}.rows.npz", allow_pickle=False) as z:
            ids = z["ids"]
            hashes = z["hashes"]
            codes = {k: z[f"c_{k}"] for k in ("subject", "status", "layer", "kind")}
            vocab = {k: z[f"v_{k}"].tolist() for k in ("subject", "status", "layer", "kind")}
        s = Snapshot(vecs, ids, hashes, codes, vocab)
        if delta.exists():
            for line in delta.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue  # a line torn by a crash: that memory is re-encoded on the next rebuild
                if rec.get("deleted"):
                    s._override(rec["id"], None, None)
                else:
                    vec = np.frombuffer(base64.b64decode(rec["vec"]), dtype=np.float32)
                    s._override(rec["id"], VecDocMeta(rec["hash"], rec["subject"], rec["status"],
                                                      rec["layer"], rec["kind"]), vec)
                s.delta_lines += 1
        _LOADED[self.dir] = (key, s)
        return s

    # ---- writing -------------------------------------------------------------------
    def rebuild(self, docs: Iterable[VecDoc], encoder: embed.Encoder, *, commit: str | None,
                progress: Callable[[int, int], None] | None = None, dirty: Iterable[str] = ()) -> int:
        """All vectors anew from ``docs`` (cached vectors reused by content hash); returns the count."""
        with self.lock():
            old = self.load() if self.ready() else Snapshot.empty()
            cache = old.cache()
            docs = list(docs)
            hashes = [embed.text_hash(d.text) for d in docs]
            todo: dict[str, str] = {}
            for d, h in zip(docs, hashes):
                if h not in cache:
                    todo.setdefault(h, d.text)
            if todo:
                total = len(todo)
                texts = list(todo.values())
                done = 0
                for batch in encoder.batches(texts):
                    vecs = _unit(batch)
                    for h, v in zip(list(todo)[done:done + len(vecs)], vecs):
                        cache[h] = v
                    done += len(vecs)
                    if progress:
                        progress(done, total)
            entries = sorted(((d.id, VecDocMeta(h, d.subject, d.status, d.layer, d.kind), cache[h])
                              for d, h in zip(docs, hashes)), key=lambda e: e[0])
            self._write_snapshot(entries, commit, dirty=sorted(dirty))
            return len(entries)

    def apply(self, upserts: Iterable[VecDoc], deletes: Iterable[str], encoder: embed.Encoder, *,
              commit: str | None, dirty: Iterable[str] = ()) -> int:
        """Append changed and deleted memories to the delta; returns how many texts were encoded."""
        with self.lock():
            s = self.load()
            lines, encoded = [], 0
            pending = []
            for d in upserts:
                h = embed.text_hash(d.text)
                meta = VecDocMeta(h, d.subject, d.status, d.layer, d.kind)
                vec = s.vector(d.id) if s.hash_of(d.id) == h else s.find_hash(h)
                if vec is None:
                    pending.append((d, meta))
                else:
                    lines.append((d.id, meta, vec))
            if pending:
                vecs = np.concatenate([_unit(b) for b in encoder.batches([d.text for d, _ in pending])])
                encoded = len(pending)
                lines += [(d.id, meta, v) for (d, meta), v in zip(pending, vecs)]
            lines += [(mid, None, None) for mid in deletes]
            _LOADED.pop(self.dir, None)  # ``s`` changes below: nobody may reuse it unless the write succeeds
            for mid, meta, vec in lines:
                s._override(mid, meta, vec)
            s.delta_lines += len(lines)
            m = self.meta()
            if s.delta_lines > COMPACT_AT:
                self._write_snapshot(sorted(s.items(), key=lambda e: e[0]), commit, dirty=sorted(dirty))
                return encoded
            delta = self.dir / f"{m['snapshot']}.delta.jsonl"
            if lines:
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
                           "layer": meta.layer, "kind": meta.kind, "vec": data}, ensure_ascii=False)

    def _write_snapshot(self, entries: list, commit: str | None, dirty: list[str]) -> None:
        old = self.meta().get("snapshot")
        n = int(old.split("-")[1]) + 1 if isinstance(old, str) and re.fullmatch(r"snap-\d+", old) else 1
        snap = f"snap-{n:06d}"
        self.dir.mkdir(parents=True, exist_ok=True)
        vecs = np.zeros((len(entries), embed.DIM), dtype=np.float32)
        for i, (_, _, v) in enumerate(entries):
            vecs[i] = v
        np.save(self.dir / f"{snap}.vecs.npy", vecs)
        arrays = {"ids": np.array([e[0] for e in entries], dtype=str),
                  "hashes": np.array([e[1].hash for e in entries], dtype=str)}
        for field in ("subject", "status", "layer", "kind"):
            values = [getattr(e[1], field) for e in entries]
            vocab = sorted(set(values))
            index = {v: i for i, v in enumerate(vocab)}
            arrays[f"c_{field}"] = np.array([index[v] for v in values], dtype=np.int32)
            arrays[f"v_{field}"] = np.array(vocab, dtype=str)
        with open(self.dir / f"{snap}.rows.npz", "wb") as fh:
            np.savez(fh, **arrays)
        _atomic_write(self.dir / "meta.json", json.dumps(
            {"format": FORMAT, "model": self.model, "commit": commit, "snapshot": snap, "dirty": dirty}).encode())
        for path in self.dir.glob("snap-*"):
            if not path.name.startswith(snap + "."):
                path.unlink(missing_ok=True)
        _LOADED.pop(self.dir, None)
