"""Agent-facing latency: ``memrepo recall`` as a hook calls it, and MCP tool calls on a warm server.

    .venv/bin/python bench/agents.py [--sizes 10000,100000] [--runs 40] [--synth ../shared/bench/synth.py]
        [--workdir DIR] [--reuse] [--semantic] [--no-cli] [--json-out FILE]

For each size: a vault of synthetic memories (the kit's ``synth.py``, read at run time, never
copied here) made with ``memrepo init`` + ``memrepo import`` + ``memrepo reindex --wait``; then

* **recall CLI**: ``memrepo recall --json QUERY``, one process per call (start-up, git sync and
  the search included), as a ``UserPromptSubmit`` hook runs it;
* **MCP**: one ``memrepo mcp`` subprocess driven over stdio by the mcp SDK's client;
  ``memory_recall`` and ``memory_search`` calls timed at the client (JSON-RPC over pipes
  included), after warm-up calls; the server's own CPU per call is read from /proc;
* **in-process**: ``api.recall`` and ``api.search`` on one open vault, as a long-lived agent
  runtime embedding memrepo calls them (wall and ``time.process_time``).

Queries are three words of a random memory's summary. Figures: wall and CPU p50 / p95 in ms,
with the load average around each part (the machine may be shared: CPU is the cost, wall is
what an agent waits). Keyword-only unless ``--semantic`` (MEMREPO_SEMANTIC=0 otherwise).
``--workdir DIR --reuse`` keeps each size's vault in DIR and measures an existing one as it is
(an import of 100,000 memories takes minutes).

The synthetic memories come from the benchmark kit's generator (``synth.py``, deterministic,
~30 % Chinese; read at run time from ``../shared/bench`` beside the project, never copied, not
part of this repository). When it is absent the bench says where it looked and stops: pass
``--synth PATH`` or set ``MEMREPO_SYNTH``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

# bench/secrets.py would shadow the standard library's secrets module (the mcp SDK imports it):
# this folder goes to the end of the path, after the standard library
_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE] + [str(_HERE)]
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


def _cpu_of(pid: int) -> float:
    """CPU ms (user + system) a process and its waited-for children (git) have used so far, from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) * 1000 / os.sysconf("SC_CLK_TCK")


def _server_pid(marker: str) -> int | None:
    """The ``memrepo mcp`` process this bench started (a child whose command line has ``marker``)."""
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                if marker in Path(f"/proc/{pid}/cmdline").read_bytes().decode("utf-8", "replace"):
                    return int(pid)
            except OSError:
                continue
    return None


def mcp_calls(vault: Path, env: dict[str, str], qs: list[str]) -> dict:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    cmd = memrepo_cmd()
    params = StdioServerParameters(command=cmd[0], args=cmd[1:] + ["mcp", "--vault", str(vault)], env=env)

    async def session() -> dict:
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as client:
                await client.initialize()
                pid = _server_pid(str(vault))
                out = {}
                for tool, key in (("memory_recall", "text"), ("memory_search", "query")):
                    samples = []
                    for i, q in enumerate(qs):
                        c0 = _cpu_of(pid) if pid else 0.0
                        t0 = time.perf_counter()
                        result = await client.call_tool(tool, {key: q})
                        wall = (time.perf_counter() - t0) * 1000
                        cpu = (_cpu_of(pid) - c0) if pid else 0.0
                        if result.isError:
                            raise SystemExit(f"bench: {tool} failed: {result.content[0].text}")
                        if i >= 3:
                            samples.append((wall, cpu))
                    # /proc counts CPU in 10 ms ticks: the mean over all calls is the precise figure
                    out[tool] = {**stats(samples), "cpu_mean": round(sum(c for _, c in samples) / len(samples), 1)}
                return out
    return asyncio.run(session())


