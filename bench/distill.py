#!/usr/bin/env python3
"""Distill quality on the LoCoMo dev conversations: recurring facts found, small talk left out.

  .venv/bin/python bench/distill.py [--strict] [--convs conv-26,conv-30] [-v] [--dump FILE]

Runs the shared scorer (``../shared/bench/distill/distill_eval.py``, read at run time, never
copied) through the product: the shared converter turns ``../shared/bench/data/locomo-dev.json``
into import JSONL in a temporary directory, and the scorer builds one fresh vault per
conversation with this checkout's ``memrepo`` (``.venv/bin/memrepo``), imports the turns and
runs ``memrepo distill --dry-run --json``. It prints the scorer's table and its last line
``precision=.. recall=.. candidates=N topics=M phatic=K``; ``--strict`` (the figure reported)
refuses a hit to a candidate made mostly of small-talk turns. Override the shared folder with
``--shared`` or ``MEMREPO_SHARED_BENCH``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", default=os.environ.get("MEMREPO_SHARED_BENCH") or str(ROOT.parent / "shared" / "bench"))
    ap.add_argument("--strict", action="store_true")
    ap.add_argument("--convs")
    ap.add_argument("--dump")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    shared = Path(a.shared)
    scorer, gold = shared / "distill" / "distill_eval.py", shared / "distill" / "locomo-distill-gold-dev.json"
    if not scorer.exists():
        sys.exit(f"{scorer} not found: point --shared (or MEMREPO_SHARED_BENCH) at the shared bench folder")
    exe = ROOT / ".venv" / "bin" / "memrepo"
    if not exe.exists():
        sys.exit(f"{exe} not found: run 'make install' first")
    with tempfile.TemporaryDirectory(prefix="memrepo-distill-bench-") as tmp:
        jsonl = Path(tmp) / "locomo-dev.jsonl"
        subprocess.run([sys.executable, str(shared / "to_jsonl.py"), "locomo", str(shared / "data" / "locomo-dev.json"),
                        "--out", str(jsonl), "--queries", str(Path(tmp) / "q.jsonl")],
                       check=True, stderr=subprocess.DEVNULL)
        cmd = [sys.executable, str(scorer), str(gold), str(jsonl), "--memrepo", str(exe)]
        cmd += ["--strict"] * a.strict + ["-v"] * a.verbose
        cmd += ["--convs", a.convs] if a.convs else []
        cmd += ["--dump", a.dump] if a.dump else []
        env = {**os.environ, "PATH": f"{exe.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        started = time.perf_counter()
        code = subprocess.run(cmd, env=env).returncode
    print(f"wall {time.perf_counter() - started:.1f}s on {os.cpu_count()} cores")
    return code


if __name__ == "__main__":
    sys.exit(main())
