"""Memory vectors on disk: derived state beside the Whoosh index, written and read here.

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
    encoded-<model>.partial  while a build encodes: each unit's vectors as they come (content
                             hash, float32 vector, CRC-32 per record); a build killed midway
                             leaves it, the next build of the same model starts from it
    build.json               the last build's progress (:mod:`memrepo.retrieval.vector_progress`)
    build-plan.jsonl         a build's input, written before it starts, removed when it is done
                             (:mod:`memrepo.retrieval.vector_plan`)
    write.lock               fcntl lock: one writer at a time

Like the index, the vectors record the git commit they reflect and catch up from git
(:mod:`memrepo.retrieval.semantic` diffs that commit with HEAD and re-reads the changed files,
plus uncommitted edits). A change is appended to the delta; past ``COMPACT_AT`` appended lines a new snapshot
is written and ``meta.json`` flips to it atomically. Every vector is cached by the hash of
the text it encodes, so a rebuild, a revert or a re-index never encodes the same text twice.
Vectors of another model or model version are thrown away and rebuilt.

The loaded state and the nearest memories within a search's filters are
:mod:`memrepo.retrieval.vector_snapshot`. A snapshot of ``ann_above`` rows or more gets an IVF
index (:mod:`memrepo.retrieval.ivf`), written with its snapshot before ``meta.json`` flips to
it; a snapshot without a readable index is searched exactly. Format 4 is written only for a
snapshot with an index: a memrepo that knows format 3 alone takes it for vectors it cannot
read and rebuilds them, never misreads them. Formats 1 and 2 (without tags and dates) are not
searched: they are rebuilt from the memory files, their vectors reused by content hash
(nothing is encoded again).
"""
from __future__ import annotations

import base64
import json
import os
import pickle
import re
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from numpy.lib import format as npformat

from memrepo.retrieval import embed, ivf
from memrepo.retrieval.filters import CODED, Facets
from memrepo.retrieval.vector_progress import Tracker
from memrepo.retrieval.vector_snapshot import ANN_ABOVE, NO_DATE, Snapshot, Stored
from memrepo.store import faults
from memrepo.store.files import atomic_write
from memrepo.store.lock import is_locked, locked

if TYPE_CHECKING:  # pragma: no cover
    from memrepo.retrieval.fields import IndexDoc

FORMAT = 3                 # rows sorted by memory id
FORMAT_IVF = 4             # rows grouped by IVF list (rows.npz maps each id to its row)
OLDER = {1: FORMAT, 2: FORMAT_IVF}   # formats without tags and dates: their vectors are reused by a rebuild
COMPACT_AT = 2000          # delta lines before a new snapshot is written
FIND_HASH_MAX = 64         # upserts looked up by a pass over the rows each; more: through one dict
LOCK_WAIT_S = 10.0
# per process, the last state loaded from each vectors directory: every search makes a new
# VectorStore, and re-reading 100k ids and hashes cost ~150 ms of CPU per search
_LOADED: dict[Path, tuple[tuple, Snapshot]] = {}
_META: dict[Path, tuple[tuple, dict]] = {}  # per process, each vectors directory's meta.json and its stat
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


class VectorsMoved(Exception):
    """The vectors are no longer in the state a build was planned on (another process wrote
    them since): the plan is of no use."""


class Item(NamedTuple):
    """What the vectors need of a memory: its id, the text its vector encodes and its facets."""
    id: str
    text: str
    facets: Facets


def item_of(doc: IndexDoc | Item) -> Item:
    """A memory's :class:`Item` from its index document (an Item stays as it is)."""
    if isinstance(doc, Item):
        return doc
    return Item(doc.id, embed.memory_text(doc.summary, doc.body), Facets.of(doc))


ANY = object()   # rebuild's and apply's ``expect``: whatever state the vectors are in


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


