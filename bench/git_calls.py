#!/usr/bin/env python3
"""How many git processes each operation starts, at a few sizes (the aim: as many for 40 items as for 5).

  .venv/bin/python bench/git_calls.py [--sizes 5 40]

A ``git`` script first on PATH appends each call to a log and execs the real git, so what is
counted is real git. Each operation runs once to warm the per-process caches (git identity,
git paths), then once counted. Prints a markdown table: operation, then the count at each size.
Runs against the memrepo on ``sys.path`` (``PYTHONPATH=SRC`` measures another checkout).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

WORK = Path(tempfile.mkdtemp(prefix="git-calls-"))
LOG = WORK / "calls.log"


def isolate() -> None:
    home = WORK / "home"
    home.mkdir()
    os.environ.update(HOME=str(home), GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=str(home / ".gitconfig"),
                      MEMREPO_SEMANTIC="0", MEMREPO_LOCK_TIMEOUT="30")
    for key in ("MEMREPO_VAULT", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        os.environ.pop(key, None)
    for key, value in (("user.name", "Bench"), ("user.email", "bench@example.invalid"), ("init.defaultBranch", "main")):
        subprocess.run(["git", "config", "--global", key, value], check=True)
    real = shutil.which("git")
    wrapper = WORK / "bin" / "git"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{LOG}"\nexec "{real}" "$@"\n')
    wrapper.chmod(0o755)
    os.environ["PATH"] = f"{wrapper.parent}{os.pathsep}{os.environ['PATH']}"


def count(fn, *args, **kwargs) -> int:
    fn(*args, **kwargs)  # warm the caches a long-lived process has
    return count_once(fn, *args, **kwargs)


def count_once(fn, *args, **kwargs) -> int:
    LOG.write_text("")
    fn(*args, **kwargs)
    return len(LOG.read_text().splitlines())


def vault(name: str):
    from memrepo import api
    return api.init(WORK / name)


def batch(v, n: int, prefix: str, **extra) -> str:
    from memrepo.review import writes
    src = WORK / f"{v.root.name}-{prefix}.jsonl"
    src.write_text("".join(json.dumps({"id": f"{prefix}{i}", "layer": "L2", "summary": f"item {i}", **extra}) + "\n"
                           for i in range(n)))
    return writes.import_jsonl(v, src, propose=True).proposal


def measure(n: int) -> dict[str, int]:
    from typer.testing import CliRunner

    from memrepo.cli.app import app
    from memrepo.lifecycle import distill_run
    from memrepo.review import proposals, provenance, validate, writes
    out = {}

    v = vault(f"review{n}")
    pid = batch(v, n, "mem_b")
    runner = CliRunner()
    out["review (CLI, one proposal of N memories)"] = count(runner.invoke, app, ["--vault", str(v.root), "review", pid, "--json"])
    out["apply (one proposal of N memories)"] = count_once(proposals.apply, v, pid)

    v = vault(f"get{n}")
    for i in range(n):
        p = batch(v, 1, f"mem_p{i}_")
        if i in (1, 4):
            proposals.apply(v, p)
        elif i in (2, 3):
            proposals.reject(v, p, why="not now")
    out["proposals.get by memory id (N proposals)"] = count(proposals.get, v, "mem_p0_0")
    out["list_proposals --all (N proposals)"] = count(proposals.list_proposals, v, include_closed=True)

    v = vault(f"known{n}")
    for i in range(n):
        pattern = writes.build({"id": f"pat_{i}", "layer": "L2", "kind": "pattern", "subject": "proj",
                                "summary": f"pattern {i}", "status": "pending_review"}, "",
                               author="memrepo-distill", source="distill")
        with v.lock():
            p = proposals.create(v, [pattern], reason="distill").id
        if i % 2:
            proposals.reject(v, p, why="not a pattern")
    out["known_patterns (N distill proposals)"] = count(distill_run.known_patterns, v)

    v = vault(f"fact{n}")
    writes.add(v, {"id": "mem_f", "subject": "proj", "fact": "db.pool", "layer": "L2", "summary": "pool 0"}, "")
    path = v.root / v.catalog().path_of("mem_f")
    for i in range(1, n):
        path.write_text(path.read_text().replace(f"pool {i - 1}", f"pool {i}"))
        subprocess.run(["git", "-C", str(v.root), "commit", "-q", "-a", "-m", f"pool {i}"], check=True)
    out["fact_history (N versions)"] = count(provenance.fact_history, v, "proj", "db.pool")

    v = vault(f"hook{n}")
    src = WORK / f"hook{n}.jsonl"
    src.write_text("".join(json.dumps({"id": f"mem_h{i}", "layer": "L2", "summary": f"item {i}",
                                       "proposal": f"prop_h{i}"}) + "\n" for i in range(n)))
    writes.import_jsonl(v, src)
    for i in range(n):
        p = v.root / v.catalog().path_of(f"mem_h{i}")
        p.write_text(p.read_text().replace(f"item {i}", f"item {i} edited"))
    subprocess.run(["git", "-C", str(v.root), "add", "memories"], check=True)
    out["pre-commit gate (N staged edits)"] = count(validate.check_staged, v)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5, 40])
    args = ap.parse_args()
    isolate()
    try:
        results = {n: measure(n) for n in args.sizes}
    finally:
        shutil.rmtree(WORK, ignore_errors=True)
    print("| operation | " + " | ".join(f"git processes at N={n}" for n in args.sizes) + " |")
    print("|---|" + "---:|" * len(args.sizes))
    for op in results[args.sizes[0]]:
        print(f"| {op} | " + " | ".join(str(results[n][op]) for n in args.sizes) + " |")


if __name__ == "__main__":
    main()
