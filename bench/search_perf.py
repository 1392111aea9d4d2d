"""Search speed at scale: synthetic vault, full rebuild, one-memory update, query latency.

    .venv/bin/python bench/search_perf.py [--n 100000] [--nq 500] [--cli-queries 60]
        [--bench ../shared/bench] [--no-fts] [--no-cli] [--json-out FILE]

Generates memories and queries with the kit's ``synth.py`` into a temp folder (read at run
time, never copied here), then measures, reporting wall and CPU time side by side (the
machine is shared; CPU time is what the code costs, wall time is what a user waits):

* **library** (``MemoryIndex`` directly): full rebuild (CPU includes the forked build
  processes), one-memory updates (``--updates`` runs: p50/p95/max; the tiered merge policy
  makes a few of them merge segments), in-process query latency with the process's cached
  searcher (p50/p95, and the share of queries whose memory is in the top 10), a cold first
  query in a fresh process, and the index size;
* **product** (``memrepo`` CLI in a real vault): ``memrepo init`` + ``memrepo import`` of the
  synthetic JSONL, ``memrepo reindex --wait``, then ``memrepo search --json QUERY`` as an agent
  calls it, one process per query, start-up and the git sync included (p50/p95 over
  ``--cli-queries`` queries; run from compiled bytecode as an installed package is), and
  ``memrepo search --queries FILE --json`` for all queries in one process;
* **SQLite FTS5** (stdlib) on the same analysed terms and queries: the physical reference.

The data is the benchmark kit's: the dev halves of the public LoCoMo and MADial-Bench
benchmarks (and its synthetic generator ``synth.py``), read at run time from ``../shared/bench``
beside the project and never copied in (their licences keep them out of this repository).
When the kit is absent the bench says where it looked and stops: pass ``--bench DIR``.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memrepo import text
from memrepo.retrieval.index import MemoryIndex, SearchQuery

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval import DEFAULT_BENCH, kit_file, read_jsonl, to_doc  # noqa: E402

MEMREPO = str(Path(sys.executable).with_name("memrepo"))


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, round(p / 100 * len(s)) - 1))]


def ms(xs: list[float]) -> dict:
    return {"p50_ms": round(1000 * statistics.median(xs), 1), "p95_ms": round(1000 * pct(xs, 95), 1),
            "max_ms": round(1000 * max(xs), 1), "n": len(xs)}


def cpu() -> float:
    """CPU seconds of this process and of its waited-for children."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class Timer:
    def __enter__(self):
        self.w, self.c = time.perf_counter(), cpu()
        return self

    def __exit__(self, *exc):
        self.wall, self.cpu = time.perf_counter() - self.w, cpu() - self.c


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def synth(bench: Path, n: int, nq: int, out: Path) -> tuple[Path, Path]:
    mem, qry = out / "synth.memories.jsonl", out / "synth.queries.jsonl"
    subprocess.run([sys.executable, str(kit_file(bench, "synth.py")), "--n", str(n), "--out", str(mem),
                    "--queries", str(qry), "--nq", str(nq)], check=True, capture_output=True)
    return mem, qry


def query_text(q: dict) -> str:
    return q.get("query") or q.get("question") or q.get("text")


def expected(q: dict) -> set[str]:
    ev = q.get("evidence") or q.get("expected") or q.get("ids") or []
    return set([ev] if isinstance(ev, str) else ev)


COLD = """
import sys, time
t = time.perf_counter()
from pathlib import Path
from memrepo.retrieval.index import MemoryIndex, SearchQuery
ix = MemoryIndex(Path(sys.argv[1]))
ix.search(SearchQuery(sys.argv[2], limit=10))
print(time.perf_counter() - t)
"""


