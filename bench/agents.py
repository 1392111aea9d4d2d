"""Agent-facing latency: ``memrepo recall`` as a hook calls it, and MCP tool calls on a warm server.

    .venv/bin/python bench/agents.py [--sizes 10000,100000] [--runs 40] [--synth ../shared/bench/synth.py]
        [--workdir DIR] [--json-out FILE]

For each size: a vault of synthetic memories (the kit's ``synth.py``, read at run time, never
copied here) made with ``memrepo init`` + ``memrepo import`` + ``memrepo reindex``; then

* **recall CLI**: ``memrepo recall --json QUERY``, one process per call (start-up, git sync and
  the search included), as a ``UserPromptSubmit`` hook runs it;
* **MCP**: one ``memrepo mcp`` subprocess driven over stdio by the mcp SDK's client;
  ``memory_recall`` and ``memory_search`` calls timed at the client (JSON-RPC over pipes
  included), after warm-up calls.

Queries are three words of a random memory's summary. Figures: wall p50 / p95 in ms.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_path import DEFAULT_SYNTH, bench_env, build_vault, machine, memrepo_cmd, run, stats, timed  # noqa: E402


def queries(vault: Path, env: dict[str, str], count: int, seed: int = 7) -> list[str]:
    rows = json.loads(run(memrepo_cmd() + ["--vault", str(vault), "list", "--json"], env))
    rng = random.Random(seed)
    out = []
    for row in rng.sample(rows, min(count, len(rows))):
        words = [w for w in row["summary"].split() if len(w) > 2] or [row["summary"][:6]]
        out.append(" ".join(words[:3]))
    return out


def recall_cli(vault: Path, env: dict[str, str], qs: list[str]) -> dict:
    samples = []
    for i, q in enumerate(qs):
        sample, _ = timed(memrepo_cmd() + ["--vault", str(vault), "recall", "--json", q], env)
        if i >= 3:
            samples.append(sample)
    return stats(samples)


def mcp_calls(vault: Path, env: dict[str, str], qs: list[str]) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    cmd = memrepo_cmd()
    params = StdioServerParameters(command=cmd[0], args=cmd[1:] + ["mcp", "--vault", str(vault)], env=env)

    async def main() -> dict:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                out = {}
                for tool, key in (("memory_recall", "text"), ("memory_search", "query")):
                    samples = []
                    for i, q in enumerate(qs):
                        t0 = time.perf_counter()
                        result = await client.call_tool(tool, {key: q})
                        wall = (time.perf_counter() - t0) * 1000
                        if result.isError:
                            raise SystemExit(f"bench: {tool} failed: {result.content[0].text}")
                        if i >= 3:
                            samples.append((wall, 0.0))
                    st = stats(samples)
                    out[tool] = {k: v for k, v in st.items() if not k.startswith("cpu")}
                return out
    return asyncio.run(main())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--synth", default=DEFAULT_SYNTH)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="memrepo-bench-agents-"))
    work.mkdir(parents=True, exist_ok=True)
    env = bench_env(work)
    results = {"machine": machine(), "sizes": []}
    for size in [int(s) for s in args.sizes.split(",")]:
        vault, imported = build_vault(work, size, args.synth, env)
        run(memrepo_cmd() + ["--vault", str(vault), "reindex"], env)
        qs = queries(vault, env, args.runs + 3)
        row = {"size": size, "import": imported, "recall_cli": recall_cli(vault, env, qs), "mcp": mcp_calls(vault, env, qs)}
        results["sizes"].append(row)
        print(json.dumps(row), flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1), encoding="utf-8")
    print("\n| memories | `recall --json` CLI | MCP `memory_recall` | MCP `memory_search` |\n|---:|---:|---:|---:|")
    for r in results["sizes"]:
        m = r["mcp"]
        print(f"| {r['size']:,} | {r['recall_cli']['p50']} / {r['recall_cli']['p95']} (CPU {r['recall_cli']['cpu_p50']}) | "
              f"{m['memory_recall']['p50']} / {m['memory_recall']['p95']} | {m['memory_search']['p50']} / {m['memory_search']['p95']} |")
    print(f"\nmachine: {results['machine']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
