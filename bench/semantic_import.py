"""Import with encoding through the product: ``memrepo import`` (commit, keyword index, vectors).

    .venv/bin/python bench/semantic_import.py [--n 10000] [--bench ../shared/bench] [--workers N]

Generates ``--n`` memories with the kit's ``synth.py`` (read at run time), then times, as a
user runs it: ``memrepo import FILE`` into a vault made by ``memrepo init`` — one commit, then
the keyword index and every vector brought to it before the command returns (the encoding
runs on every core, one process each, or ``--workers``) — and checks that the next search
answers hybrid with nothing left to build. Reports wall and CPU seconds (the children's CPU,
so the encoding workers count); the model's unpacked cache is warmed first.

The data is the benchmark kit's: the dev halves of the public LoCoMo and MADial-Bench
benchmarks (and its synthetic generator ``synth.py``), read at run time from ``../shared/bench``
beside the project and never copied in (their licences keep them out of this repository).
When the kit is absent the bench says where it looked and stops: pass ``--bench DIR``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
MEMREPO = str(Path(sys.executable).with_name("memrepo"))


def user_sys() -> tuple[float, float]:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime, r.ru_stime


def timed(args: list[str], cwd: Path, env: dict) -> tuple[float, tuple[float, float], str]:
    """(wall, (user, system) CPU of the process and its children, stdout)."""
    w, (u, s) = time.perf_counter(), user_sys()
    out = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{' '.join(args[:3])} failed: {out.stderr.strip()}")
    u2, s2 = user_sys()
    return time.perf_counter() - w, (u2 - u, s2 - s), out.stdout


def _synth(bench: Path) -> Path:
    if not (bench / "synth.py").is_file():
        raise SystemExit(f"bench: {bench / 'synth.py'} is absent (the benchmark kit's synthetic generator, not part "
                         "of this repository): pass --bench DIR (the folder holding it)")
    return bench / "synth.py"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--bench", type=Path, default=DEFAULT_BENCH)
    ap.add_argument("--workers", type=int, help="encoding processes (default: every core)")
    args = ap.parse_args(argv)
    env = {**os.environ, "MEMREPO_SEMANTIC": "1"}
    if args.workers:
        env["MEMREPO_ENCODE_WORKERS"] = str(args.workers)
    with tempfile.TemporaryDirectory(prefix="memrepo-semimport-") as tmp:
        tmp = Path(tmp)
        mem = tmp / "synth.jsonl"
        subprocess.run([sys.executable, str(_synth(args.bench)), "--n", str(args.n), "--out", str(mem)],
                       check=True, capture_output=True)
        subprocess.run([sys.executable, "-c", "from memrepo.retrieval import embed; "
                        "embed.shared(embed.user_cache_dir()).query('warm the model cache')"], check=True, env=env)
        timed([MEMREPO, "init", str(tmp / "vault")], tmp, env)
        vault = tmp / "vault"
        rows = {}
        wall, c, out = timed([MEMREPO, "import", str(mem), "--json"], vault, env)
        rows["import (commit + index + vectors)"] = (wall, c)
        print({k: v for k, v in json.loads(out).items() if k != "skipped"})
        check = subprocess.run([MEMREPO, "search", "--json", "deploy"], cwd=vault, env=env, capture_output=True, text=True)
        state = json.loads(check.stdout)["semantic"] if check.returncode == 0 else check.stderr.strip()
        print(f"next search: semantic {state!r}, notice {check.stderr.strip()!r}")
        total_w = sum(w for w, _ in rows.values())
        total_c = sum(sum(c) for _, c in rows.values())
        for label, (w, (u, s)) in rows.items():
            # system time swings with the machine's page cache (1-10 s for the same import): user
            # time is the code's own
            print(f"{label}: wall {w:.1f} s, CPU {u + s:.1f} s (user {u:.1f}, system {s:.1f})")
        print(f"n={args.n}: total wall {total_w:.1f} s, CPU {total_c:.1f} s; per 100k (linear): "
              f"wall {total_w * 100_000 / args.n / 60:.1f} min, CPU {total_c * 100_000 / args.n / 60:.1f} min "
              f"(load average {os.getloadavg()[0]:.1f}, {os.cpu_count()} cores)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
