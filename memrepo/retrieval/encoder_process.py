"""The encoder's child processes and the protocol they speak.

Two kinds of child, each a plain ``python -c`` running :func:`memrepo.retrieval.embed.serve`
(started by :mod:`memrepo.store.processes`; multiprocessing's spawn would run the caller's
script again in it, and a script without a main guard then failed):

* a **query child** (:class:`QueryProcess`): a process that searches repeatedly encodes its
  queries there while its own thread ranks the keywords;
* **bulk workers** (:func:`encode_in_workers`): a large encoding on every core.

Messages go both ways on the child's stdin and stdout: a 4-byte little-endian length and its
bytes. A query child first says ``ready`` (or ``failed``), then answers each query text (UTF-8)
with its vector; a bulk worker answers each JSON list of texts with their vectors; an empty
answer means it could not encode that message. Vectors cross as raw float32 bytes, which the
caller's ``decode`` turns into arrays. A child that fails, ends or stops answering is given
up, and whatever it owed is encoded by the caller: the vectors are the same. A child ends
with its parent (its stdin closes) and ignores Ctrl-C, the parent's to handle.
"""
from __future__ import annotations

import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from memrepo.store import processes

QUERY_PROCESS_ENV = "MEMREPO_QUERY_PROCESS"
WORKERS_ENV = "MEMREPO_ENCODE_WORKERS"
QUERY_TIMEOUT = 30.0   # seconds without an answer after which a query child is given up
BULK_TIMEOUT = 600.0   # ... and a bulk worker (a unit of 512 memories takes ~3-10 s)


def cores() -> int:
    """The cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def workers() -> int:
    """Processes for a bulk encoding: the cores this process may use (at most 8), or
    ``MEMREPO_ENCODE_WORKERS``; one core encodes ≈ 60-140 memories per second."""
    value = os.environ.get(WORKERS_ENV, "")
    if value.isdigit() and int(value) > 0:
        return int(value)
    return max(1, min(cores(), 8))


def start(cache_dir: Path | None, *, bulk: bool) -> Any:
    """A child running :func:`memrepo.retrieval.embed.serve` on pipes, or None when no
    process can be started (then this process encodes)."""
    code = f"from memrepo.retrieval.embed import serve; serve({str(cache_dir) if cache_dir else None!r}, bulk={bulk!r})"
    return processes.start_piped("-c", code)


def send(stream, data: bytes) -> None:
    """Write one message."""
    message = memoryview(len(data).to_bytes(4, "little") + data)
    while message:
        message = message[stream.write(message):]
    stream.flush()


def receive(stream) -> bytes:
    """Read one message (EOFError when the stream ends first)."""
    return _exactly(stream, int.from_bytes(_exactly(stream, 4), "little"))


def _exactly(stream, n: int) -> bytes:
    data = b""
    while len(data) < n:
        part = stream.read(n - len(data))
        if not part:
            raise EOFError
        data += part
    return data


def _waiting(proc, timeout: float) -> bool:
    import select
    return bool(select.select([proc.stdout], [], [], timeout)[0])


def _answer(proc, timeout: float) -> bytes | None:
    """The child's next message; None when it ended, failed or sent nothing for ``timeout`` s."""
    try:
        if not _waiting(proc, timeout):
            return None
        return receive(proc.stdout)
    except (EOFError, OSError, ValueError):
        return None


