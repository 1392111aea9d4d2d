#!/usr/bin/env python3
"""What a ``reference-transaction`` hook would cost: CPU time per ref update, with and without it.

  .venv/bin/python bench/reference_transaction.py [--rounds 3] [--n 30]

The hook measured is the cheapest useful one: a ``sh`` shim that returns at once unless ``main``
moves in the ``prepared`` state outside a memrepo transaction, and then only starts Python and
imports the review gate (no check runs). Prints median CPU ms (this process's children: git,
the shim, memrepo) per ``git branch``, per ``git commit`` on main and per ``memrepo add``.
"""
from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

PYTHON = sys.executable
MEMREPO = [str(Path(PYTHON).parent / "memrepo")] if (Path(PYTHON).parent / "memrepo").exists() else [PYTHON, "-m", "memrepo"]
SHIM = f"""#!/bin/sh
# reference-transaction: only main moving outside memrepo is checked
[ "$1" = prepared ] || exit 0
[ -n "$MEMREPO_TRANSACTION" ] && exit 0
while read -r old new ref; do
  [ "$ref" = refs/heads/main ] && exec {PYTHON} -c 'import memrepo.review.gate'
done
exit 0
"""


def cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(*args: str, env: dict | None = None) -> None:
    subprocess.run(args, check=True, capture_output=True, env=env)


def trial(hook: bool, n: int) -> dict[str, float]:
    work = Path(tempfile.mkdtemp())
    try:
        vault = work / "v"
        run(*MEMREPO, "init", str(vault))
        if hook:
            path = vault / ".git/hooks/reference-transaction"
            path.write_text(SHIM)
            path.chmod(0o755)
        out = {}
        t = cpu()
        for i in range(n):
            run("git", "-C", str(vault), "branch", f"b{i}")
        out["git branch"] = (cpu() - t) / n
        t = cpu()
        for i in range(n):
            run("git", "-C", str(vault), "commit", "-q", "--allow-empty", "--no-verify", "-m", f"c{i}")
        out["git commit on main"] = (cpu() - t) / n
        adds = max(1, n // 3)
        env = {**os.environ, "MEMREPO_TRANSACTION": "1"}
        t = cpu()
        for i in range(adds):
            run(*MEMREPO, "--vault", str(vault), "add", "--summary", f"note {i}", "--body", "x", env=env)
        out["memrepo add"] = (cpu() - t) / adds
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=30)
    args = ap.parse_args()
    home = Path(tempfile.mkdtemp())
    (home / "gitconfig").write_text("[user]\n\tname = bench\n\temail = bench@localhost\n[init]\n\tdefaultBranch = main\n")
    os.environ.update(GIT_CONFIG_GLOBAL=str(home / "gitconfig"), GIT_CONFIG_NOSYSTEM="1", MEMREPO_SEMANTIC="0")
    results: dict[bool, list[dict[str, float]]] = {False: [], True: []}
    for _ in range(args.rounds):
        for hook in (False, True):  # alternating, so machine load hits both alike
            results[hook].append(trial(hook, args.n))
    for name in results[False][0]:
        a = statistics.median(r[name] for r in results[False]) * 1000
        b = statistics.median(r[name] for r in results[True]) * 1000
        print(f"{name:20s} without {a:7.1f} ms CPU   with the hook {b:7.1f} ms CPU   (+{b - a:.1f} ms)")


if __name__ == "__main__":
    main()
