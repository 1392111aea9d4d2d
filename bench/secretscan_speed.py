"""CPU time of one credential scan (``store/secretscan.py: scan``), before and after its needle prefilter.

    .venv/bin/python bench/secretscan_speed.py [--n 2000] [--synth ../shared/bench/synth.py] [--before REV]
                                               [--import-n 10000 --import-rounds 3]

Texts: the corpus prose of ``tests/secret_corpus.py`` (English and Chinese sentences) and the
rendered files of ``--n`` synthetic memories (the kit's ``synth.py``, read at run time, rendered
as ``memrepo import`` renders and scans them). Scanners: this tree's ``scan``, and the
``secretscan.py`` of ``--before`` (default: the commit before the prefilter), loaded from git.
Each round times every scanner over every text, in turn (CPU, ``time.process_time``); the
figures are the median round's µs per text. Also checks both give the same findings, and counts
the rules the prefilter lets run per text.

``--import-n N`` also times ``memrepo import`` of N synthetic memories into a new vault (the
child's CPU seconds, keyword index only: ``MEMREPO_SEMANTIC=0``), alternating this tree and a
temporary copy of it whose only change is the ``--before`` secretscan.py.

The synthetic memories come from the benchmark kit's generator (``synth.py``, deterministic,
~30 % Chinese; read at run time from ``../shared/bench`` beside the project, never copied, not
part of this repository). When it is absent the bench says where it looked and stops: pass
``--synth PATH`` or set ``MEMREPO_SYNTH``.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))

from secret_corpus import PROSE  # noqa: E402

from memrepo.store import secretscan  # noqa: E402

BEFORE = "1b95c79"  # main just before the prefilter


def load_before(rev: str):
    source = subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:memrepo/store/secretscan.py"],
                            check=True, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory(prefix="memrepo-scan-") as tmp:
        path = Path(tmp) / "secretscan_before.py"
        path.write_text(source, encoding="utf-8")
        spec = importlib.util.spec_from_file_location("secretscan_before", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses looks its module up
        spec.loader.exec_module(module)
    return module


def synthetic_files(n: int, synth: Path) -> list[str]:
    from memrepo.review import writes
    from memrepo.store.vault import render_bytes
    with tempfile.TemporaryDirectory(prefix="memrepo-scan-") as tmp:
        out = Path(tmp) / "m.jsonl"
        subprocess.run([sys.executable, str(synth), "--n", str(n), "--out", str(out)], check=True, capture_output=True)
        items, _ = writes.parse_jsonl(out, author="bench")
    return [render_bytes(memory).decode("utf-8") for _, memory in items]


def import_cpu(tree: Path, memories: Path) -> float:
    """CPU seconds of ``memrepo import`` (run from ``tree``) of ``memories`` into a new vault."""
    env = {**os.environ, "PYTHONPATH": str(tree), "MEMREPO_SEMANTIC": "0"}
    with tempfile.TemporaryDirectory(prefix="memrepo-scan-") as tmp:
        vault = Path(tmp) / "vault"
        subprocess.run([sys.executable, "-m", "memrepo", "init", str(vault)], env=env, check=True, capture_output=True)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = usage.ru_utime + usage.ru_stime
        subprocess.run([sys.executable, "-m", "memrepo", "import", str(memories)], cwd=vault, env=env, check=True,
                       capture_output=True)
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        return usage.ru_utime + usage.ru_stime - start


def time_import(n: int, rounds: int, rev: str, synth: Path) -> None:
    with tempfile.TemporaryDirectory(prefix="memrepo-scan-") as tmp:
        tmp = Path(tmp)
        before = tmp / "before"
        for folder in ("memrepo", "template-vault", "hooks", "schema"):
            shutil.copytree(ROOT / folder, before / folder, ignore=shutil.ignore_patterns("__pycache__"))
        (before / "memrepo/store/secretscan.py").write_text(
            subprocess.run(["git", "-C", str(ROOT), "show", f"{rev}:memrepo/store/secretscan.py"],
                           check=True, capture_output=True, text=True).stdout, encoding="utf-8")
        memories = tmp / "m.jsonl"
        subprocess.run([sys.executable, str(synth), "--n", str(n), "--out", str(memories)], check=True, capture_output=True)
        trees = {f"before ({rev})": before, "after": ROOT}
        for tree in trees.values():
            subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "memrepo")], check=True)
        seconds: dict[str, list[float]] = {name: [] for name in trees}
        for _ in range(rounds):
            for name, tree in trees.items():
                seconds[name].append(import_cpu(tree, memories))
        print(f"\n`memrepo import` of {n} synthetic memories, CPU seconds ({rounds} alternating rounds):")
        for name, values in seconds.items():
            print(f"- {name}: median {statistics.median(values):.1f} s ({', '.join(f'{v:.1f}' for v in values)})")


def same(findings) -> list[tuple[str, int, str]]:
    return [(f.rule, f.line, f.preview) for f in findings]


def cpu_per_text(scan, texts: list[str]) -> float:
    start = time.process_time()
    for text in texts:
        scan(text)
    return (time.process_time() - start) / len(texts) * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--synth", type=Path,
                    default=Path(os.environ.get("MEMREPO_SYNTH", ROOT.parent / "shared" / "bench" / "synth.py")))
    ap.add_argument("--before", default=BEFORE, help="git revision whose secretscan.py is the 'before' scanner")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--import-n", type=int, default=0, help="also time `memrepo import` of this many memories")
    ap.add_argument("--import-rounds", type=int, default=3)
    args = ap.parse_args(argv)
    before = load_before(args.before)
    sets = {"corpus prose": PROSE, f"{args.n} synthetic memory files": synthetic_files(args.n, args.synth)}
    scanners = {f"before ({args.before})": before.scan, "after": secretscan.scan}
    print("| texts | mean chars | " + " | ".join(f"{name} µs/text" for name in scanners) + " | ratio | rules run/text |")
    print("|---|---:|" + "---:|" * (len(scanners) + 2))
    for label, texts in sets.items():
        different = [t for t in texts if same(before.scan(t)) != same(secretscan.scan(t))]
        if different:
            raise SystemExit(f"{label}: the findings differ on {len(different)} texts, e.g. {different[0][:200]!r}")
        rounds: dict[str, list[float]] = {name: [] for name in scanners}
        for _ in range(args.rounds):
            for name, scan in scanners.items():  # alternating, so a load change hits both alike
                rounds[name].append(cpu_per_text(scan, texts))
        medians = [statistics.median(r) for r in rounds.values()]
        ran = sum(len(secretscan._rules_for(t)) for t in texts) / len(texts)
        chars = sum(map(len, texts)) / len(texts)
        print(f"| {label} | {chars:.0f} | " + " | ".join(f"{m:.0f}" for m in medians)
              + f" | {medians[0] / medians[-1]:.1f}x | {ran:.1f} of {len(secretscan.RULES)} |")
    if args.import_n:
        time_import(args.import_n, args.import_rounds, args.before, args.synth)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
