"""Claude's memory tool on a vault: what each command costs.

    .venv/bin/python bench/memory_tool.py [--sizes 1000,10000] [--files 50] [--runs 20] [--json-out FILE]

For each size: a vault (``api.init``) with that many ordinary memories imported in one commit,
then ``--files`` memory-tool files created; then ``--runs`` timed calls of each command through
``MemrepoMemoryTool`` exactly as the Anthropic SDK's tool runner calls it (``tool.call(input)``:
the vault opened per call, as the class does), and the same through ``MemoryTool`` on a vault
kept open (an agent runtime embedding memrepo). Mutating commands are one commit each. Figures:
wall and CPU p50 / p95 in ms, with the machine's load average (it may be shared: CPU is the cost).
No data set is needed: the memories are generated here.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(round(q * (len(values) - 1))))]


def timed(fn, *args) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    fn(*args)
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def build(root: Path, size: int, files: int):
    from memrepo import api
    from memrepo.agents.memory_tool import MemoryTool
    vault = api.init(root)
    rows = [json.dumps({"subject": f"project-{i % 40}", "kind": "knowledge", "summary": f"Fact number {i} about the payments service",
                        "body": f"Observation {i}: the pool size was {i % 97}."}) for i in range(size)]
    (root.parent / f"m{size}.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    api.import_jsonl(vault, root.parent / f"m{size}.jsonl")
    tool = MemoryTool(vault, agent="bench")
    for i in range(files):
        tool.create(f"/memories/notes/topic-{i:03d}.md", f"# Topic {i}\n" + "".join(f"line {j}\n" for j in range(20)))
    return vault


def measure(vault, runs: int) -> dict[str, dict[str, float]]:
    from memrepo.agents.claude_memory import MemrepoMemoryTool
    from memrepo.agents.memory_tool import MemoryTool
    sdk = MemrepoMemoryTool(vault=vault.root, agent="bench")
    kept = MemoryTool(vault, agent="bench")
    calls = {
        "view /memories": lambda n: {"command": "view", "path": "/memories"},
        "view a file": lambda n: {"command": "view", "path": f"/memories/notes/topic-{n % 50:03d}.md"},
        "create": lambda n: {"command": "create", "path": f"/memories/bench/new-{n}.md", "file_text": f"note {n}\n"},
        "str_replace": lambda n: {"command": "str_replace", "path": "/memories/notes/topic-000.md",
                                  "old_str": ("# Topic 0\n", "# Topic zero\n")[n % 2],
                                  "new_str": ("# Topic zero\n", "# Topic 0\n")[n % 2]},
    }
    out: dict[str, dict[str, float]] = {}
    for how, call in (("SDK class (vault opened per call)", sdk.call), ("MemoryTool, vault kept open", kept.run)):
        for name, make in calls.items():
            walls, cpus = [], []
            for n in range(runs):
                command = make(n)
                if name == "create":
                    command["path"] = command["path"].replace("new-", f"new-{how[:3]}-")
                w, c = timed(call, command)
                walls.append(w)
                cpus.append(c)
            out[f"{how}: {name}"] = {"wall_p50": round(statistics.median(walls), 1), "wall_p95": round(pct(walls, 0.95), 1),
                                     "cpu_p50": round(statistics.median(cpus), 1)}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000", help="memories in the vault, comma separated")
    parser.add_argument("--files", type=int, default=50, help="memory-tool files created first")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    os.environ.setdefault("MEMREPO_SEMANTIC", "0")
    os.environ.setdefault("MEMREPO_DAEMON", "0")
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    results = {}
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            vault = build(Path(tmp) / "vault", size, args.files)
            load = os.getloadavg()[0]
            results[size] = {"load_before": round(load, 1), **measure(vault, args.runs),
                             "load_after": round(os.getloadavg()[0], 1)}
            vault.close()
        print(f"{size} memories + {args.files} memory-tool files (load {results[size]['load_before']} -> "
              f"{results[size]['load_after']}):")
        for name, figures in results[size].items():
            if isinstance(figures, dict):
                print(f"  {name:55s} wall p50 {figures['wall_p50']:7.1f}  p95 {figures['wall_p95']:7.1f}  "
                      f"CPU p50 {figures['cpu_p50']:6.1f} ms")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
