#!/usr/bin/env python3
"""Lifecycle scale benchmark: nightly distill and influence decay at 10k and 100k entries.

  .venv/bin/python bench/lifecycle.py [--sizes 10000 100000] [--repeat 3] [--patterns 0.01]

Noise entries come from the shared synthetic generator (``../shared/bench/synth.py``, run at
bench time, never copied; override with ``--synth`` or ``MEMREPO_SYNTH``); its L1 rows become
:class:`Entry` values spread over one window. Into them the bench plants paraphrase patterns,
English and Chinese, each told 3-4 times on distinct days in different words, so the timing
runs on realistic work and the output also says how many planted patterns came back exactly
and how many candidates were made of noise. Decay runs on a graph of the same entries with
synth's links, extra deterministic links, recall statistics for 10 % and base weights for 1 %.

Times are wall-clock (``time.perf_counter``) and CPU (``time.process_time``); the ratio line
shows CPU-time growth from the smallest to the largest size (10x more entries should cost
about 10x, not 100x).

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
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memrepo.lifecycle.decay import DecayParams, compute_activity, plan_archive  # noqa: E402
from memrepo.lifecycle.distill import Entry, find_patterns  # noqa: E402
from memrepo.lifecycle.graph import Node, build_graph  # noqa: E402

SYNTH = os.environ.get("MEMREPO_SYNTH") or str(Path(__file__).resolve().parents[2] / "shared" / "bench" / "synth.py")
NOW = datetime(2026, 11, 29, 3, 0, tzinfo=UTC)
WINDOW_DAYS = 30

EN_TEMPLATES = [
    "{who} prefers {a} {b} for {ent}",
    "Set {ent} to {a} {b} again, {who} likes it that way",
    "{who} asked for {a} {b} on {ent} once more",
    "Switched {ent} back to {a} {b} at the request of {who}",
]
ZH_TEMPLATES = [
    "{who}偏好{ent}使用{a}{b}",
    "{who}又要求{ent}改成{a}{b}",
    "把{ent}切换为{a}{b}，{who}喜欢这样",
    "{who}再次提到{ent}要用{a}{b}",
]
SYLLABLES = "ka lo mi re su ta vo ne pi du ga ze ro ly fa chi mo wen bar tek".split()
ZH_CHARS = "甲乙丙丁戊己庚辛壬癸金木水火土风雷山泽天地日月星辰江河湖海松竹梅兰菊桃李杏"


def word(rng: random.Random) -> str:
    """A made-up English-looking word (rare by construction)."""
    return "".join(rng.choice(SYLLABLES) for _ in range(3))


def zh_word(rng: random.Random) -> str:
    """A made-up two-character Chinese word."""
    return rng.choice(ZH_CHARS) + rng.choice(ZH_CHARS)


def synth_rows(n: int) -> list[dict]:
    """Synthetic memories from the shared generator (L1 rows only)."""
    if not Path(SYNTH).exists():
        sys.exit(f"synth generator not found at {SYNTH}; pass --synth or set MEMREPO_SYNTH")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "memories.jsonl"
        subprocess.run([sys.executable, SYNTH, "--n", str(n), "--out", str(out)], check=True)
        rows = [json.loads(line) for line in out.open(encoding="utf-8")]
    return [r for r in rows if r.get("layer") == "L1"]


def noise_entries(rows: list[dict], rng: random.Random) -> list[Entry]:
    """Synth rows re-dated into the distill window, with sessions."""
    entries = []
    for row in rows:
        when = NOW - timedelta(seconds=rng.randrange(1, WINDOW_DAYS * 86400 - 1))
        entries.append(Entry(
            id=row["id"], created=when.isoformat(), session=f"s{rng.randrange(len(rows))}",
            subject=row.get("subject", "user"), fact=None, kind=row.get("kind", "event"),
            summary=row.get("summary", ""), body=row.get("body", ""),
            tags=tuple(row.get("tags", ())), links=tuple(row.get("links", ()))))
    return entries


def planted_patterns(count: int, rng: random.Random) -> tuple[list[Entry], list[tuple[str, ...]]]:
    """``count`` patterns, each 3-4 paraphrases on distinct days; returns entries and groups."""
    entries, groups = [], []
    for k in range(count):
        zh = k % 3 == 0
        templates = ZH_TEMPLATES if zh else EN_TEMPLATES
        slots = ({"who": "用户", "ent": zh_word(rng) + "系统", "a": zh_word(rng), "b": zh_word(rng)}
                 if zh else {"who": "the user", "ent": word(rng), "a": word(rng), "b": word(rng)})
        size = rng.choice((3, 4))
        days = rng.sample(range(1, WINDOW_DAYS - 1), size)
        group = []
        for j, (template, day) in enumerate(zip(rng.sample(templates, size), days)):
            text = template.format(**slots)
            eid = f"pat{k:05d}_{j}"
            when = NOW - timedelta(days=day, seconds=rng.randrange(3600))
            entries.append(Entry(eid, when.isoformat(), f"ps{k}_{j}", "user", None, "preference",
                                 text, text, ()))
            group.append(eid)
        groups.append(tuple(sorted(group)))
    return entries, groups


def graph_inputs(entries: list[Entry], rng: random.Random):
    """Graph nodes, co-occurrence pairs, recall stats and base weights for decay."""
    ids = [e.id for e in entries]
    nodes, recall, weights = [], {}, {}
    for e in entries:
        links = e.links + tuple(rng.choice(ids) for _ in range(rng.choice((0, 0, 1, 2))))
        # decay runs on memories past their grace period, or nothing would be archived
        created = (NOW - timedelta(days=rng.randrange(40, 400))).isoformat()
        nodes.append(Node(e.id, links=links, body=e.body, created=created))
        if rng.random() < 0.10:
            last = NOW - timedelta(days=rng.randrange(200))
            recall[e.id] = (rng.randrange(1, 20), last.isoformat())
        if rng.random() < 0.01:
            weights[e.id] = round(rng.random(), 2)
    cooccur = [(rng.choice(ids), rng.choice(ids), rng.randrange(1, 9))
               for _ in range(len(ids) // 20)]
    return nodes, cooccur, recall, weights


def timed(fn, repeat: int) -> tuple[list[tuple[float, float]], object]:
    """(wall, cpu) seconds of ``repeat`` runs and the last result.

    CPU time is printed too: on a shared, loaded machine wall time mostly measures the wait.
    """
    times, result = [], None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        times.append((time.perf_counter() - wall, time.process_time() - cpu))
    return times, result


def describe(times: list[tuple[float, float]]) -> str:
    """Median and worst wall time, median CPU time, in seconds."""
    walls = [w for w, _ in times]
    cpu = statistics.median(c for _, c in times)
    return f"wall median {statistics.median(walls):6.2f}s max {max(walls):6.2f}s, cpu {cpu:6.2f}s"


def bench_size(n: int, repeat: int, pattern_share: float) -> dict:
    """Generate ``n`` L1 entries (planted patterns included) and time both algorithms."""
    rng = random.Random(n)
    planted, groups = planted_patterns(max(1, int(n * pattern_share / 3.5)), rng)
    entries = noise_entries(synth_rows(int((n - len(planted)) / 0.85) + 50), rng)
    entries = entries[: n - len(planted)] + planted
    # no caps: this measures the engine (the nightly run caps what it proposes per subject and run)
    d_times, result = timed(lambda: find_patterns(entries, now=NOW, max_per_subject=len(entries),
                                                  max_per_run=len(entries)), repeat)
    found = {c.members for c in result.candidates}
    planted_ids = {m for g in groups for m in g}
    noise_only = sum(1 for c in result.candidates if not planted_ids & set(c.members))
    nodes, cooccur, recall, weights = graph_inputs(entries, rng)
    graph = build_graph(nodes, cooccur)
    params = DecayParams()

    def decay():
        acts = compute_activity(graph, recall=recall, base_weight=weights, now=NOW,
                                params=params)
        return plan_archive(acts, graph, now=NOW, params=params)

    a_times, plan = timed(decay, repeat)
    return {"n": len(entries), "distill": d_times, "decay": a_times,
            "planted": len(groups), "exact": len(found & set(groups)),
            "candidates": len(result.candidates), "noise_candidates": noise_only,
            "edges": len(graph.edges), "archived": len(plan.archived),
            "delete": len(plan.deletion_candidates)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--patterns", type=float, default=0.01,
                        help="share of entries that belong to planted patterns")
    parser.add_argument("--synth", help="path of the synthetic generator (synth.py)")
    args = parser.parse_args()
    global SYNTH
    SYNTH = args.synth or SYNTH
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"python {sys.version.split()[0]} on {os.uname().machine}, {os.cpu_count()} cpus, "
          f"load {load}; all entries inside one {WINDOW_DAYS}-day window (worst case)")
    rows = []
    for n in args.sizes:
        r = bench_size(n, args.repeat, args.patterns)
        rows.append(r)
        print(f"n={r['n']:>7}  distill {describe(r['distill'])}  "
              f"decay+plan {describe(r['decay'])}")
        print(f"           planted {r['planted']}, recovered exactly {r['exact']}, "
              f"candidates {r['candidates']} (pure noise {r['noise_candidates']}); "
              f"graph edges {r['edges']}, archive {r['archived']}, delete? {r['delete']}")
    if len(rows) > 1:
        lo, hi = rows[0], rows[-1]
        size = hi["n"] / lo["n"]
        def ratio(key: str) -> float:
            cpu = lambda r: statistics.median(c for _, c in r[key])  # noqa: E731
            return cpu(hi) / cpu(lo)
        print(f"growth x{size:.0f} entries (cpu time): distill x{ratio('distill'):.1f}, "
              f"decay+plan x{ratio('decay'):.1f} (linear would be x{size:.0f})")


if __name__ == "__main__":
    main()
