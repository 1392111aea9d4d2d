#!/usr/bin/env python3
"""The person's window: server time of its pages on large vaults.

  .venv/bin/python bench/ui.py [--memories 10000] [--proposals 200] [--runs 30] [--out bench/out/ui.json]

Builds two vaults in a temporary folder from synthetic memories this script writes itself
(English and Chinese summaries, fact keys, links between neighbours): one of ``--memories``
memories imported in one commit, one with ``--proposals`` open proposals (high-risk
constraints, one commit each). The app ``memrepo ui`` serves is driven in-process through
Starlette's test client with the session cookie and the bound Host, so each figure is the
server's time for the whole request: opening the vault, the api calls, rendering.

* **inbox** with ``--proposals`` open proposals (target: p50 <= 150 ms);
* **memory page** (body, history, why, citations, neighbours) at ``--memories`` (target: p50 <= 100 ms);
* **search page** against ``api.search`` for the same queries on the same vault, both warm
  (target: the page within 30 ms of the search it shows).

Keyword search (MEMREPO_SEMANTIC=0) unless ``--semantic``: the comparison is page vs api either way.
After ``--warmups`` untimed requests per page, ``--runs`` timed ones; prints median and p95 (ms) of
the wall time and of the CPU time (this process's threads plus the git processes it waited for:
the figure that does not grow with other work on a shared machine).
"""
from __future__ import annotations

import sys
from pathlib import Path

# bench/ holds a secrets.py of its own: keep it from shadowing the standard library's
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

WORDS = ["deploy", "release", "cache", "database", "pool", "timeout", "retry", "owner", "theme", "review", "policy",
         "backup", "latency", "quota", "region", "token", "index", "budget", "alert", "schema"]
ZH = ["数据库", "连接池", "发布", "缓存", "超时", "重试", "负责人", "界面", "审阅", "策略", "备份", "延迟", "配额", "区域", "索引"]
QUERIES = ["database pool timeout", "数据库 连接池", "who owns the release", "缓存 超时 重试", "alert budget",
           "deploy region policy", "备份 策略", "schema index latency", "界面 主题", "quota token"]


def memories(n: int, seed: int = 7):
    rng = random.Random(seed)
    for i in range(n):
        words = rng.sample(WORDS, 4)
        zh = rng.sample(ZH, 3)
        subject = f"project-{i % 200:03d}"
        record = {"id": f"bm_{i:06d}", "subject": subject, "kind": "knowledge",
                  "summary": f"{' '.join(words[:3])} {''.join(zh[:2])} #{i}",
                  "body": f"## What\n{' '.join(words)} for {subject}.\n\n## Why\n{''.join(zh)}，见 [[bm_{max(i - 1, 0):06d}]]。\n",
                  "created": f"2026-{1 + i % 11:02d}-{1 + i % 28:02d}T09:{i % 60:02d}:00+00:00"}
        if i % 5 == 0:
            record["fact"] = f"fact.{i}"
        if i % 3 == 0 and i > 10:
            record["links"] = [f"bm_{i - 7:06d}", f"bm_{i - 11:06d}"]
        yield record


def machine() -> dict[str, str]:
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout.strip()
    return {"nproc": str(os.cpu_count()), "python": platform.python_version(), "platform": platform.platform(),
            "loadavg_at_start": " ".join(f"{x:.2f}" for x in os.getloadavg()), "memrepo_commit": commit}


