#!/usr/bin/env python3
"""Command-line speed: the per-turn commands through the CLI, one process per call.

  .venv/bin/python bench/cli_speed.py [--n 10000] [--runs 15] [--semantic] [--before OLD_TREE]
                                      [--after TREE] [--env SIDE:NAME=VALUE ...]

On one vault of ``--n`` synthetic memories (the shared generator, ``../shared/bench/synth.py``
from the project root, or ``--synth`` / ``MEMREPO_SYNTH``; ``--vault V`` reuses a vault) it
times, median and p95 of ``--runs`` calls after 3 warm-ups, wall and CPU (the process and its
children, git included):

* ``python -c pass`` (the interpreter's floor) and ``memrepo --version`` (the typer app's);
* ``memrepo add`` (a new low-risk memory each call), ``memrepo search`` with the semantic layer
  off (``MEMREPO_SEMANTIC=0``) and, with ``--semantic``, on (vectors built first), ``recall``
  and ``context``;
* a one-file hand commit with memrepo's pre-commit hook, and the same with ``--no-verify``;
* search, recall, context and add answered by a warm background server (``memrepo daemon``; every
  other row runs with ``MEMREPO_DAEMON=0``, a new process per call), keywords only and, with
  ``--semantic``, the default config (semantic on); the server's own CPU per call is a column.

Each side runs as an installed console script does: a launcher made from the tree's
``pyproject.toml`` entry point, byte-compiled first. ``--before OLD_TREE`` (a checkout of
older code, e.g. ``git worktree add /tmp/old main``) runs every call on both trees in turn,
call by call, so load on a shared machine hits both alike: compare the CPU columns there.
``--after TREE`` times another tree than this one as "after", and ``--env after:NAME=VALUE``
sets a variable for one side only: ``--before T --after T --env after:MEMREPO_CLI_FAST=0``
compares one tree with itself under two settings (older trees had a typer-free fast path
that variable turned off).
Targets (at 10k, wall p50 on 2 cores): add <= 150 ms, search <= 250 ms.

The synthetic memories come from the benchmark kit's generator (``synth.py``, deterministic,
~30 % Chinese; read at run time from ``../shared/bench`` beside the project, never copied, not
part of this repository). When it is absent the bench says where it looked and stops: pass
``--synth PATH`` or set ``MEMREPO_SYNTH``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_path import (  # noqa: E402
    DEFAULT_SYNTH,
    REPO,
    WARMUPS,
    bench_env,
    build_vault,
    hand_edit,
    hand_edit_targets,
    machine,
    run,
    stats,
    timed,
)


def launcher(tree: Path, work: Path, name: str) -> Path:
    """A console script for ``tree`` as pip writes one (its pyproject's ``memrepo`` entry point)."""
    entry = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"]["memrepo"]
    module, func = entry.split(":")
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "memrepo")], check=True)
    script = work / f"memrepo-{name}"
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(tree)!r})\n"
                      f"from {module} import {func}\nif __name__ == '__main__':\n    sys.exit({func}())\n",
                      encoding="utf-8")
    script.chmod(0o755)
    return script


def _copy(vault: Path, target: Path) -> Path:
    import shutil
    shutil.copytree(vault, target, symlinks=True)
    return target


def measure(sides: dict[str, tuple[Path, dict]], runs: int, call) -> dict[str, dict]:
    """``call(side, exe, env, i)`` -> (wall, CPU) ms, sides alternating call by call."""
    samples: dict[str, list] = {name: [] for name in sides}
    for i in range(runs + WARMUPS):
        for name, (exe, env) in sides.items():
            sample = call(name, exe, env, i)
            if i >= WARMUPS:
                samples[name].append(sample)
    return {name: stats(s) for name, s in samples.items()}


