"""Candidate collection at scale: ``collect.top_docs`` with its bounds and with every posting scored.

    .venv/bin/python bench/collect_speed.py --vault PATH [--rounds 5] [--agents 40] [--json-out FILE]
    .venv/bin/python bench/collect_speed.py --n 100000 [--synth ../shared/bench/synth.py] [--workdir DIR]

Keywords only (``MEMREPO_SEMANTIC=0``), in this process, CPU time (``time.process_time``: the
machine may be shared). Two kinds of query, as text:

* **common words**: every analysed term in at least 10 % of the memories (English and Chinese
  words frequent in the synthetic corpus; a query whose terms are rarer in the given vault is
  left out and named). No term fits the postings budget, so the two rarest are searched;
* **agents**: what ``bench/agents.py`` asks, the first three words (longer than two letters) of
  a random memory's summary: an entity plus two words;
* **rare plus common** (``top_docs`` alone): an agent query's searched terms joined with a common
  one's, as when feedback terms or exact keys join common words; and **one rare, one common**:
  the rarest of the former with the first of the latter.

Each query is run once through ``api.search`` to record the ``top_docs`` calls the ranking makes
(terms, pool size, filter, mask). Then, alternating per call, four ways of scoring,
``--rounds`` times: *default* (what ``top_docs`` chooses: a few postings one by one, MaxScore
bounds when one term is common and the others rare, otherwise all in bulk with numpy), *bounded* and
*arrays* (those two wherever there are more postings than a few) and *all_postings* (every
posting decoded and scored one by one in Python: the algorithm before, same code). Reported: the CPU of ``top_docs``
alone and of the whole ``api.search``, p50/p95 per way; the blocks read and skipped; which way
the default chose; and a check that all ways return the same documents with the same scores
(the run fails otherwise).

The synthetic memories come from the benchmark kit's generator (``synth.py``, deterministic,
~30 % Chinese; read at run time from ``../shared/bench`` beside the project, never copied, not
part of this repository). When it is absent the bench says where it looked and stops: pass
``--synth PATH`` or set ``MEMREPO_SYNTH``.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
from write_path import DEFAULT_SYNTH, bench_env, build_vault, machine, memrepo_cmd, run  # noqa: E402

COMMON = ["deploy rollback", "release pipeline", "database migration", "cache latency", "payment refund",
          "budget report", "kubernetes cluster", "部署 回滚", "数据库 迁移", "缓存 延迟", "灰度 发布"]
COMMON_SHARE = 0.10


def pct(xs: list[float], p: float) -> float:
    s = sorted(xs)
    return s[max(0, min(len(s) - 1, round(p / 100 * len(s)) - 1))]


def summary(xs: list[float]) -> dict:
    return {"cpu_p50_ms": round(1000 * statistics.median(xs), 2), "cpu_p95_ms": round(1000 * pct(xs, 95), 2),
            "n": len(xs)}


def common_queries(searcher, n: int) -> tuple[list[str], dict]:
    from memrepo import text
    kept, dfs = [], {}
    for q in COMMON:
        df = {t: searcher.doc_frequency("text", t) for t in text.terms(q)}
        dfs[q] = df
        if df and min(df.values()) >= COMMON_SHARE * n:
            kept.append(q)
    return kept, dfs


def agent_queries(searcher, count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    live = [d for d in range(searcher.doc_count_all()) if not searcher.reader().is_deleted(d)]
    out = []
    for d in rng.sample(live, min(count, len(live))):
        words = [w for w in (searcher.stored_fields(d).get("summary") or "").split() if len(w) > 2]
        if words:
            out.append(" ".join(words[:3]))
    return out


def _modes() -> dict[str, tuple[int, int]]:
    """Each way of scoring: (postings in all up to which they are scored one by one, how many
    times the other terms' postings the commonest needs for bounds, else numpy)."""
    from memrepo.retrieval import collect
    return {"default": (collect._SMALL, collect._SKEW), "bounded": (0, 0), "arrays": (0, sys.maxsize),
            "all_postings": (sys.maxsize, 0)}


def mixed_calls(vault, rare_queries: list[str], common_queries: list[str]) -> tuple[list[tuple], list[tuple]]:
    """``top_docs`` calls of a rare query's terms plus a common query's (what the ranking asks
    when feedback or exact keys join common words): the case the bounds are for."""
    from memrepo import api
    from memrepo.retrieval import collect
    top_docs, calls = collect.top_docs, []

    def record(*args, **kwargs):
        calls.append((args, kwargs))
        return top_docs(*args, **kwargs)

    collect.top_docs = record
    try:
        for q in (*rare_queries, *common_queries):
            api.search(vault, q)
    finally:
        collect.top_docs = top_docs
    rare, common = calls[:len(rare_queries)], calls[len(rare_queries):]
    joined = [((r[0][0], list(r[0][1]) + list(c[0][1]), *r[0][2:]), r[1]) for r, c in zip(rare, common)]
    # the rarest term of the one, the first of the other
    pairs = [((r[0][0], [min(r[0][1], key=lambda t: r[0][0].doc_frequency(t[0], t[1])), c[0][1][0]], *r[0][2:]), r[1])
             for r, c in zip(rare, common)]
    return joined, pairs


def time_calls(calls: list[tuple], rounds: int) -> dict:
    """CPU of the given ``top_docs`` calls, each way (the results must agree)."""
    from memrepo.retrieval import collect
    small, skew = collect._SMALL, collect._SKEW
    modes = _modes()
    cpu: dict[str, list[float]] = {m: [] for m in modes}
    skipped = read = 0
    for r in range(rounds):
        for args, kwargs in calls:
            got = {}
            for mode in (modes if r % 2 == 0 else reversed(list(modes))):
                collect._SMALL, collect._SKEW = modes[mode]
                w = collect.Work()
                t = time.process_time()
                got[mode] = collect.top_docs(*args, **kwargs, work=w)
                cpu[mode].append(time.process_time() - t)
                if r == 0 and mode == "default":
                    skipped, read = skipped + w.postings_skipped, read + w.postings_read
            if any(g != got["all_postings"] for g in got.values()):
                raise SystemExit(f"bench: top_docs differs between modes for terms {args[1]}")
    collect._SMALL, collect._SKEW = small, skew
    return {"calls": len(calls), "rounds": rounds, "default_postings_read": read, "default_postings_skipped": skipped,
            **{f"{mode}_top_docs": summary(xs) for mode, xs in cpu.items()}}


def measure(vault, queries: list[str], rounds: int) -> dict:
    from memrepo import api
    from memrepo.retrieval import collect
    top_docs, small, skew = collect.top_docs, collect._SMALL, collect._SKEW
    calls = []

    def record(*args, **kwargs):
        calls.append((args, kwargs))
        return top_docs(*args, **kwargs)

    collect.top_docs = record
    try:
        for q in queries:
            api.search(vault, q)
    finally:
        collect.top_docs = top_docs
    # (postings up to which all are scored in Python, postings of every term above which all
    # are scored with numpy)
    modes = _modes()
    cpu: dict[str, dict[str, list[float]]] = {m: {"top_docs": [], "search": []} for m in modes}
    ways: dict[str, int] = {}
    work = {m: collect.Work() for m in modes}
    for r in range(rounds):
        order = list(modes) if r % 2 == 0 else list(reversed(modes))
        for args, kwargs in calls:
            got = {}
            for mode in order:
                collect._SMALL, collect._SKEW = modes[mode]
                w = collect.Work()
                t = time.process_time()
                got[mode] = top_docs(*args, **kwargs, work=w)
                cpu[mode]["top_docs"].append(time.process_time() - t)
                if r == 0:
                    for field in ("blocks_read", "blocks_skipped", "postings_read", "postings_skipped"):
                        setattr(work[mode], field, getattr(work[mode], field) + getattr(w, field))
                    if mode == "default":
                        ways[w.way] = ways.get(w.way, 0) + 1
            if any(g != got["all_postings"] for g in got.values()):
                raise SystemExit(f"bench: top_docs differs between modes for terms {args[1]}")
        for q in queries:
            hits = {}
            for mode in order:
                collect._SMALL, collect._SKEW = modes[mode]
                t = time.process_time()
                result, _ = api.search(vault, q)
                cpu[mode]["search"].append(time.process_time() - t)
                hits[mode] = [(h.id, h.score) for h in result.hits]
            if any(h != hits["all_postings"] for h in hits.values()):
                raise SystemExit(f"bench: search results differ between modes for {q!r}")
    collect._SMALL, collect._SKEW = small, skew
    return {"queries": len(queries), "top_docs_calls": len(calls), "rounds": rounds,
            "postings_per_call_p50": statistics.median(
                [sum(args[0].doc_frequency(f, t) for f, t, _ in args[1]) for args, _ in calls]) if calls else 0,
            "default_way": ways,
            **{f"{mode}_work": {k: v for k, v in vars(w).items() if k != "way"} for mode, w in work.items()},
            **{f"{mode}_{part}": summary(xs) for mode, parts in cpu.items() for part, xs in parts.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vault", help="an existing vault (e.g. a copy of a 100k one)")
    ap.add_argument("--n", type=int, help="build a vault of N synthetic memories instead")
    ap.add_argument("--synth", default=os.environ.get("MEMREPO_SYNTH", DEFAULT_SYNTH))
    ap.add_argument("--workdir", help="where --n builds (default: a temporary folder)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--agents", type=int, default=40, help="agent-style queries")
    ap.add_argument("--json-out")
    args = ap.parse_args()
    os.environ["MEMREPO_SEMANTIC"] = "0"
    if bool(args.vault) == bool(args.n):
        ap.error("give --vault PATH or --n N")
    if args.n:
        work = Path(args.workdir or tempfile.mkdtemp(prefix="collect-speed-"))
        work.mkdir(parents=True, exist_ok=True)
        env = bench_env(work)
        env["MEMREPO_SEMANTIC"] = "0"
        path, _ = build_vault(work, args.n, args.synth, env)
        run(memrepo_cmd() + ["--vault", str(path), "reindex", "--wait"], env)
    else:
        path = Path(args.vault)
    from memrepo import api
    from memrepo.retrieval import warm
    vault = api.Vault.find(explicit=path)
    api.search(vault, "warm up")  # opens the index and the searcher once, as the server does
    searcher = warm.index(vault)._cached_searcher()
    n = searcher.doc_count()
    common, dfs = common_queries(searcher, n)
    agents = agent_queries(searcher, args.agents)
    load0 = os.getloadavg()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    out = {"machine": machine(), "vault": str(path), "memories": n,
           "common_words": {"queries": common, "left_out": [q for q in COMMON if q not in common],
                            "document_frequencies": dfs, **measure(vault, common, args.rounds)},
           "agents": {"examples": agents[:5], **measure(vault, agents, args.rounds)},
           **dict(zip(("rare_plus_common", "one_rare_one_common"),
                      (time_calls(calls, args.rounds) for calls in mixed_calls(vault, agents[:len(common)], common))))}
    out["cpu_seconds"] = round(time.process_time() - cpu0, 1)
    out["wall_seconds"] = round(time.perf_counter() - wall0, 1)
    out["loadavg"] = {"start": [round(x, 2) for x in load0], "end": [round(x, 2) for x in os.getloadavg()]}
    text = json.dumps(out, ensure_ascii=False, indent=1)
    if args.json_out:
        Path(args.json_out).write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
