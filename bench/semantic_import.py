"""Import with encoding through the product: time to keyword-searchable, time to hybrid, a resume.

    .venv/bin/python bench/semantic_import.py [--n 10000] [--bench ../shared/bench] [--workers N] [--resume]

Generates ``--n`` memories with the benchmark kit's ``synth.py`` (read at run time from
``--bench``; without it the script says where it looked and stops), warms the model's unpacked
cache, then, as a user runs it: ``memrepo init``, ``memrepo import FILE``. The import returns
once the keyword index is ready (**time to keyword-searchable**: a search then answers, on
keywords, ``"semantic": "building"``); the vectors are built by a background process, watched
through its ``build.json`` until it is done (**time to hybrid**: the next search answers
``"hybrid"``). CPU: the import's own (and its children's) and the build's (its ``cpu_s``: its
own and its encoding workers'), and the build's CPU per memory encoded.

``--resume``: the same import into a second vault with the build killed at the fault point
``vectors-checkpointed:K`` (after the unit that passes half of the memories), then resumed by
the next search: how much it kept, what the resumed build encoded, its wall time and CPU.

The data is the benchmark kit's: the dev halves of the public LoCoMo and MADial-Bench
benchmarks (and its synthetic generator ``synth.py``), read at run time from ``../shared/bench``
beside the project and never copied in (their licences keep them out of this repository).
When the kit is absent the bench says where it looked and stops: pass ``--bench DIR``.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
MEMREPO = str(Path(sys.executable).with_name("memrepo"))
UNIT = 512   # memrepo.retrieval.embed.UNIT: the texts a build keeps at a time


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def memrepo(args: list[str], vault: Path, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    out = subprocess.run([MEMREPO, *args], cwd=vault, env=env, capture_output=True, text=True)
    if check and out.returncode:
        raise SystemExit(f"memrepo {' '.join(args[:2])} failed ({out.returncode}): {out.stderr.strip()}")
    return out


def progress(vault: Path) -> dict | None:
    try:
        return json.loads((vault / ".memrepo" / "index" / "vectors" / "build.json").read_text())
    except (OSError, ValueError):
        return None


def until_built(vault: Path, *, not_pid: int | None = None, timeout: float = 7200) -> dict:
    """build.json once a build (not ``not_pid``'s) is done."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = progress(vault)
        if p and p["state"] == "done" and p["pid"] != not_pid:
            return p
        time.sleep(0.2)
    raise SystemExit("the vector build did not finish")


def until_killed(vault: Path, timeout: float = 7200) -> dict:
    """build.json once the killed build's process is gone."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = progress(vault)
        if p and p["ready"] > 0 and not os.path.exists(f"/proc/{p['pid']}"):
            return p
        time.sleep(0.2)
    raise SystemExit("the vector build was not killed")


def semantic_of(vault: Path, env: dict) -> str:
    out = memrepo(["search", "--json", "deploy"], vault, env)
    return json.loads(out.stdout)["semantic"]


def import_run(tmp: Path, name: str, mem: Path, env: dict) -> dict:
    """One vault: ``memrepo import`` timed to its return, then its background build to done."""
    vault = tmp / name
    memrepo(["init", str(vault)], tmp, env)
    t0, c0 = time.perf_counter(), children_cpu()
    out = memrepo(["import", str(mem), "--json"], vault, env)
    searchable = time.perf_counter() - t0
    returned = time.time()
    import_cpu = children_cpu() - c0
    if env.get("MEMREPO_FAULT"):   # (a search now could start the killed build again)
        return {"vault": vault, "keyword_s": searchable, "import_cpu_s": import_cpu}
    first = json.loads(out.stdout)["semantic"], semantic_of(vault, env)
    built = until_built(vault)
    hybrid = time.perf_counter() - t0
    return {"vault": vault, "keyword_s": searchable, "hybrid_s": hybrid, "import_cpu_s": import_cpu,
            "build": built, "states": (*first, semantic_of(vault, env)), "returned": returned}


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
    ap.add_argument("--resume", action="store_true", help="also: a build killed at half, then resumed")
    args = ap.parse_args(argv)
    env = {**os.environ, "MEMREPO_SEMANTIC": "1"}
    env.pop("MEMREPO_FAULT", None)
    if args.workers:
        env["MEMREPO_ENCODE_WORKERS"] = str(args.workers)
    with tempfile.TemporaryDirectory(prefix="memrepo-semimport-") as tmp_name:
        tmp = Path(tmp_name)
        mem = tmp / "synth.jsonl"
        subprocess.run([sys.executable, str(_synth(args.bench)), "--n", str(args.n), "--out", str(mem)],
                       check=True, capture_output=True)
        subprocess.run([sys.executable, "-c", "from memrepo.retrieval import embed; "
                        "embed.shared(embed.user_cache_dir()).query('warm the model cache')"], check=True, env=env)
        load = [os.getloadavg()[0]]
        r = import_run(tmp, "vault", mem, env)
        b = r["build"]
        print(f"n={args.n}: keyword-searchable after {r['keyword_s']:.1f} s (import CPU {r['import_cpu_s']:.1f} s; "
              f"import said {r['states'][0]!r}, a search then {r['states'][1]!r}); hybrid after {r['hybrid_s']:.1f} s "
              f"(the next search {r['states'][2]!r})")
        print(f"  build: {b['encoded']} texts encoded, {b['cpu_s']:.1f} s CPU, {1000 * b['cpu_s'] / max(b['encoded'], 1):.2f} "
              f"ms CPU per memory encoded; wall from its start {b['updated'] - b['started']:.1f} s (it took the lock "
              f"{b['started'] - r['returned']:.1f} s after the import returned, began encoding "
              f"{b['encoding_since'] - b['started']:.1f} s later)")
        load.append(os.getloadavg()[0])
        if args.resume:
            k = math.ceil(args.n / 2 / UNIT)
            killed = import_run(tmp, "killed", mem, {**env, "MEMREPO_FAULT": f"vectors-checkpointed:{k}"})
            held = until_killed(killed["vault"])
            t0 = time.perf_counter()
            assert semantic_of(killed["vault"], env) == "building"   # starts the build again
            done = until_built(killed["vault"], not_pid=held["pid"])
            wall = time.perf_counter() - t0
            print(f"  killed at {held['ready']} of {held['total']} ({100 * held['ready'] / held['total']:.0f} %); "
                  f"resumed by the next search: kept {done['kept']}, encoded "
                  f"{done['encoded']}, hybrid after {wall:.1f} s, {done['cpu_s']:.1f} s CPU "
                  f"(the uninterrupted build: {b['updated'] - b['started']:.1f} s, {b['cpu_s']:.1f} s CPU)")
            load.append(os.getloadavg()[0])
        print(f"  load average {', '.join(f'{x:.1f}' for x in load)}; {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
