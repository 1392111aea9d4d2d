#!/usr/bin/env python3
"""Sync benchmark: 1,000 new memories travelling between two clones through a bare remote.

  .venv/bin/python bench/sync.py [--sizes 10000,100000] [--batch 1000] [--runs 3] [--out bench/out/sync.json]

For each size: a vault of that many synthetic memories (``../shared/bench/synth.py`` run at
bench time, ``memrepo init``, ``memrepo import``, exactly as ``bench/write_path.py``), pushed to
a bare repository with ``memrepo sync``; a second clone made with ``git clone`` +
``memrepo hooks install``. Then ``--runs`` rounds of two scenarios, one CLI process per sync:

* **fast-forward**: clone A imports ``--batch`` new memories (one commit) and syncs (the push);
  clone B syncs (fetch + fast-forward of main and the checkout).
* **diverged**: A and B each import ``--batch`` new memories; A syncs (push), B syncs (fetch,
  merge commit built by memrepo over the 1,000 remote memories, re-check, push), A syncs
  (fast-forward).

After the runs both clones' main must have the same tree and ``memrepo validate`` must pass on
both. Prints median and p95 wall ms per step; writes JSON.

The synthetic memories come from the benchmark kit's generator (``synth.py``, deterministic,
~30 % Chinese; read at run time from ``../shared/bench`` beside the project, never copied, not
part of this repository). When it is absent the bench says where it looked and stops: pass
``--synth PATH`` or set ``MEMREPO_SYNTH``.
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_path import DEFAULT_SYNTH, bench_env, build_vault, machine, memrepo_cmd, run, stats, timed  # noqa: E402


def batch(path: Path, tag: str, n: int) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps({"subject": f"sync-{tag}", "summary": f"sync bench {tag} memory {i} 同步测试",
                                 "body": f"Memory {i} written on clone {tag} for the sync benchmark."}, ensure_ascii=False) + "\n")
    return path


def measure(work: Path, size: int, n: int, runs: int, env: dict[str, str], synth_script: str) -> dict:
    a, _ = build_vault(work, size, synth_script, env)
    server = work / f"server-{size}.git"
    run(["git", "init", "-q", "--bare", "-b", "main", str(server)], env)
    run(["git", "-C", str(a), "remote", "add", "origin", str(server)], env)
    first_push, _ = timed(memrepo_cmd() + ["sync"], env, cwd=a)
    b = work / f"clone-{size}"
    run(["git", "clone", "-q", str(server), str(b)], env)
    run(memrepo_cmd() + ["hooks", "install"], env, cwd=b)
    first_pull, _ = timed(memrepo_cmd() + ["sync"], env, cwd=b)
    steps: dict[str, list[tuple[float, float]]] = {"ff: A sync (push)": [], "ff: B sync (fetch + fast-forward)": [],
                                                   "diverged: A sync (push)": [], "diverged: B sync (merge + push)": [],
                                                   "diverged: A sync (fast-forward)": []}
    for r in range(runs):
        run(memrepo_cmd() + ["import", "--no-index", str(batch(work / "a.jsonl", f"a{r}", n))], env, cwd=a)
        steps["ff: A sync (push)"].append(timed(memrepo_cmd() + ["sync"], env, cwd=a)[0])
        steps["ff: B sync (fetch + fast-forward)"].append(timed(memrepo_cmd() + ["sync"], env, cwd=b)[0])
        run(memrepo_cmd() + ["import", "--no-index", str(batch(work / "a.jsonl", f"da{r}", n))], env, cwd=a)
        run(memrepo_cmd() + ["import", "--no-index", str(batch(work / "b.jsonl", f"db{r}", n))], env, cwd=b)
        steps["diverged: A sync (push)"].append(timed(memrepo_cmd() + ["sync"], env, cwd=a)[0])
        steps["diverged: B sync (merge + push)"].append(timed(memrepo_cmd() + ["sync"], env, cwd=b)[0])
        steps["diverged: A sync (fast-forward)"].append(timed(memrepo_cmd() + ["sync"], env, cwd=a)[0])
    trees = {run(["git", "-C", str(v), "rev-parse", "main^{tree}"], env).strip() for v in (a, b)}
    if len(trees) != 1:
        raise SystemExit(f"bench: clones differ after sync: {trees}")
    for v in (a, b):
        run(memrepo_cmd() + ["validate"], env, cwd=v)
    return {"size": size, "batch": n, "runs": runs, "first push": first_push, "first clone sync": first_pull,
            "steps": {k: stats(v) for k, v in steps.items()}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--synth", default=DEFAULT_SYNTH)
    ap.add_argument("--out", default="bench/out/sync.json")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memrepo-bench-sync-"))
    env = bench_env(work)
    results = []
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            res = measure(work, size, args.batch, args.runs, env, args.synth)
            results.append(res)
            print(f"\n{size:,} memories, {args.batch:,} new per clone, {args.runs} runs (wall ms p50 / p95):")
            print(f"  first push {res['first push'][0]:.0f}, first sync of a fresh clone {res['first clone sync'][0]:.0f}")
            for step, s in res["steps"].items():
                print(f"  {step:<38} {s['p50']:>8.0f} / {s['p95']:.0f}")
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": machine(), "results": results}, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()