def run_library(work: Path, docs, queries: list[dict], updates: int) -> dict:
    ix = MemoryIndex(work / "index")
    with Timer() as build:
        ix.rebuild(docs, commit="c0")
    size = dir_size(work / "index")
    upd, upd_cpu = [], []
    step = max(1, len(docs) // max(updates, 1))
    for i in range(updates):
        d = docs[(i * step) % len(docs)]
        d = dataclasses.replace(d, body=d.body + f" edited {i}")
        with Timer() as t:
            ix.update(upserts=[d], deletes=[], commit=f"c{i + 1}")
        upd.append(t.wall)
        upd_cpu.append(t.cpu)
    ix.search(SearchQuery("warm up", limit=10))  # opens and caches the searcher
    lat, lat_cpu, found = [], [], 0
    for q in queries:
        t0, c0 = time.perf_counter(), time.process_time()
        res = ix.search(SearchQuery(query_text(q), limit=10))
        lat.append(time.perf_counter() - t0)
        lat_cpu.append(time.process_time() - c0)
        found += bool(expected(q) & {h.id for h in res.hits})
    with Timer() as batch:
        ix.search_many([SearchQuery(query_text(q), limit=10) for q in queries])
    cold = []
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")  # as installed: from bytecode
    for q in queries[:6]:
        out = subprocess.run([sys.executable, "-c", COLD, str(work / "index"), query_text(q)],
                             check=True, capture_output=True, text=True, env=env)
        cold.append(float(out.stdout))
    cold = cold[1:]  # the first run compiled the bytecode
    return {
        "rebuild": {"wall_s": round(build.wall, 1), "cpu_s": round(build.cpu, 1)},
        "update_one": {**ms(upd), "cpu_p50_ms": round(1000 * statistics.median(upd_cpu), 1)},
        "query": {**ms(lat), "cpu_p50_ms": round(1000 * statistics.median(lat_cpu), 1),
                  "cpu_p95_ms": round(1000 * pct(lat_cpu, 95), 1)},
        "batch_per_query_ms": round(1000 * batch.wall / len(queries), 1),
        "cold_first_query_ms": round(1000 * statistics.median(cold), 1),
        "hit10": round(found / len(queries), 3),
        "size_mb": round(size / 1e6, 1),
    }


CLI_ENV: dict[str, str] = {**os.environ, "MEMREPO_DAEMON": "0"}  # a new process per call, as this bench measures


def memrepo(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([MEMREPO, *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env=CLI_ENV)


def run_cli(work: Path, mem: Path, queries: list[dict], n_cli: int) -> dict:
    # An installed package runs from compiled bytecode; a checkout with
    # PYTHONDONTWRITEBYTECODE=1 would recompile every memrepo module on every call (~40 ms).
    # Bytecode goes to a cache in the temp folder, never into the source tree.
    CLI_ENV.pop("PYTHONDONTWRITEBYTECODE", None)
    CLI_ENV["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    vault = work / "vault"
    with Timer() as init:
        memrepo("init", str(vault), cwd=work)
    with Timer() as imp:
        memrepo("import", str(mem), "--no-index", cwd=vault)   # the commit; reindex builds below
    with Timer() as reindex:
        memrepo("reindex", "--wait", cwd=vault)
    for _ in range(3):
        memrepo("search", "--json", "warm up", cwd=vault)  # bytecode cache, OS file cache
    sample = queries[:: max(1, len(queries) // n_cli)][:n_cli]
    lat, lat_cpu, found = [], [], 0
    for q in sample:
        with Timer() as t:
            out = memrepo("search", "--json", "--limit", "10", query_text(q), cwd=vault)
        lat.append(t.wall)
        lat_cpu.append(t.cpu)
        found += bool(expected(q) & {h["id"] for h in json.loads(out.stdout)["hits"]})
    qfile = work / "batch.jsonl"
    qfile.write_text("".join(json.dumps({"qid": q["qid"], "query": query_text(q), "limit": 10},
                                        ensure_ascii=False) + "\n" for q in queries), encoding="utf-8")
    with Timer() as batch:
        memrepo("search", "--queries", str(qfile), "--json", cwd=vault)
    return {
        "init_s": round(init.wall, 2), "import": {"wall_s": round(imp.wall, 1), "cpu_s": round(imp.cpu, 1)},
        "reindex": {"wall_s": round(reindex.wall, 1), "cpu_s": round(reindex.cpu, 1)},
        "search": {**ms(lat), "cpu_p50_ms": round(1000 * statistics.median(lat_cpu), 1)},
        "hit10": round(found / len(sample), 3),
        "batch": {"wall_s": round(batch.wall, 2), "cpu_s": round(batch.cpu, 2),
                  "per_query_ms": round(1000 * batch.wall / len(queries), 1)},
    }


def run_fts5(work: Path, docs, queries: list[dict]) -> dict:
    db = sqlite3.connect(work / "fts.sqlite")
    db.execute("CREATE VIRTUAL TABLE m USING fts5(id UNINDEXED, summary, body)")
    with Timer() as build:
        db.executemany("INSERT INTO m VALUES (?, ?, ?)",
                       ((d.id, " ".join(text.terms(d.summary, unigrams=True)),
                         " ".join(text.terms(d.body, unigrams=True))) for d in docs))
        db.commit()
    lat, found = [], 0
    for q in queries:
        terms = sorted(set(text.terms(query_text(q))))
        expr = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms) or '""'
        t = time.perf_counter()
        rows = db.execute("SELECT id FROM m WHERE m MATCH ? ORDER BY bm25(m, 2.0, 1.0) LIMIT 10",
                          (expr,)).fetchall()
        lat.append(time.perf_counter() - t)
        found += bool(expected(q) & {r[0] for r in rows})
    db.close()
    return {"build": {"wall_s": round(build.wall, 1), "cpu_s": round(build.cpu, 1)},
            "query": ms(lat), "hit10": round(found / len(queries), 3),
            "size_mb": round((work / "fts.sqlite").stat().st_size / 1e6, 1)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--nq", type=int, default=500)
    ap.add_argument("--updates", type=int, default=30)
    ap.add_argument("--cli-queries", type=int, default=60)
    ap.add_argument("--no-fts", action="store_true")
    ap.add_argument("--no-cli", action="store_true")
    ap.add_argument("--json-out", type=Path)
    args = ap.parse_args(argv)
    out: dict = {"load_before": [round(x, 2) for x in os.getloadavg()], "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="memrepo-perf-") as tmp:
        work = Path(tmp)
        mem, qry = synth(args.bench, args.n, args.nq, work)
        docs = [to_doc(m) for m in read_jsonl(mem)]
        queries = read_jsonl(qry)
        out.update({"n": len(docs), "queries": len(queries)})

        def save(key, value):
            out[key] = value
            print(f"{key}: {json.dumps(value)}", file=sys.stderr, flush=True)
            if args.json_out:
                args.json_out.write_text(json.dumps(out, indent=2) + "\n")

        save("library", run_library(work, docs, queries, args.updates))
        if not args.no_fts:
            save("fts5", run_fts5(work, docs, queries))
        if not args.no_cli:
            save("cli", run_cli(work, mem, queries, args.cli_queries))
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    if args.json_out:
        args.json_out.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
