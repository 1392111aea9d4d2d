"""Search speed at scale: synthetic vault, full rebuild, one-doc update, query latency.

    .venv/bin/python bench/search_perf.py [--n 100000] [--nq 500] [--bench ../shared/bench]

Generates memories and queries with the kit's ``synth.py`` into a temp folder, rebuilds the
index (timed), updates one memory (timed, several times), runs the queries in-process
(p50/p95, and the share whose expected memory is in the top 10), reports the index size,
and runs the same queries through stdlib SQLite FTS5 (trigram-free unicode61 tokenizer,
OR of the analysed terms) as the physical reference column.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from memrepo import text
from memrepo.index import MemoryIndex, SearchQuery

sys.path.insert(0, str(Path(__file__).resolve().parent))
from retrieval import DEFAULT_BENCH, read_jsonl, to_doc  # noqa: E402


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, round(p / 100 * len(s)) - 1))]


def dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def synth(bench: Path, n: int, nq: int, out: Path) -> tuple[Path, Path]:
    mem, qry = out / "synth.memories.jsonl", out / "synth.queries.jsonl"
    subprocess.run([sys.executable, str(bench / "synth.py"), "--n", str(n), "--out", str(mem),
                    "--queries", str(qry), "--nq", str(nq)], check=True, capture_output=True)
    return mem, qry


def query_text(q: dict) -> str:
    return q.get("query") or q.get("question") or q.get("text")


def expected(q: dict) -> set[str]:
    ev = q.get("evidence") or q.get("expected") or q.get("ids") or []
    return set([ev] if isinstance(ev, str) else ev)


def run_memrepo(work: Path, docs, queries: list[dict]) -> dict:
    ix = MemoryIndex(work / "index")
    t = time.perf_counter()
    ix.rebuild(docs, commit="c0")
    rebuild = time.perf_counter() - t
    upd = []
    for i in range(5):
        d = dataclasses.replace(docs[i * 997], body=docs[i * 997].body + f" edited {i}")
        t = time.perf_counter()
        ix.update(upserts=[d], deletes=[], commit=f"c{i + 1}")
        upd.append(time.perf_counter() - t)
    lat, found = [], 0
    with ix._searcher():  # warm the OS cache
        pass
    for q in queries:
        t = time.perf_counter()
        res = ix.search(SearchQuery(query_text(q), limit=10))
        lat.append(time.perf_counter() - t)
        found += bool(expected(q) & {h.id for h in res.hits})
    batch_t = time.perf_counter()
    ix.search_many([SearchQuery(query_text(q), limit=10) for q in queries])
    batch = (time.perf_counter() - batch_t) / len(queries)
    return dict(rebuild_s=rebuild, update_ms=[round(x * 1000, 1) for x in upd],
                p50_ms=1000 * statistics.median(lat), p95_ms=1000 * pct(lat, 95),
                batch_ms=1000 * batch, hit10=found / len(queries),
                size_mb=dir_size(work / "index") / 1e6)


def run_fts5(work: Path, docs, queries: list[dict]) -> dict:
    db = sqlite3.connect(work / "fts.sqlite")
    db.execute("CREATE VIRTUAL TABLE m USING fts5(id UNINDEXED, summary, body)")
    t = time.perf_counter()
    db.executemany("INSERT INTO m VALUES (?, ?, ?)",
                   ((d.id, " ".join(text.terms(d.summary, unigrams=True)),
                     " ".join(text.terms(d.body, unigrams=True))) for d in docs))
    db.commit()
    build = time.perf_counter() - t
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
    return dict(build_s=build, p50_ms=1000 * statistics.median(lat),
                p95_ms=1000 * pct(lat, 95), hit10=found / len(queries),
                size_mb=(work / "fts.sqlite").stat().st_size / 1e6)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--nq", type=int, default=500)
    ap.add_argument("--no-fts", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memrepo-perf-") as tmp:
        work = Path(tmp)
        mem, qry = synth(args.bench, args.n, args.nq, work)
        docs = [to_doc(m) for m in read_jsonl(mem)]
        queries = read_jsonl(qry)
        out = {"n": len(docs), "queries": len(queries),
               "memrepo": run_memrepo(work, docs, queries)}
        if not args.no_fts:
            out["fts5"] = run_fts5(work, docs, queries)
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