class QueryProcess:
    """A child process that encodes the queries of a process that searches repeatedly (the
    model loaded there). Texts go down and vectors come back in the order sent; a child that
    fails, ends or stops answering is given up on its next use, and every text it still owed
    is encoded by the caller, so a search never fails for it. ``decode`` turns an answer into
    a vector (None: not one)."""

    def __init__(self, proc, decode: Callable[[bytes], Any] = lambda data: None) -> None:
        self._proc = proc
        self._decode = decode
        self._lock = threading.Lock()   # the pipes: one sender or reader at a time
        self._owed: deque[QueryVector] = deque()   # sent and not answered yet, in order
        self._state = "starting" if proc is not None else "failed"   # then "ready" or "failed"

    @staticmethod
    def wanted() -> bool:
        """Whether a query child is worth it: a second core, and not ``MEMREPO_QUERY_PROCESS=0``."""
        return os.environ.get(QUERY_PROCESS_ENV, "") != "0" and cores() >= 2

    @classmethod
    def start(cls, cache_dir: Path | None, decode: Callable[[bytes], Any] = lambda data: None) -> QueryProcess:
        return cls(start(cache_dir, bulk=False), decode)

    def ready(self) -> bool:
        """Whether the child has loaded the model (without waiting for it)."""
        if self._state == "starting" and self._lock.acquire(blocking=False):
            try:
                if self._state == "starting" and _waiting(self._proc, 0):
                    self._state = "ready" if _answer(self._proc, 0) == b"ready" else "failed"
                    if self._state == "failed":
                        self._fail()
            finally:
                self._lock.release()
        return self._state == "ready"

    def submit(self, text: str, fallback: Callable[[str], object]) -> QueryVector:
        """Send ``text`` to the child (``fallback`` encodes it here if the child cannot)."""
        future = QueryVector(self, text, fallback)
        with self._lock:
            if self._state == "ready":
                try:
                    send(self._proc.stdin, text.encode("utf-8", "surrogatepass"))
                    self._owed.append(future)
                except (OSError, ValueError):
                    self._fail()
        return future

    def answer(self, future: QueryVector) -> None:
        """Read answers until ``future``'s has come (or the child is given up)."""
        with self._lock:
            while not future.answered and self._state == "ready" and self._owed:
                data = _answer(self._proc, QUERY_TIMEOUT)
                if data is None:   # ended, failed or hung: given up
                    self._fail()
                    break
                head = self._owed.popleft()
                head.answered = True
                head.vector = self._decode(data) if data else None

    def _fail(self) -> None:
        self._state = "failed"
        self._owed.clear()   # each of them is encoded by its caller
        processes.stop(self._proc)

    def close(self) -> None:
        with self._lock:
            self._fail()


class QueryVector:
    """A query's vector from :class:`QueryProcess` (``.result()``, like a future's)."""

    def __init__(self, remote: QueryProcess, text: str, fallback: Callable[[str], object]) -> None:
        self.remote, self.text, self.fallback = remote, text, fallback
        self.answered = False
        self.vector: Any = None

    def result(self):
        if self.vector is None and not self.answered:
            self.remote.answer(self)
        if self.vector is None:   # the child failed on it, or is gone
            self.vector = self.fallback(self.text)
        return self.vector


def encode_in_workers(texts: Sequence[str], n: int, cache_dir: Path | None, *, unit: int,
                      decode: Callable[[bytes, int], Any], fallback: Callable[[Sequence[str]], Any],
                      progress: Callable[[int], None] | None = None) -> Iterator:
    """The arrays of ``texts`` encoded by ``n`` bulk workers, ``unit`` texts a task (a worker
    encodes each as :meth:`~memrepo.retrieval.embed.Encoder.encode_unit` does), in order
    (``decode(answer, texts)``: an answer's array, None when it is not one; ``fallback``: a
    chunk encoded here). A worker has one chunk at a time: it writes its answer before it
    reads the next chunk, so sending it more could block both. A worker that fails, ends or
    stops answering leaves its chunks to this process."""
    chunks = [texts[i:i + unit] for i in range(0, len(texts), unit)]
    procs = [start(cache_dir, bulk=True) for _ in range(min(n, len(chunks)))]

    def submit(i: int) -> None:
        proc = procs[i % len(procs)]
        if proc is not None:
            try:
                send(proc.stdin, json.dumps(list(chunks[i])).encode())
            except (OSError, ValueError):
                processes.stop(proc)
                procs[i % len(procs)] = None
    try:
        for i in range(len(procs)):
            submit(i)
        done = 0
        for i, chunk in enumerate(chunks):
            k = i % len(procs)
            data = _answer(procs[k], BULK_TIMEOUT) if procs[k] is not None else None
            if data is None and procs[k] is not None:
                processes.stop(procs[k])
                procs[k] = None
            if i + len(procs) < len(chunks):
                submit(i + len(procs))
            array = decode(data, len(chunk)) if data is not None else None
            if array is None:   # this worker failed (on this chunk or for good): encoded here
                array = fallback(chunk)
            done += len(chunk)
            yield array
            if progress:
                progress(done)
    finally:
        for proc in procs:
            processes.stop(proc)
