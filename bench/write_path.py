#!/usr/bin/env python3
"""Write-path benchmark: import, add (CLI and in-process), validate and the pre-commit hook.

  .venv/bin/python bench/write_path.py [--sizes 1000,10000,100000] [--runs 30] [--out bench/out/write_path.json]

For each size the bench generates memories with the shared generator
(``../shared/bench/synth.py`` from the project root, run at bench time and never copied; override
with ``--synth`` or ``MEMREPO_SYNTH``), creates a vault with ``memrepo init`` in a temporary
folder and measures, on that vault:

* ``memrepo import FILE`` once: wall time and throughput (memories/s);
* ``memrepo --vault V add --id .. --subject .. --summary .. --body ..`` through the CLI, one process
  per call so start-up is included: median and p95 of ``--runs`` calls after 3 warm-ups. Every
  call uses a new subject and no fact, so every write is low risk and commits straight to main;
* ``memrepo.review.writes.add`` in this process (one :class:`Vault` kept open, as an agent would);
* the pre-commit hook for a one-file hand edit: append a line to one memory file, ``git add``
  it, time ``git commit -m x`` with memrepo's hook installed, and the same commit with
  ``--no-verify`` as git's own cost (the two kinds alternate, so drift hits both alike);
* ``memrepo validate`` of the whole working tree (``--validate-runs`` times up to 10,000
  memories, once above).

Process start-up alone (``memrepo --help``) is measured once as the floor of every CLI call.
Everything is deterministic (fixed seed, ids, subjects and bodies); the machine is recorded in
the JSON. ``--profile DIR`` also writes a cProfile of one CLI ``add`` and one hook run per size
and prints where their time goes. Times are wall-clock (``time.perf_counter``), in ms.
Target: ``add`` <= 150 ms median through the CLI at 100,000 memories, flat in size.

The synthetic memories come from the benchmark kit's generator (``synth.py``, deterministic,
~30 % Chinese; read at run time from ``../shared/bench`` beside the project, never copied, not
part of this repository). When it is absent the bench says where it looked and stops: pass
``--synth PATH`` or set ``MEMREPO_SYNTH``.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import platform
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Sequence

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEFAULT_SYNTH = os.environ.get("MEMREPO_SYNTH") or str((REPO / ".." / "shared" / "bench" / "synth.py").resolve())
WARMUPS = 3
SEED = 1
ADD_TARGET_MS = 150.0


# ------------------------------------------------------------------ shared helpers (review.py uses them)

def memrepo_cmd() -> list[str]:
    """The ``memrepo`` console script next to this interpreter (what a user runs), else ``-m``."""
    script = Path(sys.executable).parent / "memrepo"
    return [str(script)] if script.exists() else [sys.executable, "-m", "memrepo"]


def bench_env(work: Path) -> dict[str, str]:
    """A fixed identity and an empty global git config, so the user's settings do not leak in."""
    gitconfig = work / "gitconfig"
    if not gitconfig.exists():
        gitconfig.write_text("[user]\n\tname = bench\n\temail = bench@localhost\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k not in ("MEMREPO_VAULT", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE")}
    env.update(GIT_CONFIG_GLOBAL=str(gitconfig), GIT_CONFIG_NOSYSTEM="1", MEMREPO_AUTHOR="bench",
               GIT_AUTHOR_NAME="bench", GIT_AUTHOR_EMAIL="bench@localhost",
               GIT_COMMITTER_NAME="bench", GIT_COMMITTER_EMAIL="bench@localhost", LC_ALL="C.UTF-8")
    env["MEMREPO_DAEMON"] = "0"  # every call a new process, as measured so far; cli_speed.py times the server apart
    return env


