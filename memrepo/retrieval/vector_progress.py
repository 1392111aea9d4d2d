"""A vector build's progress on disk: how many memories have their vector, of how many, how soon.

``build.json`` beside the vectors, written whole (temp file and rename) by the process that
builds them, in the foreground or the background: when it has taken the vectors' write lock,
after each unit of texts it encodes, when it writes the snapshot and when it is done. Any
process reads it to say "building (N of M)" and how long is left (``memrepo status``, a
search meanwhile); one left behind in another state than ``done`` by a process that no longer
holds the lock is a build that was killed (the next build resumes it). Derived, like the
vectors: a missing or unreadable file means no progress to show.
"""
from __future__ import annotations

import json
import os
import resource
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from memrepo.store.files import atomic_write

FILE = "build.json"


@dataclass(frozen=True)
class Progress:
    """One build's progress. ``ready`` of ``total`` memories have their vector (kept from
    before, or encoded by this run); ``encoded`` of the ``encode`` texts this run encodes are
    done; ``kept``: texts a killed build had encoded that this run did not encode again."""
    state: str            # "encoding", "writing" (the snapshot) or "done"
    total: int
    ready: int
    encode: int
    encoded: int
    kept: int
    started: float        # when this run took the lock (epoch seconds)
    encoding_since: float  # when its first unit began (after reading what it reuses)
    updated: float
    pid: int
    cpu_s: float          # the run's CPU so far, its encoding workers' once they have ended

    def eta_s(self, now: float | None = None) -> float | None:
        """Seconds of encoding left at this run's pace so far (None: no unit done yet)."""
        if self.state != "encoding":
            return 0.0 if self.state == "writing" else None
        if self.encoded <= 0 or self.updated <= self.encoding_since:
            return None
        left = (self.encode - self.encoded) * (self.updated - self.encoding_since) / self.encoded
        return max(0.0, left - max(0.0, (now or time.time()) - self.updated))

    def as_dict(self) -> dict:
        return {**asdict(self), "eta_s": self.eta_rounded()}

    def eta_rounded(self) -> int | None:
        eta = self.eta_s()
        return None if eta is None else round(eta)

    def shown(self) -> dict:
        """What a search says of it (``--json``: ``semantic_progress``)."""
        return {"ready": self.ready, "total": self.total, "eta_s": self.eta_rounded()}


def read(folder: Path) -> Progress | None:
    """The progress the last build in ``folder`` wrote (None: none, or unreadable)."""
    try:
        data = json.loads((Path(folder) / FILE).read_bytes())
        return Progress(**{k: data[k] for k in Progress.__dataclass_fields__})
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


class Tracker:
    """What a build writes as it goes. ``waiting``: how many of its memories have each text
    still to be encoded (content hash -> memories); ``total``: its memories in all.
    ``progress(ready, total)`` also sees each step (a progress bar)."""

    def __init__(self, folder: Path, total: int, waiting: Counter[str],
                 progress: Callable[[int, int], None] | None = None) -> None:
        self.path = Path(folder) / FILE
        self.waiting = waiting
        self.progress = progress
        self._shown: tuple[int, int] | None = None
        now = time.time()
        self.cpu0 = _cpu()
        self.state = Progress("encoding", total, total - sum(waiting.values()), len(waiting), 0, 0,
                              now, now, now, os.getpid(), 0.0)
        self._write()

    def begin(self, kept: Iterable[str]) -> None:
        """The texts a killed build kept are there: encoding starts now."""
        kept = list(kept)
        self._write(ready=self.state.ready + self._memories(kept), encode=self.state.encode - len(kept),
                    kept=len(kept), encoding_since=time.time())

    def encoded(self, hashes: Iterable[str]) -> None:
        hashes = list(hashes)
        self._write(ready=self.state.ready + self._memories(hashes), encoded=self.state.encoded + len(hashes))

    def writing(self) -> None:
        self._write(state="writing", ready=self.state.total)

    def done(self) -> None:
        self._write(state="done", ready=self.state.total)

    def _memories(self, hashes: list[str]) -> int:
        return sum(self.waiting.get(h, 0) for h in hashes)

    def _write(self, **changes) -> None:
        now = time.time()
        s = self.state = Progress(**{**asdict(self.state), **changes, "updated": now,
                                     "cpu_s": round(_cpu() - self.cpu0, 2)})
        try:
            atomic_write(self.path, json.dumps(asdict(s)).encode())
        except OSError:
            pass   # only a report: the build goes on
        if self.progress and (s.ready, s.total) != self._shown:
            self._shown = (s.ready, s.total)
            self.progress(s.ready, s.total)
