"""Exact brute force vs the product's IVF index (and optionally usearch HNSW) at scale.

    nice -n 10 .venv/bin/python bench/ann.py [--n 100000] [--queries 200] [--bench ../shared/bench]
        [--probes 0.02,0.03,0.05] [--sizes 10000,20000,50000] [--usearch] [--no-random]

The vectors are not random: the memories of the dev benchmarks (LoCoMo and MADial, read from
``--bench`` at run time) are encoded with the product's model and each of the ``--n``
vectors is one of them plus noise (cosine ≈ 0.8 to its origin), so the index sees clusters
as real memories make; the queries are the benchmarks' real questions, encoded. A second run
uses uniformly random unit vectors (the hardest case for any index). Reported, CPU time of
this process (one BLAS thread, as the product searches): the exact top-k of ``Snapshot.top``
over all rows; the IVF index's build (k-means trained anew) and its re-assignment as a
compaction does it; per IVF probe share, the query CPU and recall@10 / recall@30 against
exact (the product asks for 30); the whole ``apply`` that compacts the delta into a new
snapshot with and without the index; the exact scan at ``--sizes`` (where ``ann_above``
pays); a fresh process's peak RSS when it loads the vectors and answers the queries through
the index. ``--usearch`` adds HNSW rows (``pip install usearch==2.26.6``; memrepo does not
depend on it; its build is minutes of CPU at 100k).

The data is the benchmark kit's: the dev halves of the public LoCoMo and MADial-Bench
benchmarks (and its synthetic generator ``synth.py``), read at run time from ``../shared/bench``
beside the project and never copied in (their licences keep them out of this repository).
When the kit is absent the bench says where it looked and stops: pass ``--bench DIR``.
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
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from memrepo.retrieval import embed, ivf, vectors  # noqa: E402
from memrepo.retrieval.fields import IndexDoc  # noqa: E402
from memrepo.retrieval.filters import Facets, Filters  # noqa: E402
from memrepo.retrieval.vector_snapshot import Stored  # noqa: E402
from memrepo.retrieval.vectors import VectorStore  # noqa: E402

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


def cpu_ms(fn, *args, **kw) -> tuple[float, object]:
    c = time.process_time()
    out = fn(*args, **kw)
    return 1000 * (time.process_time() - c), out


def timed(snap, queries, k: int) -> tuple[list[float], list[list[str]]]:
    cpu, found = [], []
    for q in queries:
        ms, got = cpu_ms(snap.top, q, k, Filters.where(statuses={"active"}))
        cpu.append(ms)
        found.append([mid for mid, _ in got])
    return cpu, found


def recall(found, exact, k: int) -> float:
    return sum(len(set(f[:k]) & set(e[:k])) for f, e in zip(found, exact)) / (k * len(exact))


class Given:
    """An encoder that returns given vectors for the texts of an ``apply`` (no model)."""

    def __init__(self, by_text: dict[str, np.ndarray]):
        self.by_text = by_text

    def batches(self, texts, progress=None):
        yield np.stack([self.by_text[t] for t in texts])


def row(memory_id: str, text: str, subject: str) -> IndexDoc:
    """A memory whose embedded text is ``text``."""
    return IndexDoc(id=memory_id, path=f"memories/L1/{memory_id}.md", layer="L1", kind="event", subject=subject,
                    fact=None, status="active", summary="", body=text, tags=(), created=None, updated=None)


def write(dir: Path, vecs: np.ndarray, ann_above: int) -> VectorStore:
    store = VectorStore(dir, ann_above=ann_above)
    store._write_snapshot([(f"m{i:07d}", Stored(f"{i:024x}", Facets(f"s{i % 50}", "active", "L1", "event")), vecs[i])
                           for i in range(len(vecs))], None, [])
    return store


def line(label: str, cpu: list[float]) -> str:
    return f"{label}: CPU p50 {statistics.median(cpu):.2f} ms, p95 {pct(cpu, 0.95):.2f} ms"


def run(label: str, vecs: np.ndarray, queries: np.ndarray, tmp: Path, args) -> None:
    n = len(vecs)
    store = write(tmp / f"vectors-{label}", vecs, ann_above=n)
    snap = store.load()
    snap.ann_above = n + 1  # exact
    cpu, exact = timed(snap, queries, 30)
    print(f"{label}, n={n}: " + line("exact top-30 (numpy, all rows, one BLAS thread)", cpu))
    ids = snap.ids
    build, index = cpu_ms(VectorStore._index, vecs, ids, None)
    print(f"  IVF build ({len(index.centroids)} lists, k-means on {min(n, ivf.ANN_SAMPLE * len(index.centroids))} "
          f"rows, {ivf.ANN_ITERS} iterations, then every row assigned): CPU {build / 1000:.2f} s")
    sizes = np.diff(index.offsets)
    print(f"  list sizes: min {sizes.min()}, median {int(np.median(sizes))}, max {sizes.max()}")
    snap.ann_above = n
    setting = (ivf.ANN_PROBE, ivf.ANN_PROBE_MIN)
    for probe, least in [(p, 1) for p in args.probes] + [setting]:
        ivf.ANN_PROBE, ivf.ANN_PROBE_MIN = probe, least
        cpu, found = timed(snap, queries, 30)
        lists = max(least, int(np.ceil(probe * len(index.centroids))))
        what = "the product's setting, " if (probe, least) == setting else ""
        print(f"  IVF probe {what}{probe:.0%} of the lists{f', at least {least}' if least > 1 else ''} ({lists} lists): "
              + line("top-30", cpu) + f", recall@10 {recall(found, exact, 10):.3f}, recall@30 {recall(found, exact, 30):.3f}")
    ivf.ANN_PROBE, ivf.ANN_PROBE_MIN = setting
    if args.usearch:
        hnsw(vecs, queries, [set(int(m[1:]) for m in e[:10]) for e in exact])
    # a compaction: COMPACT_AT + 1 changed memories appended, then one more apply that compacts
    rng = np.random.default_rng(12)
    for with_index in (True, False):
        store = VectorStore(store.dir, ann_above=n if with_index else 10 * n)
        vectors._LOADED.clear()
        s = store.load()
        if not with_index:
            assert s.ivf is not None  # the snapshot still has it: only the new one is written without
        rows = rng.choice(n, size=vectors.COMPACT_AT + 1, replace=False)
        by_text = {f"changed {label} {with_index} {i}": (vecs[i] + rng.normal(0, 0.01, embed.DIM)).astype(np.float32)
                   for i in rows}
        docs = [row(f"m{i:07d}", t, f"s{i % 50}") for i, t in zip(rows, by_text)]
        store.apply(docs[:-1], [], Given(by_text), commit="c2")
        ms, _ = cpu_ms(store.apply, docs[-1:], [], Given(by_text), commit="c3")
        after = store.load()
        assert (after.ivf is not None) == with_index and not after.delta
        part = ""
        if with_index:
            reuse, _ = cpu_ms(VectorStore._index, vecs, after.ids, s)  # same ids; the changed rows' old vectors
            part = f" (the index's part: keep {n - len(rows)} rows' lists, assign {len(rows)}: {reuse:.0f} ms)"
        print(f"  an add that compacts {vectors.COMPACT_AT + 1} delta lines into a new snapshot of {n} rows, "
              f"{'with' if with_index else 'without'} the index: CPU {ms:.0f} ms{part}")
    load = ("import time; from pathlib import Path; from memrepo.retrieval.vectors import VectorStore; "
            f"c=time.process_time(); VectorStore(Path({str(store.dir)!r}), ann_above={n}).load(); "
            "print(1000 * (time.process_time() - c))")
    load_plain = [float(subprocess.run([sys.executable, "-c", load], capture_output=True, text=True,
                                       check=True).stdout) for _ in range(3)]  # format 1, no index
    store = write(store.dir, vecs, ann_above=n)  # the compaction above left a snapshot without the index
    load_ivf = [float(subprocess.run([sys.executable, "-c", load], capture_output=True, text=True,
                                     check=True).stdout) for _ in range(3)]
    print(f"  a fresh process loads the vectors: CPU {statistics.median(load_plain):.0f} ms without the index, "
          f"{statistics.median(load_ivf):.0f} ms with it (median of 3)")
    code = ("import sys,numpy as np; from pathlib import Path; from memrepo.retrieval.vectors import VectorStore; "
            "from memrepo.retrieval.filters import Filters; "
            f"s=VectorStore(Path({str(store.dir)!r}), ann_above={n}).load(); q=np.load({str(tmp / 'q.npy')!r}); "
            "[s.top(v, 30, Filters.where(statuses={'active'})) for v in q]; "
            "print(peak())")
    np.save(tmp / "q.npy", queries)
    base = "import numpy; from memrepo.retrieval.vectors import VectorStore; print(peak())"
    rss = int(subprocess.run([sys.executable, "-c", PEAK + code], capture_output=True, text=True, check=True).stdout)
    rss0 = int(subprocess.run([sys.executable, "-c", PEAK + base], capture_output=True, text=True, check=True).stdout)
    size = sum(p.stat().st_size for p in store.dir.iterdir())
    index_size = (store.dir / f"{store.meta()['snapshot']}.ivf.npy").stat().st_size
    print(f"  vectors on disk {size / 1e6:.0f} MB (index {index_size / 1e6:.1f} MB); "
          f"a process that loads them and answers {len(queries)} queries through the index: "
          f"peak RSS {rss / 1024:.0f} MB ({(rss - rss0) / 1024:.0f} MB over numpy + memrepo imported)")
    for size in args.sizes:
        if size < n:
            small = write(tmp / f"vectors-{label}-{size}", vecs[:size], ann_above=size + 1).load()
            cpu, _ = timed(small, queries, 30)
            print(f"  n={size}: " + line("exact top-30", cpu))
            shutil.rmtree(tmp / f"vectors-{label}-{size}")
    shutil.rmtree(store.dir)


def hnsw(vecs: np.ndarray, queries: np.ndarray, exact: list[set[int]]) -> None:
    from usearch.index import Index
    n = len(vecs)
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


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--noise", type=float, default=0.03, help="per-dimension noise (0.03: cosine ≈ 0.8 to the origin)")
    ap.add_argument("--probes", type=lambda v: [float(x) for x in v.split(",")], default=[0.02, 0.03, 0.05],
                    help="IVF probe shares to measure (besides the product's setting)")
    ap.add_argument("--sizes", type=lambda v: [int(x) for x in v.split(",")], default=[10_000, 20_000, 50_000],
                    help="smaller snapshots whose exact scan is timed (where ann_above pays)")
    ap.add_argument("--usearch", action="store_true", help="also usearch HNSW (needs usearch installed)")
    ap.add_argument("--random", action=argparse.BooleanOptionalAction, default=True,
                    help="also uniformly random vectors")
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
        run("clustered", vecs, queries, tmp, args)
        if args.random:
            del vecs
            rnd = rng.standard_normal((args.n, embed.DIM)).astype(np.float32)
            rnd /= np.linalg.norm(rnd, axis=1, keepdims=True)
            run("uniform random", rnd, queries, tmp, args)
    print(f"this process: peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