def run(cmd: Sequence[str], env: dict[str, str], cwd: Path | None = None, stdin: bytes | None = None) -> str:
    proc = subprocess.run(list(cmd), cwd=cwd, env=env, capture_output=True, input=stdin if stdin is not None else b"")
    if proc.returncode != 0:
        raise SystemExit(f"bench: command failed ({proc.returncode}): {' '.join(cmd)}\n"
                         f"{proc.stderr.decode('utf-8', 'replace')}{proc.stdout.decode('utf-8', 'replace')}")
    return proc.stdout.decode("utf-8", "replace")


def children_cpu_ms() -> float:
    """User + system CPU of every finished child process so far (git processes included)."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (ru.ru_utime + ru.ru_stime) * 1000


def timed(cmd: Sequence[str], env: dict[str, str], cwd: Path | None = None) -> tuple[tuple[float, float], str]:
    """(wall ms, CPU ms) of one process and its children, and its stdout.

    CPU time is reported beside wall time because it barely moves when other work shares the
    machine: on a busy box compare CPU medians across sizes, wall medians on a quiet one.
    """
    c0, t0 = children_cpu_ms(), time.perf_counter()
    out = run(cmd, env, cwd)
    return ((time.perf_counter() - t0) * 1000, children_cpu_ms() - c0), out


def _q(values: list[float]) -> tuple[float, float]:
    s = sorted(values)
    p95 = statistics.quantiles(s, n=20, method="inclusive")[18] if len(s) > 1 else s[0]
    return round(statistics.median(s), 1), round(p95, 1)


def stats(samples: list[tuple[float, float]]) -> dict[str, float]:
    """Wall median, p95 (inclusive interpolation), min, max and CPU median, p95; ms, 0.1 ms."""
    wall = sorted(w for w, _ in samples)
    p50, p95 = _q(wall)
    cpu50, cpu95 = _q([c for _, c in samples])
    return {"p50": p50, "p95": p95, "min": round(wall[0], 1), "max": round(wall[-1], 1), "n": len(wall),
            "cpu_p50": cpu50, "cpu_p95": cpu95}


def repeat(fn: Callable[[int], tuple[float, float]], runs: int, warmups: int = WARMUPS) -> dict[str, float]:
    """Call ``fn(i)`` ``warmups`` times untimed, then ``runs`` times; ``fn`` returns (wall, CPU) ms."""
    for i in range(warmups):
        fn(i)
    return stats([fn(warmups + i) for i in range(runs)])


def synth(path: Path, n: int, synth_script: str, env: dict[str, str]) -> Path:
    if not Path(synth_script).is_file():
        raise SystemExit(f"bench: the synthetic generator {synth_script} is absent (the benchmark kit's synth.py, "
                         "not part of this repository): pass --synth PATH or set MEMREPO_SYNTH")
    if not path.exists():
        run([sys.executable, synth_script, "--n", str(n), "--out", str(path), "--seed", str(SEED)], env)
    return path


def build_vault(work: Path, size: int, synth_script: str, env: dict[str, str]) -> tuple[Path, dict]:
    """A fresh vault of ``size`` synthetic memories; returns it and the import timing."""
    data = synth(work / f"synth-{size}.jsonl", size, synth_script, env)
    vault = work / f"vault-{size}"
    if vault.exists():  # a vault kept by an earlier run (--workdir/--keep) would carry its writes
        shutil.rmtree(vault)
    run(memrepo_cmd() + ["init", str(vault)], env)
    # the write path only (the commit): the index and vectors are the benches of search
    (ms, cpu), out = timed(memrepo_cmd() + ["--vault", str(vault), "import", str(data), "--json", "--no-index"], env)
    imported = json.loads(out)["imported"]
    if imported != size:
        raise SystemExit(f"bench: imported {imported} of {size} memories")
    return vault, {"seconds": round(ms / 1000, 2), "per_second": round(size / (ms / 1000), 1),
                   "cpu_seconds": round(cpu / 1000, 2)}


def machine() -> dict[str, str]:
    def out(*cmd: str) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO).stdout.strip()
        except OSError:
            return ""
    dirty = bool(out("git", "status", "--porcelain", "--untracked-files=no"))
    return {"nproc": str(os.cpu_count()), "python": platform.python_version(), "git": out("git", "--version"),
            "loadavg_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
            "platform": platform.platform(), "cpu": _cpu_model(),
            "memrepo_commit": out("git", "rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")}


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def profile_top(prof: Path, limit: int = 14) -> str:
    """The slowest call paths of a cProfile dump (cumulative), memrepo and git calls first."""
    buf = io.StringIO()
    st = pstats.Stats(str(prof), stream=buf)
    st.sort_stats("cumulative").print_stats(r"memrepo/|subprocess.py.*(communicate|run)|jsonschema/validators.py.*iter_errors", limit)
    return buf.getvalue().split("function calls", 1)[-1]


# ------------------------------------------------------------------ measurements

def add_cli(vault: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    base = memrepo_cmd() + ["--vault", str(vault), "add"]

    def one(i: int) -> tuple[float, float]:
        sample, out = timed(base + ["--id", f"wp_cli_{i:04d}", "--subject", f"bench-cli-{i:04d}",
                                "--summary", f"bench CLI write {i}", "--body", f"Bench CLI write number {i}.\n",
                                "--json"], env)
        result = json.loads(out)
        if result.get("status") != "active" or not result.get("commit"):
            raise SystemExit(f"bench: add was not a low-risk commit: {result}")
        return sample
    return repeat(one, runs)


def add_in_process(vault_path: Path, runs: int) -> dict[str, float]:
    from memrepo.review import writes as memories
    from memrepo.store.vault import Vault

    with Vault(vault_path) as vault:
        def one(i: int) -> tuple[float, float]:
            fields = {"id": f"wp_api_{i:04d}", "subject": f"bench-api-{i:04d}", "summary": f"bench API write {i}"}
            c0, p0, t0 = children_cpu_ms(), time.process_time(), time.perf_counter()
            result = memories.add(vault, fields, f"Bench API write number {i}.\n", author="bench")
            ms = (time.perf_counter() - t0) * 1000
            cpu = (time.process_time() - p0) * 1000 + children_cpu_ms() - c0
            if result.status != "active":
                raise SystemExit(f"bench: in-process add was not a low-risk commit: {result}")
            return ms, cpu
        return repeat(one, runs)


def hand_edit_targets(vault: Path, env: dict[str, str], count: int) -> list[str]:
    """``count`` memory files spread evenly over the vault (sorted, so deterministic)."""
    paths = sorted(p for p in run(["git", "-C", str(vault), "ls-files", "-z", "--", "memories"], env).split("\0")
                   if p.endswith(".md") and "/wp_" not in p)
    step = max(1, len(paths) // count)
    return [paths[(i * step) % len(paths)] for i in range(count)]


def hand_edit(vault: Path, rel: str, n: int, env: dict[str, str]) -> None:
    target = vault / rel
    text = target.read_text(encoding="utf-8")
    target.write_text(text.rstrip("\n") + f"\n\nHand edit {n} (bench).\n", encoding="utf-8")
    run(["git", "-C", str(vault), "add", "--", rel], env)


def hook_commits(vault: Path, env: dict[str, str], runs: int) -> tuple[dict[str, float], dict[str, float]]:
    """One-file hand commits with the hook and with --no-verify, alternating."""
    targets = hand_edit_targets(vault, env, 2 * (runs + WARMUPS))
    with_hook, without = [], []
    for i in range(runs + WARMUPS):
        for kind, sink in (("hook", with_hook), ("no-verify", without)):
            n = 2 * i + (kind == "no-verify")
            hand_edit(vault, targets[n], n, env)
            cmd = ["git", "-C", str(vault), "commit", "-q", "-m", f"bench: hand edit {n}"]
            sample, _ = timed(cmd + (["--no-verify"] if kind == "no-verify" else []), env)
            if i >= WARMUPS:
                sink.append(sample)
    if run(["git", "-C", str(vault), "status", "--porcelain", "--untracked-files=no"], env).strip():
        raise SystemExit(f"bench: {vault} has uncommitted changes after the hook runs")
    return stats(with_hook), stats(without)


def validate(vault: Path, env: dict[str, str], runs: int) -> dict[str, float]:
    def one(_i: int) -> tuple[float, float]:
        sample, out = timed(memrepo_cmd() + ["--vault", str(vault), "validate", "--json"], env)
        if not json.loads(out)["ok"]:
            raise SystemExit(f"bench: validate found problems in {vault}: {out[:2000]}")
        return sample
    return repeat(one, runs, warmups=0)


def profile_once(vault: Path, env: dict[str, str], outdir: Path, size: int) -> dict[str, str]:
    """cProfile one CLI add and one pre-commit hook run; returns the report text per operation."""
    outdir.mkdir(parents=True, exist_ok=True)
    reports = {}
    add_prof = outdir / f"add-{size}.prof"
    run([sys.executable, "-m", "cProfile", "-o", str(add_prof), "-m", "memrepo", "--vault", str(vault), "add",
         "--id", "wp_prof_add", "--subject", "bench-prof", "--summary", "profiled write", "--body", "Profiled.\n"], env)
    reports["add"] = profile_top(add_prof)
    rel = hand_edit_targets(vault, env, 1)[0]
    hand_edit(vault, rel, 9999, env)
    hook_prof = outdir / f"hook-{size}.prof"
    run([sys.executable, "-m", "cProfile", "-o", str(hook_prof), "-m", "memrepo", "hook", "pre-commit"], env, cwd=vault)
    run(["git", "-C", str(vault), "commit", "-q", "--no-verify", "-m", "bench: profiled hand edit"], env)
    reports["hook"] = profile_top(hook_prof)
    return reports


# ------------------------------------------------------------------ report

def table(results: list[dict]) -> str:
    """Wall p50 / p95 per operation (ms), CPU p50 in brackets (process and its children)."""
    def cell(st: dict) -> str:
        return f"{st['p50']} / {st['p95']} ({st['cpu_p50']})"
    head = ("| memories | import s (mem/s) | add CLI | add in-process | hook commit | "
            "commit --no-verify | validate s |")
    rows = [head, "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        imp = r["import"]
        val = r.get("validate")
        rows.append(f"| {r['size']:,} | {imp['seconds']} ({imp['per_second']:,.0f}/s) "
                    f"| {cell(r['add_cli'])} | {cell(r['add_in_process'])} | {cell(r['hook_commit'])} "
                    f"| {cell(r['commit_no_verify'])} | {round(val['p50'] / 1000, 2) if val else '-'} |")
    return "\n".join(rows) + "\n\nms: wall p50 / p95 (CPU p50)"


def verdict(results: list[dict]) -> list[str]:
    lines = []
    if len(results) > 1:
        a, b = results[0], results[-1]
        for key, name in (("add_cli", "add CLI"), ("add_in_process", "add in-process"), ("hook_commit", "hook commit"),
                          ("commit_no_verify", "commit --no-verify")):
            lines.append(f"{name}: from {a['size']:,} to {b['size']:,} memories, wall p50 x{b[key]['p50'] / a[key]['p50']:.2f}, "
                         f"CPU p50 x{b[key]['cpu_p50'] / a[key]['cpu_p50']:.2f}")
    big = max(results, key=lambda r: r["size"])
    ok = big["add_cli"]["p50"] <= ADD_TARGET_MS
    lines.append(f"target add CLI p50 <= {ADD_TARGET_MS:.0f} ms at {big['size']:,}: "
                 f"{big['add_cli']['p50']} ms -> {'met' if ok else 'MISSED'}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated vault sizes")
    ap.add_argument("--runs", type=int, default=30, help="timed runs per operation (after 3 warm-ups)")
    ap.add_argument("--validate-runs", type=int, default=3, help="validate runs up to 10,000 memories (1 above)")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "write_path.json"))
    ap.add_argument("--synth", default=DEFAULT_SYNTH, help="path of the shared synth.py")
    ap.add_argument("--workdir", help="where vaults are built (default: a temporary folder, removed after)")
    ap.add_argument("--keep", action="store_true", help="keep the vaults and generated files")
    ap.add_argument("--profile", metavar="DIR", help="also cProfile one add and one hook run per size into DIR")
    args = ap.parse_args(argv)
    sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    if not Path(args.synth).is_file():
        raise SystemExit(f"bench: no synth.py at {args.synth}; pass --synth PATH or set MEMREPO_SYNTH")

    work = Path(args.workdir or tempfile.mkdtemp(prefix="memrepo-write-bench-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = bench_env(work)
    os.environ.update({k: env[k] for k in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "MEMREPO_AUTHOR",
                                           "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL")})
    os.environ.pop("MEMREPO_VAULT", None)
    info = machine()
    print(f"machine: nproc {info['nproc']}, Python {info['python']}, {info['git']}, {info['cpu']}; "
          f"memrepo {info['memrepo_commit']}; load {info['loadavg_at_start']}; work dir {work}", flush=True)
    startup = repeat(lambda i: timed(memrepo_cmd() + ["--help"], env)[0], args.runs)
    print(f"process start-up floor (memrepo --help): p50 {startup['p50']} ms, p95 {startup['p95']} ms, "
          f"CPU p50 {startup['cpu_p50']} ms", flush=True)

    results: list[dict] = []
    failures: list[dict] = []
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)

    def save() -> None:  # after every size, so a failure at 100k keeps the smaller sizes
        info["loadavg_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
        done = [r for r in results if "hook_commit" in r]
        out.write_text(json.dumps({"bench": "write_path", "machine": info, "runs": args.runs, "warmups": WARMUPS,
                                   "seed": SEED, "startup_ms": startup, "results": done, "failures": failures,
                                   "verdict": verdict(done) if done else [],
                                   "units": "ms unless named otherwise"}, indent=2, ensure_ascii=False) + "\n",
                       encoding="utf-8")

    try:
        for size in sizes:
            print(f"\n== {size:,} memories", flush=True)
            try:
                measure_size(work, size, args, env, results)
            except SystemExit as e:  # a failed step: record it, go on with the next size
                print(str(e), flush=True)
                failures.append({"size": size, "error": str(e)[-4000:]})
            save()
            if not args.keep:
                shutil.rmtree(work / f"vault-{size}", ignore_errors=True)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    done = [r for r in results if "hook_commit" in r]
    if done:
        print("\n" + table(done))
        for line in verdict(done):
            print(line)
    for f in failures:
        print(f"FAILED at {f['size']:,} memories: {f['error'].splitlines()[0]}")
    print(f"wrote {out}")
    return 1 if failures else 0


def measure_size(work: Path, size: int, args, env: dict[str, str], results: list[dict]) -> None:
    vault, imp = build_vault(work, size, args.synth, env)
    print(f"import: {imp['seconds']} s, {imp['per_second']:,.0f} memories/s (CPU {imp['cpu_seconds']} s)", flush=True)
    r = {"size": size, "import": imp}
    results.append(r)
    r["add_cli"] = add_cli(vault, env, args.runs)
    print(f"add CLI: {r['add_cli']}", flush=True)
    r["add_in_process"] = add_in_process(vault, args.runs)
    print(f"add in-process: {r['add_in_process']}", flush=True)
    r["hook_commit"], r["commit_no_verify"] = hook_commits(vault, env, args.runs)
    print(f"hook commit: {r['hook_commit']}; --no-verify: {r['commit_no_verify']}", flush=True)
    if args.profile:
        for op, text in profile_once(vault, env, Path(args.profile).resolve(), size).items():
            print(f"\n-- profile of one {op} at {size:,} memories (cumulative s, cProfile overhead included)\n{text}", flush=True)
    r["validate"] = validate(vault, env, args.validate_runs if size <= 10_000 else 1)
    print(f"validate: {r['validate']}", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