def server_rows(exe: Path, env: dict, v: list[str], runs: int, work: Path, *, semantic: bool) -> dict[str, dict]:
    """search, recall, context and add answered by a warm background server (memrepo/cli/client.py):
    wall and client CPU per call as above, and the server's CPU per call with its git processes
    (``server_cpu_*``: ``cpu_seconds`` plus ``children_cpu_seconds`` of ``memrepo daemon status``);
    with the semantic layer on (the default config; only with ``--semantic``, which builds the
    vectors first) and off."""
    rt = Path(tempfile.mkdtemp(prefix="rt-", dir="/tmp"))
    rows = {}
    for sem in (("1", "0") if semantic else ("0",)):
        e = {**env, "MEMREPO_DAEMON": "1", "MEMREPO_RUNTIME_DIR": str(rt), "MEMREPO_SEMANTIC": sem}
        run([str(exe), "daemon", "start"], e)

        def served_cpu(e: dict = e) -> float:
            status = json.loads(run([str(exe), "daemon", "status", "--json"], e))
            return (status["cpu_seconds"] + status["children_cpu_seconds"]) * 1000  # its git processes too

        for label, argv in (("search", ["search", "database connection pool latency", "--limit", "10"]),
                            ("recall", ["recall", "why did the deploy fail last week?", "--budget", "2000"]),
                            ("context", ["context", "--budget", "4000"]),
                            ("add", ["add", "--subject", "served-{i}", "--summary", "served note {i}", "--body", "b"])):
            if label == "add" and sem == "1":
                continue  # a write does not use the semantic layer
            samples, server = [], []
            for i in range(runs + WARMUPS):
                before = served_cpu()
                sample = timed([str(exe), *v, *[a.format(i=i) for a in argv]], e)[0]
                if i >= WARMUPS:
                    samples.append(sample)
                    server.append(served_cpu() - before)
            row = stats(samples)
            row["server_cpu_p50"], row["server_cpu_mean"] = round(sorted(server)[len(server) // 2], 1), round(sum(server) / len(server), 1)
            rows[f"{label}, warm server (semantic {'on' if sem == '1' else 'off'})"] = row
        run([str(exe), "daemon", "stop"], e)
    return rows


def git_processes(cmd: list[str], env: dict[str, str], work: Path, cwd: Path | None = None) -> int:
    """How many git commands one call runs (GIT_TRACE)."""
    trace = work / "git-trace"
    trace.unlink(missing_ok=True)
    subprocess.run(cmd, env={**env, "GIT_TRACE": str(trace)}, capture_output=True, cwd=cwd)
    return sum(1 for line in trace.read_text(encoding="utf-8", errors="replace").splitlines() if "built-in: git" in line)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--synth", default=DEFAULT_SYNTH)
    ap.add_argument("--vault", help="an existing vault to use (its memories are not counted)")
    ap.add_argument("--before", metavar="OLD_TREE", help="also run this checkout of older code, alternating")
    ap.add_argument("--after", metavar="TREE", help="the tree timed as 'after' (default: this one)")
    ap.add_argument("--env", action="append", default=[], metavar="SIDE:NAME=VALUE",
                    help="an environment variable for one side (before or after), repeatable")
    ap.add_argument("--semantic", action="store_true", help="also search with the semantic layer on")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "cli_speed.json"))
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="cli-speed-"))
    env = {**bench_env(work), "MEMREPO_SEMANTIC": "0"}
    after = Path(args.after).resolve() if args.after else REPO
    trees = {"after": after} if not args.before else {"before": Path(args.before).resolve(), "after": after}
    extra: dict[str, dict[str, str]] = {name: {} for name in trees}
    for setting in args.env:
        side, _, assignment = setting.partition(":")
        name, _, value = assignment.partition("=")
        if side not in extra or not name:
            raise SystemExit(f"bench: --env {setting!r}: give SIDE:NAME=VALUE with SIDE one of {', '.join(extra)}")
        extra[side][name] = value
    sides = {name: (launcher(tree, work, name), {**env, "PYTHONPATH": str(tree), **extra[name]})
             for name, tree in trees.items()}
    info = machine()
    print(f"bench: {info}; work dir {work}", flush=True)
    if args.vault:
        vault = Path(args.vault).resolve()
    else:
        vault = build_vault(work, args.n, args.synth, {**env, "PYTHONPATH": str(REPO)})[0]
    exe0, env0 = sides["after"]
    # each side its own copy of the vault: a side whose derived state (catalog, index) has
    # another format would otherwise rebuild it on every call after the other side's
    vaults = {"after": vault}
    if "before" in sides:
        vaults["before"] = work / "vault-before"
        shutil.rmtree(vaults["before"], ignore_errors=True)
        shutil.copytree(vault, vaults["before"], symlinks=True)
    for name, (exe, e) in sides.items():
        run([str(exe), "--vault", str(vaults[name]), "search", "warm the index"], e)
    v = ["--vault", str(vault)]
    results: dict[str, dict] = {}

    def cli(*argv_: str):
        return lambda name, exe, env_, i: timed([str(exe), "--vault", str(vaults[name]),
                                                 *[a.format(i=i, name=name) for a in argv_]], env_)[0]

    def floor(name, exe, env_, i):
        return timed([sys.executable, "-c", "pass"], env_)[0]

    cases = {
        "python -c pass": floor,
        "memrepo --version": cli("--version"),
        "add": cli("add", "--subject", "speed-{name}-{i}", "--summary", "speed note {i}", "--body", "a short body"),
        "search": cli("search", "database connection pool latency", "--limit", "10"),
        "search --json": cli("search", "deploy rollback checklist", "--json"),
        "recall": cli("recall", "why did the deploy fail last week?", "--budget", "2000"),
        "context": cli("context", "--budget", "4000"),
    }
    for label, call in cases.items():
        results[label] = measure(sides, args.runs, call)
        print(label, json.dumps(results[label]), flush=True)
    if args.semantic:
        sem = {name: (exe, {**e, "MEMREPO_SEMANTIC": "1"}) for name, (exe, e) in sides.items()}
        run([str(exe0), *v, "reindex", "--wait"], sem["after"][1])  # vectors built before timing
        results["search (semantic on)"] = measure(sem, args.runs, cli("search", "database connection pool latency"))
        print("search (semantic on)", json.dumps(results["search (semantic on)"]), flush=True)

    for label, result in server_rows(exe0, env0, v, args.runs, work, semantic=args.semantic).items():
        results[label] = {"after": result}
        print(label, json.dumps(result), flush=True)

    targets = {name: iter(hand_edit_targets(root, env, 2 * (args.runs + WARMUPS))) for name, root in vaults.items()}
    n = iter(range(10 ** 6))

    def commit(verify: bool):
        def call(name, exe, env_, i):
            k = next(n)
            hand_edit(vaults[name], next(targets[name]), k, env_)
            cmd = ["git", "-C", str(vaults[name]), "commit", "-q", "-m", f"bench: hand edit {k}"]
            return timed(cmd + ([] if verify else ["--no-verify"]), env_)[0]
        return call
    results["commit with the pre-commit hook"] = measure(sides, args.runs, commit(True))
    results["commit --no-verify"] = measure(sides, args.runs, commit(False))
    for label in ("commit with the pre-commit hook", "commit --no-verify"):
        print(label, json.dumps(results[label]), flush=True)

    git_calls = {"add": git_processes([str(exe0), *v, "add", "--summary", "traced", "--body", "b"], env0, work),
                 "search": git_processes([str(exe0), *v, "search", "traced query"], env0, work)}
    print("git processes per call:", git_calls)
    print(f"\n| {args.n:,} memories | " + " | ".join(f"{s} wall p50 / p95 | {s} CPU p50" for s in sides) + " |")
    print("|---|" + "---:|---:|" * len(sides))
    for label, by_side in results.items():
        print(f"| {label} | " + " | ".join(f"{r['p50']:.0f} / {r['p95']:.0f} ms | {r['cpu_p50']:.0f} ms"
                                           + (f" + server {r['server_cpu_p50']:.0f} ms" if "server_cpu_p50" in r else "")
                                           for r in by_side.values()) + " |")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"machine": info, "n": args.n, "runs": args.runs, "results": results,
                               "git_processes": git_calls, "loadavg_at_end": os.getloadavg()}, indent=1) + "\n",
                   encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
