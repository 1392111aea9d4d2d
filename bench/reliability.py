#!/usr/bin/env python3
"""Reliability bench: concurrent writers, random kills, crash points and malformed input.

  .venv/bin/python bench/reliability.py [--writers 4] [--adds 20] [--kills 30] [--seed 1]
                                        [--hostile 20] [--only hostile] [--out bench/out/reliability.json]

Every trial runs the real ``memrepo`` command line on a vault made by ``memrepo init`` in a
temporary folder, and is checked afterwards from the outside:

* **concurrent writers**: N processes each run M ``memrepo add`` calls while a searcher loops
  ``memrepo search`` and an ``import`` of 200 lines runs; a trial is one acknowledged write
  (exit 0), passed when its memory is on main afterwards (no write lost, none duplicated).
* **random kills**: an ``add`` or ``import`` is started and its whole process group (memrepo
  and its git children) gets SIGKILL after a random 0-400 ms; passed when the next command
  finds the vault whole: ``validate`` and ``git fsck`` clean, the checkout equal to main, no
  git lock, scratch ref or journal left, everything acknowledged before still there, and the
  next ``add`` working.
* **crash points**: the same checks after ``MEMREPO_FAULT=<point>`` ends an ``add`` (every
  commit step) and an ``import`` at that step.
* **malformed input** classes: each input must be refused with a one-line error (no
  traceback), main unchanged and the vault still valid.
* **hostile remote** (``bench/hostile_remote.py``): trees holding ``.git``, ``..``, symlink,
  submodule and ``.memrepo/`` state entries at random depths, sent through ``memrepo sync`` and
  through a plain ``git pull``, and the reported cases (a policy pushed to switch review off,
  forged trailers, credentials in tool results, a pulled index that runs code, ...).

Prints one table (class, trials, passed, failed) and writes the details as JSON.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.write_path import bench_env, memrepo_cmd  # noqa: E402


class Vault:
    def __init__(self, root: Path, env: dict[str, str]):
        self.root, self.env = root, env

    def memrepo(self, *args: str, stdin: bytes | None = None, extra: dict[str, str] | None = None,
                timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([*memrepo_cmd(), "--vault", str(self.root), *args], input=stdin or b"",
                              capture_output=True, env={**self.env, **(extra or {})}, timeout=timeout)

    def git(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(self.root), *args], capture_output=True, env=self.env)

    def head(self) -> str:
        return self.git("rev-parse", "main").stdout.decode().strip()

    def ids(self) -> set[str]:
        out = self.memrepo("list", "--json")
        return {row["id"] for row in json.loads(out.stdout or b"[]")} if out.returncode == 0 else set()

    def whole(self, acknowledged: set[str]) -> str | None:
        """None when the vault is whole, else what is wrong (the first check that failed)."""
        checked = self.memrepo("validate")  # also finishes a killed write first
        if checked.returncode != 0:
            return "validate: " + (checked.stdout + checked.stderr).decode("utf-8", "replace")[-300:]
        if self.git("fsck", "--no-dangling", "--no-progress").returncode != 0:
            return "git fsck failed"
        status = self.git("status", "--porcelain").stdout.decode()
        if status:
            return f"checkout differs from main: {status[:200]}"
        if self.git("for-each-ref", "refs/memrepo/tmp/").stdout.strip():
            return "a scratch ref was left"
        gitdir = self.root / ".git"
        left = [p.name for p in gitdir.rglob("*.lock") if p.name not in ("memrepo.store.lock", "memrepo-nightly.lock")]
        if left or (gitdir / "memrepo-journal.json").exists():
            return f"left behind: {left or 'journal'}"
        lost = acknowledged - self.ids()
        if lost:
            return f"acknowledged memories lost: {sorted(lost)[:5]}"
        nxt = self.memrepo("add", "--summary", "the next write after a trial")
        if nxt.returncode != 0:
            return "the next write failed: " + nxt.stderr.decode("utf-8", "replace")[-300:]
        return None


def new_vault(work: Path, name: str) -> Vault:
    env = bench_env(work)
    root = work / name
    proc = subprocess.run([*memrepo_cmd(), "init", str(root)], capture_output=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"bench: init failed: {proc.stderr.decode()}")
    return Vault(root, env)


def jsonl(path: Path, prefix: str, n: int) -> Path:
    path.write_text("".join(json.dumps({"id": f"{prefix}_{i}", "subject": f"{prefix}-{i % 7}",
                                        "summary": f"imported note {i} about deploys and caches"}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


# ------------------------------------------------------------------ classes

def concurrent_writers(work: Path, writers: int, adds: int) -> dict:
    v = new_vault(work, "concurrent")
    script = ("import subprocess, sys, json\n"
              "cmd, vault, w, m = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4])\n"
              "for i in range(m):\n"
              "    mid = f'mem_w{w}_{i}'\n"
              "    p = subprocess.run(cmd + ['--vault', vault, 'add', '--id', mid, '--subject', f's{w}',\n"
              "                       '--summary', f'writer {w} note {i}'], capture_output=True)\n"
              "    print(mid if p.returncode == 0 else 'FAIL ' + mid + ' ' + p.stderr.decode()[-200:].replace(chr(10), ' '), flush=True)\n")
    cmd = json.dumps(memrepo_cmd())
    procs = [subprocess.Popen([sys.executable, "-c", script, cmd, str(v.root), str(w), str(adds)],
                              stdout=subprocess.PIPE, env=v.env) for w in range(writers)]
    stop = time.monotonic() + 600
    searcher = subprocess.Popen([sys.executable, "-c",
                                 "import subprocess, sys, json, time\n"
                                 "cmd, vault, stop = json.loads(sys.argv[1]), sys.argv[2], float(sys.argv[3])\n"
                                 "n = bad = 0\n"
                                 "while time.time() < stop:\n"
                                 "    p = subprocess.run(cmd + ['--vault', vault, 'search', 'writer note'], capture_output=True)\n"
                                 "    n += 1; bad += p.returncode != 0 and b'busy' not in p.stderr\n"
                                 "print(n, bad)\n", cmd, str(v.root), str(time.time() + 20)],
                                stdout=subprocess.PIPE, env=v.env)
    imported = v.memrepo("import", str(jsonl(work / "concurrent.jsonl", "mem_imp", 200)))
    acknowledged, failures = set(), []
    for p in procs:
        out, _ = p.communicate(timeout=max(1, stop - time.monotonic()))
        for line in out.decode().splitlines():
            (failures.append(line) if line.startswith("FAIL") else acknowledged.add(line))
    searches, search_errors = (int(x) for x in searcher.communicate(timeout=120)[0].split())
    listed = v.ids()
    imported_ok = imported.returncode == 0 and {f"mem_imp_{i}" for i in range(200)} <= listed
    lost = acknowledged - listed
    problem = v.whole(acknowledged)
    trials = writers * adds + 1
    # a trial passes when its write was acknowledged and is on main; refusals count as failures
    passed = 0 if problem else len(acknowledged - lost) + imported_ok
    return {"class": "concurrent writers", "trials": trials, "passed": passed, "failed": trials - passed,
            "detail": {"writers": writers, "adds_each": adds, "refused": failures[:5], "lost": sorted(lost)[:5],
                       "searches": searches, "search_errors": search_errors, "vault_problem": problem}}


def random_kills(work: Path, kills: int, rng: random.Random) -> dict:
    v = new_vault(work, "kills")
    acknowledged: set[str] = set()
    failures = []
    for t in range(kills):
        if t % 3 == 2:
            args = ["import", str(jsonl(work / f"kill{t}.jsonl", f"mem_k{t}", 50))]
        else:
            args = ["add", "--id", f"mem_kill_{t}", "--summary", f"killed add {t}"]
        proc = subprocess.Popen([*memrepo_cmd(), "--vault", str(v.root), *args], env=v.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(0, 0.4))
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        code = proc.wait()
        if code == 0:
            acknowledged |= ({f"mem_kill_{t}"} if args[0] == "add" else {f"mem_k{t}_{i}" for i in range(50)})
        problem = v.whole(acknowledged)
        if problem:
            failures.append({"trial": t, "command": args[0], "problem": problem})
            break  # a broken vault would fail every later trial for the same reason
    done = t + 1
    return {"class": "random kill -9 (process group)", "trials": done, "passed": done - len(failures),
            "failed": len(failures), "detail": {"failures": failures}}


def crash_points(work: Path) -> dict:
    from memrepo.store import faults
    v = new_vault(work, "points")
    acknowledged: set[str] = set()
    failures, trials = [], 0
    commit_points = [p for p in faults.POINTS if p.startswith("commit-")]
    plan = [("add", p) for p in ["add-checked", *commit_points]] + [("import", p) for p in ["import-checked", *commit_points]]
    for n, (command, point) in enumerate(plan):
        trials += 1
        args = (["add", "--id", f"mem_pt_{n}", "--summary", f"point {point}"] if command == "add"
                else ["import", str(jsonl(work / f"pt{n}.jsonl", f"mem_pt{n}", 10))])
        killed = v.memrepo(*args, extra={faults.ENV: point})
        problem = None if killed.returncode == faults.EXIT_CODE else f"{point} not reached (exit {killed.returncode})"
        problem = problem or v.whole(acknowledged)
        if problem:
            failures.append({"command": command, "point": point, "problem": problem})
        acknowledged |= {i for i in v.ids() if i.startswith("mem_pt")}
    return {"class": "crash points (MEMREPO_FAULT)", "trials": trials, "passed": trials - len(failures),
            "failed": len(failures), "detail": {"failures": failures}}


MALFORMED = {
    "oversized body (300 KB)": [("add", ["add", "--summary", "big"], b"x" * 300_000),
                                ("import", "big", None)],
    "existing id": [("add", ["add", "--id", "mem_taken", "--kind", "event", "--summary", "replace it"], None),
                    ("import", "taken", None)],
    "symlinked folder": [("add", ["add", "--layer", "L2", "--summary", "through a link"], None)],
    "invalid JSONL line": [("import", "garbage", None)],
    "wrong types in an import line": [("import", "types", None)],
    "invalid UTF-8 on stdin": [("add", ["add", "--summary", "bytes"], b"x\xff\xfe")],
    "invalid id": [("add", ["add", "--id", "../escape", "--summary", "escape"], None)],
}
IMPORT_LINES = {
    "big": json.dumps({"summary": "big", "body": "x" * 300_000}),
    "taken": json.dumps({"id": "mem_taken", "summary": "replace it"}),
    "garbage": "{not json",
    "types": json.dumps({"summary": "typed", "tags": 5, "weight": "heavy"}),
}


def malformed_input(work: Path) -> list[dict]:
    v = new_vault(work, "malformed")
    v.memrepo("add", "--id", "mem_taken", "--summary", "the original")
    elsewhere = work / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    link = v.root / "memories" / "L2"
    if link.is_dir() and not link.is_symlink():
        shutil.rmtree(link)
    link.symlink_to(elsewhere)
    rows = []
    for name, cases in MALFORMED.items():
        failures = []
        for kind, what, stdin in cases:
            head = v.head()
            if kind == "import":
                path = work / f"bad-{what}.jsonl"
                path.write_text(IMPORT_LINES[what] + "\n", encoding="utf-8")
                proc = v.memrepo("import", str(path))
            else:
                proc = v.memrepo(*what, stdin=stdin)
            err = proc.stderr.decode("utf-8", "replace")
            if proc.returncode == 0:
                failures.append(f"{kind}: accepted")
            elif "Traceback" in err:
                failures.append(f"{kind}: traceback")
            elif v.head() != head:
                failures.append(f"{kind}: main moved")
            elif list(elsewhere.iterdir()):
                failures.append(f"{kind}: wrote outside the vault")
        rows.append({"class": f"malformed: {name}", "trials": len(cases), "passed": len(cases) - len(failures),
                     "failed": len(failures), "detail": {"failures": failures}})
    link.unlink()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--adds", type=int, default=20, help="adds per writer")
    ap.add_argument("--kills", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hostile", type=int, default=20, help="generated hostile trees per route (sync, git pull)")
    ap.add_argument("--only", choices=("hostile",), help="run only this section")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "reliability.json"))
    args = ap.parse_args()
    rng = random.Random(args.seed)
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="memrepo-reliability-") as tmp:
        work = Path(tmp)
        from bench.hostile_remote import generated_trees, reported_cases
        rows = [] if args.only else [concurrent_writers(work, args.writers, args.adds), random_kills(work, args.kills, rng),
                                     crash_points(work), *malformed_input(work)]
        rows += [*generated_trees(work, args.hostile, rng, new_vault), *reported_cases(work, new_vault)]
    width = max(len(r["class"]) for r in rows)
    print(f"{'class':<{width}}  trials  passed  failed")
    for r in rows:
        print(f"{r['class']:<{width}}  {r['trials']:>6}  {r['passed']:>6}  {r['failed']:>6}")
    total = [sum(r[k] for r in rows) for k in ("trials", "passed", "failed")]
    print(f"{'total':<{width}}  {total[0]:>6}  {total[1]:>6}  {total[2]:>6}")
    for r in rows:
        if r["failed"]:
            print(f"\n{r['class']}: {json.dumps(r['detail'], ensure_ascii=False)[:1000]}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"rows": rows, "seconds": round(time.time() - started, 1), "args": vars(args),
                               "machine": {"python": platform.python_version(), "platform": platform.platform(),
                                           "cpus": os.cpu_count(), "loadavg": os.getloadavg()}},
                              indent=1, ensure_ascii=False), encoding="utf-8")


if __name__ == "__main__":
    main()