class _Discard:
    """Where an encoding too small to resume keeps its vectors: nowhere."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        return None

    def write(self, data: bytes) -> None:
        pass

    def flush(self) -> None:
        pass


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

    def state(self) -> tuple | None:
        """What identifies the vectors as they are (snapshot, commit and uncommitted files
        they reflect), None when there are none: a build planned on one state is of no use
        on another (``expect``)."""
        m = self.meta()
        return (m.get("snapshot"), m.get("commit"), m.get("dirty")) if self.ready() else None

    def _expect(self, expect) -> None:
        if expect is not ANY and self.state() != (tuple(expect) if expect is not None else None):
            raise VectorsMoved(f"the vectors in {self.dir} changed since the build was planned")

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
                        s.override(rec["id"], None, None)
                    else:
                        vec = np.frombuffer(base64.b64decode(rec["vec"]), dtype=np.float32)
                        if vec.shape != (embed.DIM,):
                            raise ValueError("not a vector")
                        s.override(rec["id"], Stored(rec["hash"], Facets.from_json(rec)), vec)
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
            codes = {k: z[f"c_{k}"] for k in CODED}
            vocab = {k: z[f"v_{k}"].tolist() for k in CODED}
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
            s.ivf = ivf.Ivf.read(self.dir / f"{snap}.ivf.npy", offsets, matrix_row, trained_on)  # unreadable: exact
        return s

    # ---- writing -------------------------------------------------------------------
    def rebuild(self, docs: Iterable[IndexDoc | Item], encoder: embed.Encoder, *, commit: str | None,
                progress: Callable[[int, int], None] | None = None, dirty: Iterable[str] = (),
                expect: Any = ANY) -> int:
        """All vectors anew from the memories ``docs`` (cached vectors reused by content hash);
        returns the count. ``progress(ready, total)``: memories with their vector, of all;
        ``expect``: the :meth:`state` the build was planned on (else VectorsMoved)."""
        with self.lock():
            self._expect(expect)
            try:   # a format without tags and dates: its vectors still serve
                known = self.load(older=True).cache()
            except VectorsCorrupt:
                known = {}                          # unreadable: nothing of it is reused
            items = [item_of(d) for d in docs]
            hashes = [embed.text_hash(i.text) for i in items]
            todo: dict[str, str] = {}
            waiting: Counter[str] = Counter()
            for item, h in zip(items, hashes):
                if h not in known:
                    todo.setdefault(h, item.text)
                    waiting[h] += 1
            tracker = Tracker(self.dir, len(items), waiting, progress)
            self._encode(todo, encoder, known, tracker, resume=True)
            entries = sorted(((i.id, Stored(h, i.facets), known[h]) for i, h in zip(items, hashes)),
                             key=lambda e: e[0])
            tracker.writing()
            self._write_snapshot(entries, commit, dirty=sorted(dirty))
            tracker.done()
            return len(entries)

    def _encode(self, todo: dict[str, str], encoder: embed.Encoder, known: dict[str, np.ndarray],
                tracker: Tracker | None, *, resume: bool) -> None:
        """Encode ``todo`` (content hash -> text, in the build's order) into ``known``, a unit
        of texts at a time (:meth:`~memrepo.retrieval.embed.Encoder.encode_unit`: its vectors
        depend on its texts alone). With ``resume``, each unit's vectors are kept in the
        partial file as they come, and a unit a killed build kept whole is taken from there:
        the units are cut from the whole of ``todo`` alike in every run, so the vectors are
        the bits an uninterrupted build writes; a unit kept in part is encoded again."""
        keys = list(todo)
        unit = getattr(encoder, "unit", embed.UNIT)
        kept = self._read_partial() if resume and keys else {}
        reused: list[str] = []
        chosen: list[str] = []
        for start in range(0, len(keys), unit):
            part = keys[start:start + unit]
            (reused if all(k in kept for k in part) else chosen).extend(part)
        known.update((k, kept[k]) for k in reused)
        if tracker:
            tracker.begin(reused)
        if not chosen:
            return
        with (open(self._partial_path(), "ab") if resume else _Discard()) as fh:
            done = 0
            for batch in encoder.batches([todo[k] for k in chosen]):
                vecs = ivf.unit(batch)
                batch_keys = chosen[done:done + len(vecs)]
                known.update(zip(batch_keys, vecs))
                _keep(fh, batch_keys, vecs)
                done += len(vecs)
                if tracker:
                    tracker.encoded(batch_keys)
                faults.point("vectors-checkpointed")

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

    def apply(self, upserts: Iterable[IndexDoc | Item], deletes: Iterable[str], encoder: embed.Encoder, *,
              commit: str | None, dirty: Iterable[str] = (), expect: Any = ANY,
              progress: Callable[[int, int], None] | None = None) -> int:
        """Append changed and deleted memories (ids) to the delta; returns how many texts were
        encoded. More than a unit of new texts (a bulk change) is encoded as a build is: kept
        as it comes, resumed when killed, with its progress in ``build.json``."""
        with self.lock():
            self._expect(expect)
            s = self.load()
            lines: list[tuple[str, Stored | None, Any]] = []
            pending: list[tuple[Item, Stored]] = []
            todo: dict[str, str] = {}
            waiting: Counter[str] = Counter()
            items = [item_of(d) for d in upserts]
            by_hash = s.cache() if len(items) > FIND_HASH_MAX else None   # one dict, not a pass over the rows each
            for item in items:
                h = embed.text_hash(item.text)
                meta = Stored(h, item.facets)
                if s.meta_of(item.id) == meta:
                    continue  # stored as it is (an uncommitted edit is handed over on every search)
                vec = (s.vector(item.id) if s.hash_of(item.id) == h
                       else s.find_hash(h) if by_hash is None else by_hash.get(h))
                if vec is None:
                    pending.append((item, meta))
                    todo.setdefault(h, item.text)
                    waiting[h] += 1
                else:
                    lines.append((item.id, meta, vec))
            known: dict[str, np.ndarray] = {}
            tracker = None
            if todo:
                bulk = len(todo) > getattr(encoder, "unit", embed.UNIT)
                tracker = Tracker(self.dir, s.count() + len(pending), waiting, progress) if bulk else None
                self._encode(todo, encoder, known, tracker, resume=bulk)
                lines += [(item.id, meta, known[meta.hash]) for item, meta in pending]
            lines += [(mid, None, None) for mid in deletes if s.hash_of(mid) is not None]
            encoded = len(todo)
            m = self.meta()
            if not lines:   # only the commit or the uncommitted files moved (if anything did)
                if (m.get("commit"), m.get("dirty")) != (commit, sorted(dirty)):
                    m.update(commit=commit, dirty=sorted(dirty))
                    _atomic_write(self.dir / "meta.json", json.dumps(m).encode())
                return encoded
            _LOADED.pop(self.dir, None)  # ``s`` changes below: nobody may reuse it unless the write succeeds
            for mid, stored, vec in lines:
                s.override(mid, stored, vec)
            s.delta_lines += len(lines)
            if s.delta_lines > COMPACT_AT:
                self._write_snapshot(sorted(s.items(), key=lambda e: e[0]), commit, dirty=sorted(dirty), previous=s)
            else:
                delta = self.dir / f"{m['snapshot']}.delta.jsonl"
                _cut_torn_tail(delta)
                with open(delta, "a", encoding="utf-8") as fh:
                    fh.write("".join(self._line(mid, meta, vec) + "\n" for mid, meta, vec in lines))
                m.update(commit=commit, dirty=sorted(dirty))
                _atomic_write(self.dir / "meta.json", json.dumps(m).encode())
                # the loaded state already has the change: keep it for this process's searches
                _LOADED[self.dir] = (self._key(m["snapshot"]), s)
            if tracker:   # its vectors are in the delta now (a snapshot removes the file too)
                self._partial_path().unlink(missing_ok=True)
                tracker.done()
            return encoded

    @staticmethod
    def _line(memory_id: str, meta: Stored | None, vec) -> str:
        if meta is None:
            return json.dumps({"id": memory_id, "deleted": True})
        data = base64.b64encode(np.asarray(vec, dtype=np.float32).tobytes()).decode("ascii")
        return json.dumps({"id": memory_id, "hash": meta.hash, **meta.facets.as_json(), "vec": data}, ensure_ascii=False)

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
        arrays: dict[str, Any] = {"ids": np.array([e[0] for e in entries], dtype=str),
                  "hashes": np.array([e[1].hash for e in entries], dtype=str)}
        ann = self._index(vecs, arrays["ids"], previous) if len(entries) >= self.ann_above else None
        if ann is None:
            with open(self.dir / f"{snap}.vecs.npy", "wb") as fh:
                np.save(fh, vecs)
                _sync(fh)
        else:  # the matrix in list order, written a chunk at a time (no second copy in memory; through
            # a file, not a writable mapping, whose page faults cost ~1 s of CPU at 100k rows)
            with open(self.dir / f"{snap}.vecs.npy", "wb") as fh:
                npformat.write_array_header_1_0(fh, npformat.header_data_from_array_1_0(vecs))
                for start in range(0, len(vecs), ivf.CHUNK):
                    fh.write(vecs[ann.order[start:start + ivf.CHUNK]].tobytes())
                _sync(fh)
            arrays["matrix_row"] = np.empty(len(vecs), dtype=np.int32)
            arrays["matrix_row"][ann.order] = np.arange(len(vecs), dtype=np.int32)
            arrays["list_offsets"] = ann.offsets
            arrays["trained_on"] = np.array(ann.trained_on, dtype=np.int64)
        for field in CODED:
            values = [getattr(e[1].facets, field) for e in entries]
            vocab = sorted(set(values))
            index = {v: i for i, v in enumerate(vocab)}
            arrays[f"c_{field}"] = np.array([index[v] for v in values], dtype=np.int32)
            arrays[f"v_{field}"] = np.array(vocab, dtype=str)
        tag_vocab = sorted({t for e in entries for t in e[1].facets.tags})
        tag_code = {t: i for i, t in enumerate(tag_vocab)}
        arrays["tag_offsets"] = np.zeros(len(entries) + 1, dtype=np.int64)
        np.cumsum([len(e[1].facets.tags) for e in entries], out=arrays["tag_offsets"][1:])
        arrays["tag_codes"] = np.array([tag_code[t] for e in entries for t in e[1].facets.tags], dtype=np.int32)
        arrays["v_tag"] = np.array(tag_vocab, dtype=str)
        arrays["created"] = np.array([NO_DATE if e[1].facets.created is None else e[1].facets.created for e in entries],
                                     dtype=np.int64)
        with open(self.dir / f"{snap}.rows.npz", "wb") as fh:
            np.savez(fh, **arrays)
            _sync(fh)
        if ann is not None:
            with open(self.dir / f"{snap}.ivf.npy", "wb") as fh:
                np.save(fh, ann.centroids)
                _sync(fh)
        faults.point("vectors-snapshot-written")
        _atomic_write(self.dir / "meta.json", json.dumps(
            {"format": FORMAT if ann is None else FORMAT_IVF, "model": self.model, "commit": commit, "snapshot": snap, "dirty": dirty}).encode())
        for path in self.dir.glob("snap-*"):
            if not path.name.startswith(snap + "."):
                path.unlink(missing_ok=True)
        for path in self.dir.glob("encoded-*.partial"):   # a build's (this one's, or a killed one's
            path.unlink(missing_ok=True)                   # overtaken by this snapshot)
        _LOADED.pop(self.dir, None)

    @staticmethod
    def _index(vecs: np.ndarray, ids: np.ndarray, previous: Snapshot | None) -> ivf.Ivf:
        """The IVF index of a new snapshot's rows (:func:`memrepo.retrieval.ivf.build`)."""
        with embed.one_blas_thread():
            return ivf.build(vecs, ids, previous)
