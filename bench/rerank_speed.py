"""The re-rank of the candidate pool at scale: CPU of in-process ``api.search`` and of its re-rank stage.

    MEMREPO_DAEMON=0 .venv/bin/python bench/rerank_speed.py --vault PATH [--queries FILE.json] [--count 200]
        [--rounds 1] [--json-out FILE]

In this process, CPU time (``time.process_time``: the machine may be shared; a query encoder
running in a child process is not counted), per query kind: *latin* or *cjk* (more
than five CJK characters). The queries are a JSON list of strings (``--queries``), or the
first three words (longer than two characters) of ``--count`` random memories' summaries, as
``bench/agents.py`` asks. Reported per kind: p50/p95 of the whole search, of the re-rank
(``ranking._rerank``: normalised BM25 with the unsearched common terms, neighbours, heat, the
relevance floor) and of the part of it that counts the query's terms in the candidates' text
(``ranking._seen``). The first five queries warm the process up and are not counted.
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import time


def _pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, round(p / 100 * len(s)) - 1))]


def _agent_queries(vault, count: int, seed: int = 7) -> list[str]:
    """What bench/agents.py asks: the first three words of random memories' summaries."""
    from memrepo import api
    rows = api.list_memories(vault)
    out = []
    for row in random.Random(seed).sample(rows, min(count, len(rows))):
        words = [w for w in row["summary"].split() if len(w) > 2] or [row["summary"][:6]]
        out.append(" ".join(words[:3]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vault", required=True)
    ap.add_argument("--queries", help="a JSON list of query strings")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--json-out")
    args = ap.parse_args()

    from memrepo import api, text
    from memrepo.retrieval import ranking
    vault = api.Vault.find(explicit=args.vault)
    qs = json.load(open(args.queries, encoding="utf-8")) if args.queries else _agent_queries(vault, args.count)
    qs = qs[:args.count]

    stage = {"rerank": 0.0, "seen": 0.0}

    def timed(name, f):
        def wrapper(*a, **k):
            c = time.process_time()
            try:
                return f(*a, **k)
            finally:
                stage[name] += time.process_time() - c
        return wrapper

    ranking._rerank = timed("rerank", ranking._rerank)
    ranking._seen = timed("seen", ranking._seen)
    for q in qs[:5]:
        api.search(vault, q)
    rows: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):
        for q in qs[5:]:
            stage.update(rerank=0.0, seen=0.0)
            c = time.process_time()
            api.search(vault, q)
            total = time.process_time() - c
            kind = "cjk" if sum(text.is_cjk(ch) for ch in q) > 5 else "latin"
            row = rows.setdefault(kind, {"search": [], "rerank": [], "seen": []})
            row["search"].append(1000 * total)
            row["rerank"].append(1000 * stage["rerank"])
            row["seen"].append(1000 * stage["seen"])
    report = {kind: {part: {"p50": round(statistics.median(v), 2), "p95": round(_pct(v, 95), 2), "n": len(v)}
                     for part, v in parts.items()} for kind, parts in sorted(rows.items())}
    for kind, parts in report.items():
        print(f"{kind:6s} " + " | ".join(f"{part} CPU p50 {r['p50']:.2f} p95 {r['p95']:.2f} ms"
                                         for part, r in parts.items()) + f" (n={parts['search']['n']})")
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