IN_PROCESS = """
import json, sys, time
sys.path.append(sys.argv[3])
from write_path import stats
from memrepo import api
vault = api.Vault.find(explicit=sys.argv[1])
qs = json.loads(open(sys.argv[2], encoding="utf-8").read())
out = {}
for name, call in (("recall", lambda q: api.recall(vault, q)), ("search", lambda q: api.search(vault, q))):
    samples = []
    for i, q in enumerate(qs):
        t0, c0 = time.perf_counter(), time.process_time()
        call(q)
        if i >= 3:
            samples.append(((time.perf_counter() - t0) * 1000, (time.process_time() - c0) * 1000))
    out[name] = stats(samples)
print(json.dumps(out))
"""


def in_process(vault: Path, env: dict[str, str], qs: list[str], work: Path) -> dict:
    """``api.recall`` / ``api.search`` in one fresh process with one open vault."""
    qfile = work / "queries.json"
    qfile.write_text(json.dumps(qs), encoding="utf-8")
    return json.loads(run([sys.executable, "-c", IN_PROCESS, str(vault), str(qfile), str(Path(__file__).resolve().parent)],
                          env))


def load() -> float:
    return round(os.getloadavg()[0], 2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--synth", default=DEFAULT_SYNTH)
    ap.add_argument("--workdir", default=None)
    ap.add_argument("--reuse", action="store_true", help="measure the vault already in --workdir (no import)")
    ap.add_argument("--semantic", action="store_true", help="hybrid ranking (the vectors are built first)")
    ap.add_argument("--no-cli", action="store_true", help="skip the one-process-per-call recall")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args(argv)
    work = Path(args.workdir or tempfile.mkdtemp(prefix="memrepo-bench-agents-"))
    work.mkdir(parents=True, exist_ok=True)
    env = bench_env(work)
    env["MEMREPO_SEMANTIC"] = "1" if args.semantic else "0"
    # as installed: modules load from bytecode (cached outside the source tree)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    results: dict = {"machine": machine(), "semantic": args.semantic, "sizes": []}
    for size in [int(s) for s in args.sizes.split(",")]:
        vault = work / f"vault-{size}"
        if args.reuse and (vault / ".memrepo").is_dir():
            imported: dict = {"reused": True}
        else:
            vault, imported = build_vault(work, size, args.synth, env)
            run(memrepo_cmd() + ["--vault", str(vault), "reindex", "--wait"], env)
        qs = queries(vault, env, args.runs + 3)
        row: dict = {"size": size, "import": imported, "semantic": args.semantic, "load": {"start": load()}}
        if not args.no_cli:
            row["recall_cli"] = recall_cli(vault, env, qs)
        row["load"]["mcp"] = load()
        row["mcp"] = mcp_calls(vault, env, qs)
        row["load"]["in_process"] = load()
        row["in_process"] = in_process(vault, env, qs, work)
        row["load"]["end"] = load()
        results["sizes"].append(row)
        print(json.dumps(row), flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(results, indent=1), encoding="utf-8")
    print("\nWall p50 / p95 ms (CPU p50 / p95 ms; for the MCP server the CPU mean per call)\n")
    print("| memories | `recall --json` CLI | MCP `memory_recall` | MCP `memory_search` | in-process `api.recall` "
          "| in-process `api.search` | load |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for r in results["sizes"]:
        m, ip, ld = r["mcp"], r["in_process"], r["load"]
        print(f"| {r['size']:,} | {_cell(r.get('recall_cli'))} | {_cell(m['memory_recall'])} | {_cell(m['memory_search'])} | "
              f"{_cell(ip['recall'])} | {_cell(ip['search'])} | {ld['start']}-{ld['end']} |")
    print(f"\nmachine: {results['machine']}; semantic: {args.semantic}")
    return 0


def _cell(st: dict | None) -> str:
    if not st:
        return "-"
    cpu = f"mean {st['cpu_mean']}" if "cpu_mean" in st else f"{st['cpu_p50']} / {st['cpu_p95']}"
    return f"{st['p50']} / {st['p95']} ({cpu})"


if __name__ == "__main__":
    raise SystemExit(main())
