#!/usr/bin/env python3
"""Review-flow benchmark: create, review, apply and roll back a proposal on a large vault.

  .venv/bin/python bench/review.py [--size 10000] [--compare 1000] [--runs 20] [--out bench/out/review.json]

Builds a vault of ``--size`` synthetic memories (and one of each ``--compare`` size, so growth
with the vault shows) exactly as ``bench/write_path.py`` does: the shared
``../shared/bench/synth.py`` run at bench time, ``memrepo init``, ``memrepo import``. Then, one
CLI process per call (start-up included), ``--runs`` cycles after 3 warm-up cycles of two kinds:

* **constraint**: ``memrepo add --kind constraint --subject S --fact rule`` (high risk: a policy
  constraint) opens a proposal; ``memrepo review P``; ``memrepo apply P``; ``memrepo rollback ID``.
* **supersede**: an untimed low-risk ``add --subject S --fact owner`` makes v1 active; the timed
  ``add`` of v2 for the same (subject, fact) is a state override, so it opens a proposal;
  ``review``; ``apply`` (overwrite: v1 superseded in the merge); ``rollback`` v2 (v1 active again).

Each cycle uses its own subject and ids, so cycles do not depend on each other. After the runs
``memrepo validate`` must find the vault clean. Prints median and p95 (ms) per operation and the
ratio between the largest and smallest vault; writes JSON. Deterministic (fixed seed and ids).
Target: these must not grow with the number of memories beyond git's own costs.

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
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from write_path import DEFAULT_SYNTH, REPO, WARMUPS, bench_env, build_vault, machine, memrepo_cmd, run, stats, timed  # noqa: E402

OPS = ("propose", "review", "apply", "rollback")


def cycle(vault: Path, env: dict[str, str], kind: str, i: int) -> dict[str, tuple[float, float]]:
    """One propose -> review -> apply -> rollback cycle; returns (wall, CPU) ms per operation."""
    cli = memrepo_cmd() + ["--vault", str(vault)]
    subject = f"review-{kind}-{i:04d}"
    if kind == "constraint":
        mem_id = f"rv_c_{i:04d}"
        add = ["add", "--id", mem_id, "--kind", "constraint", "--subject", subject, "--fact", "rule",
               "--summary", f"never deploy {subject} on Fridays", "--evidence", f"bench/review#{i}",
               "--body", f"Policy for {subject}: no deploys on Fridays (bench cycle {i}).\n", "--json"]
    else:
        run(cli + ["add", "--id", f"rv_s_{i:04d}_v1", "--subject", subject, "--fact", "owner",
                   "--summary", f"{subject} is owned by team a", "--body", "Owner: team a.\n", "--json"], env)
        mem_id = f"rv_s_{i:04d}_v2"
        add = ["add", "--id", mem_id, "--subject", subject, "--fact", "owner", "--summary", f"{subject} is owned by team b",
               "--evidence", f"bench/review#{i}", "--body", "Owner: team b (handed over).\n", "--json"]
    times = {}
    times["propose"], out = timed(cli + add, env)
    result = json.loads(out)
    proposal = result.get("proposal")
    if result.get("status") != "pending_review" or not proposal or result.get("commit"):
        raise SystemExit(f"bench: {kind} add did not open a proposal: {result}")
    times["review"], card = timed(cli + ["review", proposal], env)
    if "Rollback point" not in card:
        raise SystemExit(f"bench: review card of {proposal} has no rollback point:\n{card}")
    times["apply"], out = timed(cli + ["apply", proposal, "--json"], env)
    if not json.loads(out).get("commit"):
        raise SystemExit(f"bench: apply {proposal} made no commit: {out}")
    times["rollback"], out = timed(cli + ["rollback", mem_id, "--why", "bench", "--json"], env)
    if not json.loads(out).get("commit"):
        raise SystemExit(f"bench: rollback {mem_id} made no commit: {out}")
    return times


def check_state(vault: Path, env: dict[str, str], kind: str, i: int) -> None:
    """After a cycle: the rolled-back memory is not active; for supersede, v1 is active again."""
    cli = memrepo_cmd() + ["--vault", str(vault)]
    if kind == "constraint":
        rows = json.loads(run(cli + ["list", "--subject", f"review-constraint-{i:04d}", "--json"], env))
        if any(r["status"] == "active" for r in rows):
            raise SystemExit(f"bench: rollback left an active constraint: {rows}")
    else:
        rows = {r["id"]: r["status"] for r in json.loads(run(cli + ["list", "--subject", f"review-supersede-{i:04d}", "--json"], env))}
        if rows.get(f"rv_s_{i:04d}_v1") != "active" or rows.get(f"rv_s_{i:04d}_v2") == "active":
            raise SystemExit(f"bench: rollback of a supersede did not bring v1 back: {rows}")


def measure(vault: Path, env: dict[str, str], runs: int) -> dict[str, dict[str, dict[str, float]]]:
    out = {}
    for kind in ("constraint", "supersede"):
        samples: dict[str, list[tuple[float, float]]] = {op: [] for op in OPS}
        for i in range(WARMUPS + runs):
            times = cycle(vault, env, kind, i)
            if i == 0:
                check_state(vault, env, kind, i)
            if i >= WARMUPS:
                for op in OPS:
                    samples[op].append(times[op])
        out[kind] = {op: stats(samples[op]) for op in OPS}
        print(f"  {kind}: " + "; ".join(f"{op} {s['p50']}/{s['p95']} (CPU {s['cpu_p50']})" for op, s in out[kind].items()), flush=True)
    proc = run(memrepo_cmd() + ["--vault", str(vault), "validate", "--json"], env)
    if not json.loads(proc)["ok"]:
        raise SystemExit(f"bench: vault invalid after the review cycles: {proc[:2000]}")
    return out


def table(results: list[dict]) -> str:
    rows = ["| memories | flow | " + " | ".join(OPS) + " |", "|---:|---|" + "---:|" * len(OPS)]
    for r in results:
        for kind, ops in r["flows"].items():
            rows.append(f"| {r['size']:,} | {kind} | "
                        + " | ".join(f"{ops[op]['p50']} / {ops[op]['p95']} ({ops[op]['cpu_p50']})" for op in OPS) + " |")
    return "\n".join(rows) + "\n\nms: wall p50 / p95 (CPU p50 of the process and its git children)"


def growth(results: list[dict]) -> list[str]:
    if len(results) < 2:
        return []
    a, b = results[0], results[-1]
    lines = []
    for kind in a["flows"]:
        fa, fb = a["flows"][kind], b["flows"][kind]
        ratios = ", ".join(f"{op} x{fb[op]['p50'] / fa[op]['p50']:.2f} (CPU x{fb[op]['cpu_p50'] / fa[op]['cpu_p50']:.2f})" for op in OPS)
        lines.append(f"{kind}: wall p50 ratio {b['size']:,} vs {a['size']:,} memories: {ratios}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=10000, help="vault size the figures are for")
    ap.add_argument("--compare", default="1000", help="comma-separated sizes to compare with ('' for none)")
    ap.add_argument("--runs", type=int, default=20, help="timed cycles per flow (after 3 warm-ups)")
    ap.add_argument("--out", default=str(REPO / "bench" / "out" / "review.json"))
    ap.add_argument("--synth", default=DEFAULT_SYNTH, help="path of the shared synth.py")
    ap.add_argument("--workdir", help="where vaults are built (default: a temporary folder, removed after)")
    ap.add_argument("--keep", action="store_true", help="keep the vaults and generated files")
    args = ap.parse_args(argv)
    sizes = sorted({args.size, *(int(s) for s in args.compare.split(",") if s.strip())})
    if not Path(args.synth).is_file():
        raise SystemExit(f"bench: no synth.py at {args.synth}; pass --synth PATH or set MEMREPO_SYNTH")

    work = Path(args.workdir or tempfile.mkdtemp(prefix="memrepo-review-bench-")).resolve()
    work.mkdir(parents=True, exist_ok=True)
    env = bench_env(work)
    info = machine()
    print(f"machine: nproc {info['nproc']}, Python {info['python']}, {info['git']}, {info['cpu']}; "
          f"memrepo {info['memrepo_commit']}; load {info['loadavg_at_start']}; work dir {work}", flush=True)
    results = []
    try:
        for size in sizes:
            vault, imp = build_vault(work, size, args.synth, env)
            print(f"\n== {size:,} memories (import {imp['seconds']} s)", flush=True)
            results.append({"size": size, "import": imp, "flows": measure(vault, env, args.runs)})
            if not args.keep:
                shutil.rmtree(vault, ignore_errors=True)
    finally:
        if not args.keep and not args.workdir:
            shutil.rmtree(work, ignore_errors=True)

    print("\n" + table(results))
    for line in growth(results):
        print(line)
    info["loadavg_at_end"] = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"bench": "review", "machine": info, "runs": args.runs, "warmups": WARMUPS,
                               "results": results, "growth": growth(results), "units": "ms"},
                              indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
