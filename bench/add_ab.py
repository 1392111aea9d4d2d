#!/usr/bin/env python3
"""A/B of `memrepo add` through the CLI on one 10k vault: two installs alternate call by call.

  .venv/bin/python bench/add_ab.py BEFORE_MEMREPO AFTER_MEMREPO [--n 10000] [--runs 40]

Each argument is a `memrepo` console script (e.g. the .venv/bin/memrepo of two worktrees). The
calls alternate, so load on a shared machine hits both alike; compare the CPU medians there.
"""
import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_path import DEFAULT_SYNTH, bench_env, run, stats, timed  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="add-ab-"))
    env = bench_env(work)
    gen = work / "mem.jsonl"
    run([sys.executable, DEFAULT_SYNTH, "--n", str(args.n), "--out", str(gen)], env)
    vault = work / "v"
    run([args.after, "init", str(vault)], env)
    run([args.after, "--vault", str(vault), "import", str(gen)], env)
    res: dict[str, list] = {"before": [], "after": []}
    for i in range(args.runs + 3):
        for name, exe in (("before", args.before), ("after", args.after)):
            sample = timed([exe, "--vault", str(vault), "add", "--id", f"mem_ab_{name}_{i}", "--subject",
                            f"ab-{name}-{i}", "--summary", f"benchmark note {i}", "--body", "a short body"], env)[0]
            if i >= 3:
                res[name].append(sample)
    for name, samples in res.items():
        print(name, stats(samples))


if __name__ == "__main__":
    main()
