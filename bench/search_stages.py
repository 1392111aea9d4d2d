"""Where an in-process hybrid search's CPU goes, stage by stage (target: p50 <= 20 ms at 100k).

    .venv/bin/python bench/search_stages.py VAULT [--queries FILE.json] [--count 150] [--whoosh]

Runs ``api.search`` over the queries in one process (the first three warm it up) and prints
each stage's main-thread CPU per query and per call (``time.thread_time``: the machine may be
shared), then ``api.search``'s CPU (every thread; a query encoder in a child process is not
counted) and wall p50 / p95 for Latin and Chinese queries, and the p50 / p95 of the re-rank
(``_rerank``) and of its counting of the query's terms in the candidates (``_seen``) by kind. Queries: a JSON list of strings, or (default) the
first three words of the summaries of ``--count`` memories sampled with ``--seed``.

``--whoosh`` reads documents through Whoosh's own ``document_number`` / ``stored_fields``
instead of :mod:`memrepo.retrieval.lookups`: the before/after of the direct reads in one
script (run both, alternating).
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

from memrepo import api, text
from memrepo.retrieval import lookups, ranking

STAGES = ("run_query", "_plan", "_collect", "_add_semantic", "_rerank", "_seen", "_hit")


def sample_queries(vault, count: int, seed: int) -> list[str]:
    rows = api.list_memories(vault)
    out = []
    for row in random.Random(seed).sample(rows, min(count, len(rows))):
        words = [w for w in (row.get("summary") or "").split() if len(w) > 2] or [(row.get("summary") or "")[:6]]
        out.append(" ".join(words[:3]))
    return out


def timed(owner, name: str, label: str, cpu: dict, calls: dict) -> None:
    f = getattr(owner, name)

    def wrapper(*a, **k):
        start = time.thread_time()
        try:
            return f(*a, **k)
        finally:
            cpu[label] = cpu.get(label, 0.0) + time.thread_time() - start
            calls[label] = calls.get(label, 0) + 1
    setattr(owner, name, wrapper)


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * len(xs)))]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("vault", type=Path)
    ap.add_argument("--queries", type=Path, help="a JSON list of query strings")
    ap.add_argument("--count", type=int, default=150)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--whoosh", action="store_true", help="Whoosh's own id and stored-field lookups")
    args = ap.parse_args(argv)
    vault = api.Vault.find(explicit=args.vault)
    qs = (json.loads(args.queries.read_text(encoding="utf-8"))[:args.count] if args.queries
          else sample_queries(vault, args.count, args.seed))
    if args.whoosh:
        lookups.docnum_of = lambda searcher, mid: searcher.document_number(id=mid)
        lookups.stored_fields = lambda searcher, number: searcher.stored_fields(number)
    cpu: dict[str, float] = {}
    calls: dict[str, int] = {}
    for name in STAGES:
        timed(ranking, name, name, cpu, calls)
    timed(lookups, "docnum_of", "id -> document", cpu, calls)
    timed(lookups, "stored_fields", "stored fields", cpu, calls)
    for q in qs[:3]:
        api.search(vault, q)
    cpu.clear()
    calls.clear()
    rows: dict[str, tuple[list[float], list[float]]] = {"latin": ([], []), "chinese": ([], [])}
    per_query: dict[str, dict[str, list[float]]] = {"latin": {}, "chinese": {}}
    for q in qs[3:]:
        before = dict(cpu)
        wall, used = time.perf_counter(), time.process_time()
        api.search(vault, q)
        kind = "chinese" if sum(text.is_cjk(ch) for ch in q) > 5 else "latin"
        rows[kind][0].append(1000 * (time.process_time() - used))
        rows[kind][1].append(1000 * (time.perf_counter() - wall))
        for label in ("_rerank", "_seen"):
            per_query[kind].setdefault(label, []).append(1000 * (cpu.get(label, 0.0) - before.get(label, 0.0)))
    n = max(len(qs) - 3, 1)
    print(f"{args.vault}: {n} queries, {'Whoosh lookups' if args.whoosh else 'direct lookups'}; "
          "main-thread CPU per stage:")
    for label, total in sorted(cpu.items(), key=lambda kv: -kv[1]):
        print(f"  {label:<16} {1000 * total / n:6.2f} ms/query  {calls[label] / n:5.1f} calls  "
              f"{1e6 * total / calls[label]:6.1f} us/call")
    for kind, (used_ms, wall_ms) in rows.items():
        if used_ms:
            print(f"  api.search {kind:<8} n={len(used_ms):3d}  CPU p50 {statistics.median(used_ms):5.1f} "
                  f"p95 {pct(used_ms, .95):5.1f} | wall p50 {statistics.median(wall_ms):5.1f} p95 {pct(wall_ms, .95):5.1f} ms")
            for label, ms in per_query[kind].items():
                print(f"    {label:<8} CPU p50 {statistics.median(ms):5.2f} p95 {pct(ms, .95):5.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
