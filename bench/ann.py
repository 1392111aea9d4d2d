"""Exact brute force vs an ANN index (usearch HNSW) at scale, and the vectors' memory.

    .venv/bin/python bench/ann.py [--n 100000] [--queries 200] [--bench ../shared/bench]

Needs ``pip install usearch==2.26.6`` (a measurement only: memrepo does not depend on it).
The vectors are not random: the memories of the dev benchmarks (LoCoMo and MADial, read from
``--bench`` at run time) are encoded with the product's model and each of the ``--n``
vectors is one of them plus noise (cosine ≈ 0.8 to its origin), so the index sees clusters
as real memories make; the queries are the benchmarks' real questions, encoded. A second run
uses uniformly random unit vectors (the hardest case for a graph index). Reported: exact
top-10 with the product's ``Snapshot.top`` (numpy, one core), HNSW build time, query time and
recall@10 against exact; then a fresh process's peak RSS when it loads the stored vectors and
answers the queries.
"""
from __future__ import annotations

import sys
from pathlib import Path

# bench/secrets.py would shadow the standard library's secrets (numpy.random imports it)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from memrepo.retrieval import embed  # noqa: E402
from memrepo.retrieval.vectors import VecDocMeta, VectorStore  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_retrieval", Path(__file__).resolve().parent / "retrieval.py")
_retrieval = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_retrieval)
DEFAULT_BENCH, convert, read_jsonl = _retrieval.DEFAULT_BENCH, _retrieval.convert, _retrieval.read_jsonl


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def real_vectors(bench: Path, work: Path) -> tuple[np.ndarray, list[str]]:
    texts, questions = [], []
    for name in ("locomo", "madial"):
        mem, qry = convert(bench, name, work)
        texts += [embed.memory_text(m.get("summary", ""), m.get("body", "")) for m in read_jsonl(mem)]
        questions += [q["question"] for q in read_jsonl(qry)]
    enc = embed.shared(embed.user_cache_dir())
    vecs = np.concatenate(list(enc.batches(texts)))
    return vecs / np.linalg.norm(vecs, axis=1, keepdims=True), questions


# the child's own peak (VmHWM, kB): ru_maxrss survives exec, so a child started by this large
# process reported this process's peak
PEAK = "def peak(): return int([x for x in open('/proc/self/status') if x.startswith('VmHWM')][0].split()[1])\n"


def run(label: str, vecs: np.ndarray, queries: np.ndarray, tmp: Path) -> None:
    from usearch.index import Index
    n = len(vecs)
    store = VectorStore(tmp / f"vectors-{label}")
    store._write_snapshot([(f"m{i:07d}", VecDocMeta(f"{i:024x}", f"s{i % 50}", "active", "L1", "event"), vecs[i])
                           for i in range(n)], None, [])
    snap = store.load()
    exact, cpu = [], []
    for q in queries:
        c = time.process_time()
        exact.append({int(mid[1:]) for mid, _ in snap.top(q, 10, statuses={"active"})})
        cpu.append(1000 * (time.process_time() - c))
    print(f"{label}, n={n}: exact top-10 (numpy, all {n}) CPU p50 {statistics.median(cpu):.1f} ms, "
          f"p95 {pct(cpu, 0.95):.1f} ms")
    index = Index(ndim=embed.DIM, metric="cos", dtype="f32", connectivity=16, expansion_add=128)
    c, t = time.process_time(), time.perf_counter()
    index.add(np.arange(n), vecs, threads=1)
    print(f"  usearch HNSW (M=16, ef_add=128) build: CPU {time.process_time() - c:.0f} s "
          f"(wall {time.perf_counter() - t:.0f} s), one thread")
    for ef in (64, 256):
        index.expansion_search = ef
        lat, hits = [], 0
        for q, want in zip(queries, exact):
            c = time.process_time()
            found = index.search(q, 10, threads=1)
            lat.append(1000 * (time.process_time() - c))
            hits += len(want & {int(k) for k in found.keys})
        print(f"  usearch ef_search={ef}: query CPU p50 {statistics.median(lat):.2f} ms, "
              f"recall@10 vs exact {hits / (10 * len(queries)):.3f}")
    code = ("import sys,numpy as np; from pathlib import Path; from memrepo.retrieval.vectors import VectorStore; "
            f"s=VectorStore(Path({str(store.dir)!r})).load(); q=np.load({str(tmp / 'q.npy')!r}); "
            "[s.top(v, 30, statuses={'active'}) for v in q]; "
            "print(peak())")
    np.save(tmp / "q.npy", queries)
    base = "import numpy; from memrepo.retrieval.vectors import VectorStore; print(peak())"
    rss = int(subprocess.run([sys.executable, "-c", PEAK + code], capture_output=True, text=True, check=True).stdout)
    rss0 = int(subprocess.run([sys.executable, "-c", PEAK + base], capture_output=True, text=True, check=True).stdout)
    size = sum(p.stat().st_size for p in store.dir.iterdir())
    print(f"  vectors on disk {size / 1e6:.0f} MB; a process that loads them and answers {len(queries)} queries: "
          f"peak RSS {rss / 1024:.0f} MB ({(rss - rss0) / 1024:.0f} MB over numpy + memrepo imported)")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--noise", type=float, default=0.03, help="per-dimension noise (0.03: cosine ≈ 0.8 to the origin)")
    args = ap.parse_args(argv)
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory(prefix="memrepo-ann-") as tmp:
        tmp = Path(tmp)
        centres, questions = real_vectors(args.bench, tmp)
        picked = rng.choice(len(questions), size=min(args.queries, len(questions)), replace=False)
        enc = embed.shared(embed.user_cache_dir())
        queries = np.stack([enc.query(questions[i]) for i in picked]).astype(np.float32)
        queries /= np.linalg.norm(queries, axis=1, keepdims=True)
        origin = rng.integers(0, len(centres), size=args.n)
        vecs = (centres[origin] + rng.normal(0, args.noise, (args.n, embed.DIM))).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        cos = float(np.mean(np.einsum("ij,ij->i", vecs[:1000], centres[origin[:1000]])))
        print(json.dumps({"centres": len(centres), "mean cosine to origin": round(cos, 3)}))
        run("clustered", vecs, queries, tmp)
        rnd = rng.standard_normal((args.n, embed.DIM)).astype(np.float32)
        rnd /= np.linalg.norm(rnd, axis=1, keepdims=True)
        run("uniform random", rnd, queries, tmp)
    print(f"this process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
