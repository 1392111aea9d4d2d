"""Cost of the semantic layer at scale: vector store and model, without re-encoding 100k texts.

    .venv/bin/python bench/semantic_perf.py [--n 100000] [--queries 200]

The store is filled with random unit vectors (the cost of a cosine does not depend on what a
vector means) over 50 subjects, then measures: snapshot write, a fresh process's load (the
memory-mapped matrix), ``top`` p50/p95 unfiltered and within one subject, a one-memory
``apply`` (one model encoding plus the delta append), the size on disk; and the model: load
from the wheel, load from the unpacked cache, query encoding p50 for an English question and a
200-character Chinese dialogue.
"""
from __future__ import annotations

import sys
from pathlib import Path

# bench/secrets.py would shadow the standard library's secrets (numpy.random imports it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from memrepo.retrieval import embed  # noqa: E402
from memrepo.retrieval.fields import IndexDoc  # noqa: E402
from memrepo.retrieval.filters import Facets, Filters  # noqa: E402
from memrepo.retrieval.vector_snapshot import Stored  # noqa: E402
from memrepo.retrieval.vectors import VectorStore  # noqa: E402


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args(argv)
    rng = np.random.default_rng(7)
    with tempfile.TemporaryDirectory(prefix="memrepo-semperf-") as tmp:
        store = VectorStore(Path(tmp) / "vectors")
        vecs = rng.standard_normal((args.n, embed.DIM), dtype=np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        entries = [(f"m{i:07d}", Stored(f"{i:024x}", Facets(f"subject-{i % 50}", "active", "L1", "event")), vecs[i])
                   for i in range(args.n)]
        t = time.perf_counter()
        store._write_snapshot(entries, None, [])
        print(f"n={args.n}: snapshot write {time.perf_counter() - t:.2f} s; on disk "
              f"{sum(p.stat().st_size for p in store.dir.iterdir()) / 1e6:.0f} MB")
        code = ("import time,sys; t=time.perf_counter(); from memrepo.retrieval.vectors import VectorStore; "
                f"s=VectorStore(__import__('pathlib').Path({str(store.dir)!r})).load(); "
                "print(f'{1000*(time.perf_counter()-t):.0f}')")
        loads = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
                 for _ in range(5)]
        print(f"load in a fresh process (numpy import included) p50 {statistics.median(loads):.0f} ms")
        # resident memory of the vectors: a fresh process's RSS (VmRSS; ru_maxrss would carry this
        # process's peak over the exec) after the imports, and after the load plus one unfiltered
        # top-30, which touches every row of the memory map
        code = ("import numpy; from pathlib import Path; from memrepo.retrieval.vectors import VectorStore\n"
                "from memrepo.retrieval.filters import Filters\n"
                "def rss(): return int([x for x in open('/proc/self/status') if x.startswith('VmRSS')][0].split()[1])\n"
                f"r0 = rss(); s = VectorStore(Path({str(store.dir)!r})).load()\n"
                "s.top(numpy.ones(%d, dtype=numpy.float32) / %d ** 0.5, 30, Filters.where(statuses={'active'})); print(r0, rss())"
                ) % (embed.DIM, embed.DIM)
        r0, r1 = map(int, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                         check=True).stdout.split())
        print(f"resident memory of the loaded vectors (RSS after load + one top-30 minus after imports): "
              f"{(r1 - r0) / 1024:.0f} MB (process total {r1 / 1024:.0f} MB)")
        snap = store.load()
        qs = rng.standard_normal((args.queries, embed.DIM), dtype=np.float32)
        for label, kw in (("unfiltered", {}), ("one subject (2%)", {"subject": "subject-3"})):
            lat, cpu = [], []
            for q in qs:
                t, c = time.perf_counter(), time.process_time()
                snap.top(q, 30, Filters.where(statuses={"active"}, **kw))
                lat.append(1000 * (time.perf_counter() - t))
                cpu.append(1000 * (time.process_time() - c))
            print(f"top-30 {label}: p50 {statistics.median(lat):.1f} ms, p95 {pct(lat, 0.95):.1f} ms "
                  f"(CPU p50 {statistics.median(cpu):.1f} ms)")
        enc = embed.Encoder(Path(tmp) / "model")
        t = time.perf_counter()
        enc._load()
        print(f"model load from the wheel (writes the cache): {time.perf_counter() - t:.2f} s")
        code = ("import time; t=time.perf_counter(); from memrepo.retrieval import embed; "
                f"e=embed.Encoder(__import__('pathlib').Path({str(Path(tmp) / 'model')!r})); e._load(); "
                "print(f'{1000*(time.perf_counter()-t):.0f}')")
        loads = [float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
                 for _ in range(5)]
        print(f"model load from the cache in a fresh process p50 {statistics.median(loads):.0f} ms")
        for label, text in (("English question", "What did Caroline research about adoption agencies?"),
                            ("Chinese dialogue 200 chars", "用户:\"嘿，你知道吗？元旦晚会我要表演魔术！\"\n" * 8)):
            lat, cpu = [], []
            for _ in range(30):
                t, c = time.perf_counter(), time.process_time()
                enc.query(text)
                lat.append(1000 * (time.perf_counter() - t))
                cpu.append(1000 * (time.process_time() - c))
            print(f"query encoding, {label}: p50 {statistics.median(lat):.1f} ms (CPU {statistics.median(cpu):.1f} ms)")
        lat = []
        for i in range(20):
            t = time.perf_counter()  # wall: includes reloading the changed delta
            edited = IndexDoc(id=f"m{i:07d}", path=f"memories/L1/m{i:07d}.md", layer="L1", kind="event", subject="subject-1",
                              fact=None, status="active", summary="", body=f"an edited memory number {i}", tags=(),
                              created=None, updated=None)
            store.apply([edited], [],
                        enc, commit=None)
            lat.append(1000 * (time.perf_counter() - t))
        print(f"apply one changed memory (encode + append): p50 {statistics.median(lat):.1f} ms, p95 {pct(lat, 0.95):.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