def cpu_ms() -> float:
    """CPU time of this process (all threads) and of the git processes it waited for."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime) * 1000


def timed_get(client, path: str) -> tuple[float, float]:
    """(wall, CPU) milliseconds of one request."""
    start, cpu = time.perf_counter(), cpu_ms()
    response = client.get(path)
    elapsed, used = (time.perf_counter() - start) * 1000, cpu_ms() - cpu
    if response.status_code != 200:
        raise SystemExit(f"bench: GET {path} answered {response.status_code}: {response.text[:300]}")
    return elapsed, used


def timed_call(fn) -> tuple[float, float]:
    start, cpu = time.perf_counter(), cpu_ms()
    fn()
    return (time.perf_counter() - start) * 1000, cpu_ms() - cpu


def summary(samples: list[tuple[float, float]]) -> dict[str, float]:
    def q(xs: list[float]) -> tuple[float, float]:
        xs = sorted(xs)
        return round(statistics.median(xs), 1), round(xs[max(int(len(xs) * 0.95) - 1, 0)], 1)
    (wall, wall95), (cpu, cpu95) = q([w for w, _ in samples]), q([c for _, c in samples])
    return {"median_ms": wall, "p95_ms": wall95, "cpu_median_ms": cpu, "cpu_p95_ms": cpu95, "runs": len(samples)}


def client_for(root: Path):
    from starlette.testclient import TestClient

    from memrepo.ui.security import Guard
    from memrepo.ui.server import make_app
    guard = Guard(host="127.0.0.1", port=8765)
    client = TestClient(make_app(root, guard), base_url="http://127.0.0.1:8765")
    client.cookies.set(guard.cookie_name, guard.token)
    return client


def build_large(work: Path, n: int) -> Path:
    from memrepo import api
    root = work / f"vault-{n}"
    data = work / f"memories-{n}.jsonl"
    data.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in memories(n)), encoding="utf-8")
    with api.init(root) as vault:
        api.import_jsonl(vault, data)
    return root


def build_inbox(work: Path, n: int) -> Path:
    from memrepo import api
    from memrepo.review import writes
    root = work / f"vault-proposals-{n}"
    with api.init(root) as vault:
        for i in range(n):
            writes.add(vault, {"id": f"bp_{i:04d}", "subject": f"team-{i % 20}", "fact": f"rule.{i}", "kind": "constraint",
                               "summary": f"never deploy service {i} on Fridays", "evidence": [f"ops/runbook.md#L{i}"]},
                       f"Policy {i}: no deploys on Fridays.\n")
        assert len(api.list_proposals(vault)) == n
    return root


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memories", type=int, default=10_000)
    ap.add_argument("--proposals", type=int, default=200)
    ap.add_argument("--runs", type=int, default=30)
    ap.add_argument("--warmups", type=int, default=3)
    ap.add_argument("--semantic", action="store_true", help="hybrid search (loads the embedding model)")
    ap.add_argument("--out", type=Path, default=Path("bench/out/ui.json"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="memrepo-bench-ui-"))
    os.environ.update(HOME=str(work), GIT_CONFIG_GLOBAL=str(work / "gitconfig"), GIT_CONFIG_NOSYSTEM="1",
                      MEMREPO_DAEMON="0", MEMREPO_SEMANTIC="1" if args.semantic else "0")
    (work / "gitconfig").write_text("[user]\n\tname = Bench Person\n\temail = bench@example.invalid\n", encoding="utf-8")
    from memrepo import api
    result: dict = {"machine": machine(), "args": vars(args) | {"out": str(args.out)},
                    "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    t0 = time.perf_counter()
    inbox_root = build_inbox(work, args.proposals)
    large = build_large(work, args.memories)
    result["build_seconds"] = round(time.perf_counter() - t0, 1)

    client = client_for(inbox_root)
    for _ in range(args.warmups):
        timed_get(client, "/")
    result["inbox"] = summary([timed_get(client, "/") for _ in range(args.runs)])

    client = client_for(large)
    rng = random.Random(11)
    ids = [f"bm_{rng.randrange(args.memories):06d}" for _ in range(args.runs + args.warmups)]
    for memory_id in ids[:args.warmups]:
        timed_get(client, f"/memory/{memory_id}")
    result["memory_page"] = summary([timed_get(client, f"/memory/{i}") for i in ids[args.warmups:]])
    timed_get(client, "/memories")
    result["memories_list"] = summary([timed_get(client, f"/memories?offset={rng.randrange(args.memories // 50) * 50}")
                                       for _ in range(args.runs)])

    queries = [QUERIES[k % len(QUERIES)] for k in range(args.runs)]
    with api.Vault.find(explicit=large) as vault:
        for q in QUERIES[:args.warmups]:
            api.search(vault, q, limit=50)
        direct = [timed_call(lambda q=q: api.search(vault, q, limit=50)) for q in queries]
    for q in QUERIES[:args.warmups]:
        timed_get(client, f"/memories?q={q}")
    page = [timed_get(client, f"/memories?q={q}") for q in queries]
    result["api_search"] = summary(direct)
    result["search_page"] = summary(page)
    result["search_page_over_api_ms"] = round(result["search_page"]["median_ms"] - result["api_search"]["median_ms"], 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    for key in ("inbox", "memory_page", "memories_list", "api_search", "search_page"):
        r = result[key]
        print(f"{key:14} median {r['median_ms']:7.1f} ms   p95 {r['p95_ms']:7.1f} ms   "
              f"CPU median {r['cpu_median_ms']:7.1f} ms   p95 {r['cpu_p95_ms']:7.1f} ms")
    print(f"search page over api.search: {result['search_page_over_api_ms']} ms (median)")
    print(f"build {result['build_seconds']} s; load average at start {result['machine']['loadavg_at_start']}; -> {args.out}")


if __name__ == "__main__":
    main()
