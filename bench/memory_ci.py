#!/usr/bin/env python3
"""Memory CI speed: ``memrepo check run`` of 200 recall checks on a 10,000-memory vault.

  .venv/bin/python bench/memory_ci.py [--size 10000] [--checks 200] [--runs 5] [--keywords]
      [--workdir DIR [--reuse]] [--out bench/out/memory_ci.json]

Builds a vault as the other benches do (the shared ``../shared/bench/synth.py`` run at bench
time with its queries, ``memrepo init``, ``memrepo import``, which also builds the index and,
unless ``--keywords``, the semantic vectors), writes ``--checks`` recall checks from the synth
queries (each query's memory expected in the top 5) in one commit, and opens a proposal of 20
new memories (``import --propose``). Then, one CLI process per call, after one warm-up:

* ``check run --ref PROPOSAL``: the proposal as it would be after apply against main, the
  delta a review card and ``apply`` need (two versions checked out and searched);
* ``check run --ref HEAD``: one version.

Prints the median and p95 wall and CPU time per command (CPU includes git and every child);
target (issue "memory CI"): 200 checks on a 10k vault in at most 10 s. Without the synth
script (``MEMREPO_SYNTH`` or ``../shared/bench/synth.py``) it says where to put it and stops.

The synthetic memories come from the benchmark kit's generator (``synth.py``, deterministic,
~30 % Chinese; read at run time from ``../shared/bench`` beside the project, never copied, not
part of this repository). When it is absent the bench says where it looked and stops: pass
``--synth PATH`` or set ``MEMREPO_SYNTH``.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from write_path import DEFAULT_SYNTH, SEED, bench_env, children_cpu_ms, machine, memrepo_cmd, run, stats, timed  # noqa: E402

TARGET_S = 10.0


def build(work: Path, size: int, checks: int, env: dict[str, str]) -> tuple[Path, str, dict]:
    """The vault with its checks committed, an open proposal, and the setup's timings."""
    mem, qry = work / "synth.jsonl", work / "queries.jsonl"
    run([sys.executable, DEFAULT_SYNTH, "--n", str(size), "--out", str(mem), "--queries", str(qry),
         "--nq", str(checks), "--seed", str(SEED)], env)
    vault = work / "vault"
    run(memrepo_cmd() + ["init", str(vault)], env)
    (ms, cpu), _ = timed(memrepo_cmd() + ["--vault", str(vault), "import", str(mem), "--json", "--wait"], env)
    setup = {"import_s": round(ms / 1000, 1), "import_cpu_s": round(cpu / 1000, 1)}
    lines = ["checks:"]
    for n, line in enumerate(qry.read_text(encoding="utf-8").splitlines()[:checks]):
        q = json.loads(line)
        lines += [f"  - id: chk_{n:04d}", f"    question: {json.dumps(q['question'], ensure_ascii=False)}",
                  f"    expect: {q['evidence'][0]}"]
    (vault / "checks" / "recall.yaml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    run(["git", "-C", str(vault), "add", "checks/recall.yaml"], env)
    run(["git", "-C", str(vault), "commit", "-q", "-m", "bench: recall checks"], env)
    change = work / "change.jsonl"
    change.write_text("".join(json.dumps({"subject": f"bench-{i}", "summary": f"bench change {i}: deploy pipeline cache",
                                          "body": "A memory a proposal adds."}) + "\n" for i in range(20)), encoding="utf-8")
    proposal = json.loads(run(memrepo_cmd() + ["--vault", str(vault), "import", str(change), "--propose", "--json"], env))["proposal"]
    return vault, proposal, setup


def measure(vault: Path, ref: str, runs: int, env: dict[str, str]) -> tuple[dict, dict]:
    cmd = memrepo_cmd() + ["--vault", str(vault), "check", "run", "--ref", ref, "--json"]
    samples, last = [], {}
    for i in range(runs + 1):
        (wall, cpu), out = _timed_any_exit(cmd, env)
        last = json.loads(out)
        if i:   # the first run warms the page cache and the model cache
            samples.append((wall, cpu))
    return stats(samples), {k: last.get(k) for k in ("summary", "total", "passed", "regressions", "semantic")}


def _timed_any_exit(cmd: list[str], env: dict[str, str]) -> tuple[tuple[float, float], str]:
    """:func:`timed`, but exit 1 (a check failed) is an answer, not a failure."""
    c0, t0 = children_cpu_ms(), time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.decode()}")
    return ((time.perf_counter() - t0) * 1000, children_cpu_ms() - c0), proc.stdout.decode("utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size", type=int, default=10000)
    ap.add_argument("--checks", type=int, default=200)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--keywords", action="store_true", help="keyword ranking only (MEMREPO_SEMANTIC=0)")
    ap.add_argument("--workdir", type=Path, help="keep the vault here (default: a temp folder, removed)")
    ap.add_argument("--reuse", action="store_true", help="measure the vault --workdir already holds again")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if not Path(DEFAULT_SYNTH).is_file():
        raise SystemExit(f"bench: the synthetic-vault generator {DEFAULT_SYNTH} is missing: set MEMREPO_SYNTH to the "
                         "benchmark kit's synth.py")
    work = args.workdir or Path(tempfile.mkdtemp(prefix="memrepo-ci-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    env = bench_env(work)
    env["MEMREPO_SEMANTIC"] = "0" if args.keywords else "1"
    try:
        info = {"machine": machine(), "date": dt.datetime.now(dt.UTC).isoformat(timespec="minutes"),
                "size": args.size, "checks": args.checks, "semantic": not args.keywords}
        if args.reuse and (work / "vault").is_dir():   # a vault an earlier run kept (--workdir): measure again
            vault, info["setup"] = work / "vault", {"reused": True}
            proposal = json.loads(run(memrepo_cmd() + ["--vault", str(vault), "proposals", "--json"], env))[0]["id"]
        else:
            vault, proposal, info["setup"] = build(work, args.size, args.checks, env)
        info["proposal_vs_main"], info["proposal_result"] = measure(vault, proposal, args.runs, env)
        info["head"], info["head_result"] = measure(vault, "HEAD", args.runs, env)
    finally:
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
    for name, result in (("proposal_vs_main", "proposal_result"), ("head", "head_result")):
        s = info[name]
        print(f"check run ({name}): wall p50 {s['p50'] / 1000:.2f} s, p95 {s['p95'] / 1000:.2f} s; "
              f"CPU p50 {s['cpu_p50'] / 1000:.2f} s (n={s['n']}) -> {info[result]}")
    ok = info["proposal_vs_main"]["p50"] / 1000 <= TARGET_S
    print(f"target: {args.checks} checks on {args.size} memories in <= {TARGET_S:.0f} s (two versions): {'met' if ok else 'NOT met'}")
    print(json.dumps(info["machine"]))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(info, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
