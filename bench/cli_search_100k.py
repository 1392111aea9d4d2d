"""CLI search in a large vault through the warm background server: one `memrepo search --json`
process per call, as an agent's tool call runs it.

    .venv/bin/python bench/cli_search_100k.py VAULT [--memrepo .venv/bin/memrepo] [--agents 40]

VAULT is an existing vault (e.g. a copy of ``bench/agents.py``'s 100,000-memory vault with its
vectors built). The first call starts the server (reported apart); then two kinds of query,
wall time per call: **common words** (each term in 12-24 % of the synthetic corpus's memories,
English and Chinese, 3 rounds) and **agent queries** (the first three words of a random
memory's summary, as ``bench/agents.py`` makes them; seeded).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time

COMMON = ["deploy rollback", "release pipeline", "database migration", "cache latency", "payment refund",
          "部署 回滚", "数据库 迁移", "缓存 延迟"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("vault")
    ap.add_argument("--memrepo", default=os.path.join(os.path.dirname(sys.executable), "memrepo"))
    ap.add_argument("--agents", type=int, default=40)
    args = ap.parse_args()
    env = dict(os.environ)
    env.pop("MEMREPO_DAEMON", None)  # the server on, as installed

    def call(query: str) -> tuple[float, dict]:
        start = time.perf_counter()
        run = subprocess.run([args.memrepo, "--vault", args.vault, "search", "--json", query],
                             env=env, capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"memrepo search {query!r} failed: {run.stderr.strip()}")
        return 1000 * (time.perf_counter() - start), json.loads(run.stdout)

    listed = subprocess.run([args.memrepo, "--vault", args.vault, "list", "--json"], env=env,
                            capture_output=True, text=True, check=True)
    rows = json.loads(listed.stdout)
    rng = random.Random(11)
    agents = []
    for row in rng.sample(rows, min(args.agents + 3, len(rows))):
        words = [w for w in row["summary"].split() if len(w) > 2] or [row["summary"][:6]]
        agents.append(" ".join(words[:3]))
    first, _ = call("warm up")
    print(f"first call (starts the server): {first:.0f} ms")
    for query in agents[:3]:
        call(query)
    for name, queries in (("common words", COMMON * 3), ("agent queries", agents[3:])):
        walls, out = [], {}
        for query in queries:
            wall, out = call(query)
            walls.append(wall)
        walls.sort()
        print(f"{name}: n {len(walls)}, wall p50 {statistics.median(walls):.0f} ms, "
              f"p95 {walls[int(0.95 * len(walls))]:.0f}, min {walls[0]:.0f}, max {walls[-1]:.0f}, "
              f"semantic {out.get('semantic')}")


if __name__ == "__main__":
    main()
